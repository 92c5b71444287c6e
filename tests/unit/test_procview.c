/* Tests for coordinator/cli/procview.c: a live process is described with
 * its state, age and command line, and the processes it started under it
 * (what `kfleet run` prints of an agent that never registered); a process
 * that is gone is not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cli/procview.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A child that starts `sleep 30` under `sh -c` and waits for it. */
static pid_t start_tree(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        execl("/bin/sh", "sh", "-c", "sleep 30; echo procview-test-marker", (char *)NULL);
        _exit(127);
    }
    return pid;
}

static void test_tree(void **state)
{
    (void)state;
    pid_t pid = start_tree();
    assert_true(pid > 0);
    kf_buf out = KF_BUF_INIT;
    /* Until the shell has started its sleep. */
    for (int i = 0; i < 200; i++) {
        kf_buf_reset(&out);
        assert_int_equal(kf_procview_describe(pid, "  ", &out), 0);
        if (strstr(out.data, "sleep 30\n"))
            break;
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    char want[128];
    snprintf(want, sizeof want, "  pid %ld, state ", (long)pid);
    assert_non_null(out.data);
    assert_ptr_equal(strstr(out.data, want), out.data);
    assert_non_null(strstr(out.data, " s ago"));
    assert_non_null(strstr(out.data, ": sh -c sleep 30; echo procview-test-marker\n"));
    /* The child, indented one level under its parent. */
    const char *kid = strstr(out.data, "\n    pid ");
    assert_non_null(kid);
    assert_non_null(strstr(kid, ": sleep 30\n"));
    kf_buf_release(&out);

    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
    kf_buf more = KF_BUF_INIT;
    assert_int_equal(kf_procview_describe(pid, "  ", &more), -1);
    assert_int_equal(more.len, 0);
    assert_int_equal(kf_procview_describe(-1, "  ", &more), -1);
    kf_buf_release(&more);
}

/* A command line is shown up to its first newline (a `python3 -c`
 * source) and made inert (no control bytes reach the terminal). */
static void test_cmdline_cut(void **state)
{
    (void)state;
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        execl("/bin/sh", "sh", "-c", "sleep 30 # first line\nsecond line \x1b[2J", (char *)NULL);
        _exit(127);
    }
    assert_true(pid > 0);
    kf_buf out = KF_BUF_INIT;
    for (int i = 0; i < 200; i++) {
        kf_buf_reset(&out);
        if (kf_procview_describe(pid, "", &out) == 0 && strstr(out.data, "first line"))
            break;
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    assert_non_null(out.data);
    assert_non_null(strstr(out.data, ": sh -c sleep 30 # first line\n"));
    assert_null(strstr(out.data, "second line"));
    assert_null(strchr(out.data, '\x1b'));
    kf_buf_release(&out);
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tree),
        cmocka_unit_test(test_cmdline_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
