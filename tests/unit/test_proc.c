/* Tests for agent/runner/proc.c: a node tool's output is captured up to a
 * cap, and one that outlives its limit is killed and reported as such
 * (the agent's torch probe must not hang its start). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "runner/proc.h"

#include <string.h>
#include <sys/wait.h>

static void test_capture(void **state)
{
    (void)state;
    kf_buf out = KF_BUF_INIT;
    char *argv[] = {"sh", "-c", "echo hello; echo oops >&2; exit 3", NULL};
    int st = kf_proc_capture(argv, &out, 1 << 10);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 3);
    assert_string_equal(out.data, "hello\noops\n");
    kf_buf_release(&out);

    /* Only `cap` bytes are kept; the tool still runs to its end. */
    char *big[] = {"sh", "-c", "i=0; while [ $i -lt 1000 ]; do echo 0123456789; i=$((i+1)); done",
                   NULL};
    st = kf_proc_capture_limit(big, &out, 100, 30.0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(out.len, 100);
    kf_buf_release(&out);
}

static void test_limit(void **state)
{
    (void)state;
    kf_buf out = KF_BUF_INIT;
    /* Prints, then would sleep far past the limit: killed, -2, the output
     * it gave kept. */
    char *argv[] = {"sh", "-c", "echo started; exec sleep 600", NULL};
    assert_int_equal(kf_proc_capture_limit(argv, &out, 1 << 10, 0.3), -2);
    assert_string_equal(out.data, "started\n");
    kf_buf_release(&out);

    char *missing[] = {"/nonexistent/tool", NULL};
    int st = kf_proc_capture_limit(missing, &out, 1 << 10, 5.0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 127);
    assert_non_null(strstr(out.data, "cannot run /nonexistent/tool"));
    kf_buf_release(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capture),
        cmocka_unit_test(test_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
