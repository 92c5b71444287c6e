/* test_ending — why a runner ended without its Result (agent/ending.c):
 * kfleet names what it did itself, names the out-of-memory killer only when
 * the node or the runner's own control group counted an OOM kill while the
 * runner ran (then the kernel's verdict, not tried again), and otherwise
 * calls an outside SIGKILL the node's fault, tried again; the group's
 * limits that acted are named beside any reason. */
#include "agent/ending.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* wait(2) statuses as the kernel encodes them. */
#define KILLED(sig) (sig)
#define EXITED(code) ((code) << 8)

static void explain(const krunner *r, uint64_t oom_now, char *why, size_t len, int *state,
                    int *infra)
{
    ending_explain(r, oom_now, "last log line", why, len, state, infra);
}

static void test_kfleet_says_what_it_did(void **st)
{
    (void)st;
    krunner r = {0};
    char why[1024];
    int state, infra;
    r.status = KILLED(SIGKILL);
    snprintf(r.killed_why, sizeof r.killed_why, "kfleet killed the runner: a bad frame");
    explain(&r, 0, why, sizeof why, &state, &infra);
    assert_string_equal(why, "kfleet killed the runner: a bad frame");
    assert_int_equal(state, KFLEET__TASK_STATE__FAILED);
    assert_int_equal(infra, 0);
    /* Killed by kfleet for the node's fault (a held task whose GPU's last
     * runner never went): failed, and tried again. */
    r.infra_kill = 1;
    explain(&r, 0, why, sizeof why, &state, &infra);
    assert_int_equal(state, KFLEET__TASK_STATE__FAILED);
    assert_int_equal(infra, 1);
    r.infra_kill = 0;

    r.killed_why[0] = '\0';
    r.timed_out = 1;
    r.limit_s = 3;
    explain(&r, 0, why, sizeof why, &state, &infra);
    assert_int_equal(state, KFLEET__TASK_STATE__TIMED_OUT);
    assert_int_equal(infra, 0);
    assert_non_null(strstr(why, "limit of 3.0 s"));
}

static void test_oom_only_with_evidence(void **st)
{
    (void)st;
    krunner r = {0};
    char why[1024];
    int state, infra;
    r.status = KILLED(SIGKILL);
    r.oom_kills0 = 7;
    r.maxrss_kb = 3 << 20; /* 3 GiB */
    explain(&r, 8, why, sizeof why, &state, &infra);
    assert_int_equal(state, KFLEET__TASK_STATE__FAILED);
    assert_int_equal(infra, 0);
    assert_non_null(strstr(why, "killed by the out-of-memory killer"));
    assert_non_null(strstr(why, "rose from 7 to 8"));
    assert_non_null(strstr(why, "peak: 3.00 GiB"));

    /* No OOM kill counted: someone else's signal, tried again. */
    explain(&r, 7, why, sizeof why, &state, &infra);
    assert_int_equal(infra, 1);
    assert_null(strstr(why, "killed by the out-of-memory killer"));
    assert_non_null(strstr(why, "from outside kfleet"));
    assert_non_null(strstr(why, "last log line"));

    /* A kernel that does not count them: no evidence either. */
    r.oom_kills0 = UINT64_MAX;
    explain(&r, UINT64_MAX, why, sizeof why, &state, &infra);
    assert_int_equal(infra, 1);
    assert_null(strstr(why, "killed by the out-of-memory killer"));
}

/* The runner's own control group counted the kill (issue 44): the kernel
 * met its memory limit, said as such and not tried again, whatever the
 * node's counter says; its group at its limit while the node counted one
 * (a v1 kernel without per-group counts) is the same evidence. */
static void test_oom_in_its_own_group(void **st)
{
    (void)st;
    krunner r = {0};
    char why[1024];
    int state, infra;
    r.status = KILLED(SIGKILL);
    r.oom_kills0 = 7;
    r.cg_memory_max = (uint64_t)3 << 29; /* 1.5 GiB */
    r.cg_oom_kills = 1;
    explain(&r, 7, why, sizeof why, &state, &infra);
    assert_int_equal(state, KFLEET__TASK_STATE__FAILED);
    assert_int_equal(infra, 0);
    assert_non_null(strstr(why, "the kernel used more than 1.50 GiB, its runner's memory limit"));
    assert_non_null(strstr(why, "not tried again"));

    r.cg_oom_kills = 0;
    r.cg_memory_hits = 12;
    explain(&r, 8, why, sizeof why, &state, &infra);
    assert_int_equal(infra, 0);
    assert_non_null(strstr(why, "used more than 1.50 GiB"));
    /* At its limit but nobody killed: not the OOM killer's doing. */
    explain(&r, 7, why, sizeof why, &state, &infra);
    assert_int_equal(infra, 1);
    assert_null(strstr(why, "used more than"));
}

/* Forks refused at the group's process limit, and a child killed for
 * memory, are added to the reason the task ended for. */
static void test_limits_named(void **st)
{
    (void)st;
    krunner r = {0};
    char why[1024];
    int state, infra;
    r.status = KILLED(SIGKILL);
    r.timed_out = 1;
    r.limit_s = 10;
    r.cg_pids_max = 256;
    r.cg_pids_refused = 4242;
    explain(&r, 0, why, sizeof why, &state, &infra);
    assert_int_equal(state, KFLEET__TASK_STATE__TIMED_OUT);
    assert_non_null(strstr(why, "limit of 10.0 s"));
    assert_non_null(strstr(why, "its processes reached the runner's limit of 256 processes and "
                                "threads (forks refused 4242 times)"));
    r.timed_out = 0;
    r.cg_pids_refused = 0;
    r.status = KILLED(SIGSEGV);
    r.cg_oom_kills = 2;
    r.cg_memory_max = (uint64_t)1 << 30;
    explain(&r, 0, why, sizeof why, &state, &infra);
    assert_non_null(strstr(why, "signal 11"));
    assert_non_null(strstr(why, "killed 2 processes in the runner's group at its memory limit "
                                "of 1.00 GiB"));
}

static void test_crash_and_exit(void **st)
{
    (void)st;
    krunner r = {0};
    char why[1024];
    int state, infra;
    r.status = KILLED(SIGSEGV);
    explain(&r, 0, why, sizeof why, &state, &infra);
    assert_int_equal(infra, 0);
    assert_non_null(strstr(why, "the kernel crashed: runner killed by signal 11"));
    r.status = EXITED(127);
    explain(&r, 0, why, sizeof why, &state, &infra);
    assert_int_equal(infra, 1);
    assert_non_null(strstr(why, "could not start"));
    r.status = EXITED(3);
    explain(&r, 0, why, sizeof why, &state, &infra);
    assert_int_equal(infra, 0);
    assert_non_null(strstr(why, "status 3 without a result"));
}

static void test_oom_count_read(void **st)
{
    (void)st;
    /* Every Linux since 4.13 counts them; this machine's does. */
    assert_true(ending_oom_kills() != UINT64_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kfleet_says_what_it_did),
        cmocka_unit_test(test_oom_only_with_evidence),
        cmocka_unit_test(test_oom_in_its_own_group),
        cmocka_unit_test(test_limits_named),
        cmocka_unit_test(test_crash_and_exit),
        cmocka_unit_test(test_oom_count_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
