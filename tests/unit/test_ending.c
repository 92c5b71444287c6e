/* test_ending — why a runner ended without its Result (agent/ending.c):
 * kfleet names what it did itself, names the out-of-memory killer only when
 * the node counted an OOM kill while the runner ran (then the kernel's
 * verdict, not tried again), and otherwise calls an outside SIGKILL the
 * node's fault, tried again. */
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
        cmocka_unit_test(test_crash_and_exit),
        cmocka_unit_test(test_oom_count_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
