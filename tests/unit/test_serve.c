/* Tests for agent/serve.c's held first task: a serving runner started on a
 * GPU whose last runner is still on its way out (killed, its CUDA context
 * being torn down) gets its task only once that one is gone; on another
 * GPU at once; the frame it gets is the task; one whose socket is gone
 * is killed with why; and one still held past its task's limit is killed
 * as the node's fault. Real sockets and a real process group. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "agent/serve.h"
#include "common/util.h"
#include "common/wire.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct fixture {
    kf_agent *a;
    krunner *old, *held;
    int peer; /* the held runner's end of its task socket */
    Kfleet__TaskSpec spec;
    Kfleet__TaskAssign ta;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->a = calloc(1, sizeof *f->a);
    kf_buf_init(&f->a->scratch);
    f->old = calloc(1, sizeof *f->old);
    f->held = calloc(1, sizeof *f->held);
    /* The runner leaving: killed for another kernel, not yet reaped. */
    f->old->gpu = 1;
    f->old->gpu_index = 0;
    f->old->retiring = 1;
    f->old->pidfd = -1;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    f->held->in_fd = sv[0];
    f->peer = sv[1];
    f->held->gpu = 1;
    f->held->gpu_index = 0;
    f->held->pid = -1;
    f->held->pidfd = -1;
    f->held->limit_s = 60; /* its limit runs from its start (runners.c begin_task) */
    f->held->deadline_mono = kf_mono_ns() + 60000000000ull;
    kf_buf_init(&f->held->held);
    kfleet__task_spec__init(&f->spec);
    f->spec.kind = KFLEET__TASK_KIND__VALIDATE;
    f->spec.kernel = "tri007";
    f->spec.kernel_hash = "abc123";
    f->spec.device_cuda = 1;
    kfleet__task_assign__init(&f->ta);
    f->ta.task_id = 0x100000013;
    f->ta.attempt = 2;
    f->ta.gpu_index = 0;
    f->ta.spec = &f->spec;
    f->a->runners[0] = f->old;
    f->a->runners[1] = f->held;
    f->a->nrunners = 2;
    serve_frame(f->a, f->held, &f->ta, &f->held->held);
    f->held->holding = 1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    close(f->held->in_fd);
    if (f->peer >= 0)
        close(f->peer);
    kf_buf_release(&f->held->held);
    kf_buf_release(&f->a->scratch);
    free(f->old);
    free(f->held);
    free(f->a);
    free(f);
    return 0;
}

/* What waits on the runner's end now, without waiting: bytes, or 0. */
static ssize_t waiting(int fd, uint8_t *buf, size_t len)
{
    ssize_t n = recv(fd, buf, len, MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : n;
}

/* A child in a process group of its own, waiting for a signal: a
 * runner's group as kill(-pid) finds it. */
static pid_t paused_group(void)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        pause();
        _exit(0);
    }
    setpgid(pid, pid);
    return pid;
}

static void test_held_until_the_gpus_runner_is_gone(void **state)
{
    fixture *f = *state;
    uint8_t buf[4096];
    assert_true(serve_gpu_retiring(f->a, 0));
    assert_false(serve_gpu_retiring(f->a, 1));
    serve_hand_held(f->a);
    assert_int_equal(waiting(f->peer, buf, sizeof buf), 0);
    assert_true(f->held->holding);

    f->a->nrunners = 1; /* reaped: finish_runner took its entry */
    f->a->runners[0] = f->held;
    assert_false(serve_gpu_retiring(f->a, 0));
    /* Its time limit ran while it held the task (an old runner slow to be
     * reaped): the task's own limit starts when it is handed. */
    f->held->limit_s = 60;
    f->held->deadline_mono = kf_mono_ns() - 1;
    uint64_t before = kf_mono_ns();
    serve_hand_held(f->a);
    assert_true(f->held->deadline_mono >= before + 60000000000ull);
    assert_false(f->held->holding);
    assert_int_equal(f->held->held.len, 0);
    ssize_t n = waiting(f->peer, buf, sizeof buf);
    assert_true(n > 4);
    assert_int_equal(kf_frame_len_get(buf), (uint32_t)n - 4);
    Kfleet__TaskAssign *got = kfleet__task_assign__unpack(NULL, (size_t)n - 4, buf + 4);
    assert_non_null(got);
    assert_int_equal(got->task_id, f->ta.task_id);
    assert_int_equal(got->attempt, 2);
    assert_string_equal(got->spec->kernel, "tri007");
    kfleet__task_assign__free_unpacked(got, NULL);
    /* Handed once: a later turn sends nothing more. */
    serve_hand_held(f->a);
    assert_int_equal(waiting(f->peer, buf, sizeof buf), 0);
}

static void test_another_gpus_runner_is_handed_at_once(void **state)
{
    fixture *f = *state;
    uint8_t buf[4096];
    f->held->gpu_index = 1; /* the one leaving is on GPU 0 */
    serve_hand_held(f->a);
    assert_false(f->held->holding);
    assert_true(waiting(f->peer, buf, sizeof buf) > 4);
}

static void test_a_runner_that_cannot_take_it_is_killed(void **state)
{
    fixture *f = *state;
    signal(SIGPIPE, SIG_IGN); /* as the agent does (common/signals.c) */
    close(f->peer);           /* the runner's end gone (before the fork: no copy in it) */
    f->peer = -1;
    pid_t pid = paused_group();
    f->held->pid = pid;
    f->a->nrunners = 1;
    f->a->runners[0] = f->held;
    serve_hand_held(f->a);
    assert_false(f->held->holding);
    assert_non_null(strstr(f->held->killed_why, "cannot hand the task to runner"));
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGKILL);
}

/* The GPU's last runner still not gone when the held task's limit has
 * passed: the held runner is killed, its task never started, as the
 * node's fault (tried again), not as a time-out of its kernel; nothing is
 * sent to it. Within the limit it keeps waiting. */
static void test_a_hold_past_the_limit_is_the_nodes_fault(void **state)
{
    fixture *f = *state;
    uint8_t buf[4096];
    pid_t pid = paused_group();
    f->held->pid = pid;
    f->held->limit_s = 60;
    f->held->deadline_mono = kf_mono_ns() + 60000000000ull;
    serve_hand_held(f->a);
    assert_true(f->held->holding);
    assert_int_equal(f->held->killed_why[0], 0);

    f->held->deadline_mono = kf_mono_ns() - 1; /* the old runner outlived it */
    serve_hand_held(f->a);
    assert_false(f->held->holding);
    assert_int_equal(f->held->held.len, 0);
    assert_true(f->held->infra_kill);
    assert_non_null(strstr(f->held->killed_why, "this task never started"));
    assert_false(f->held->timed_out);
    assert_int_equal(waiting(f->peer, buf, sizeof buf), 0);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGKILL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_held_until_the_gpus_runner_is_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_another_gpus_runner_is_handed_at_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_runner_that_cannot_take_it_is_killed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_hold_past_the_limit_is_the_nodes_fault, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
