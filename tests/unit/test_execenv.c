/* Tests for common/execenv.c: a child's environment made from a copy of
 * this process's (set, default, unset, unset by prefix) reaches an exec'd
 * program as made, while this process's own stays as it was; a failed
 * exec's line is written whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/execenv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_changes_stay_in_the_copy(void **state)
{
    (void)state;
    setenv("KF_T_KEEP", "kept", 1);
    setenv("KF_T_OVER", "old", 1);
    setenv("KFLEET_T_A", "a", 1);
    setenv("KFLEET_T_B", "b", 1);
    unsetenv("KF_T_NEW");
    kf_execenv *e = kf_execenv_new();
    assert_string_equal(kf_execenv_get(e, "KF_T_KEEP"), "kept");
    kf_execenv_set(e, "KF_T_OVER", "new");
    kf_execenv_set(e, "KF_T_NEW", "x=y"); /* a value may hold '=' */
    kf_execenv_default(e, "KF_T_KEEP", "not this");
    kf_execenv_default(e, "KF_T_DEF", "this");
    kf_execenv_unset_prefix(e, "KFLEET_T_");
    kf_execenv_unset(e, "KF_T_NOT_THERE");
    assert_string_equal(kf_execenv_get(e, "KF_T_OVER"), "new");
    assert_string_equal(kf_execenv_get(e, "KF_T_NEW"), "x=y");
    assert_string_equal(kf_execenv_get(e, "KF_T_KEEP"), "kept");
    assert_string_equal(kf_execenv_get(e, "KF_T_DEF"), "this");
    assert_null(kf_execenv_get(e, "KFLEET_T_A"));
    assert_null(kf_execenv_get(e, "KFLEET_T_B"));
    /* A name that is another's prefix is not that one. */
    assert_null(kf_execenv_get(e, "KF_T_KEE"));
    size_t n = 0, over = 0;
    for (char **p = kf_execenv_array(e); *p; p++, n++)
        over += strncmp(*p, "KF_T_OVER=", 10) == 0;
    assert_int_equal(over, 1); /* replaced, not added */
    assert_true(n > 4);
    /* This process's own environment is not the child's. */
    assert_string_equal(getenv("KF_T_OVER"), "old");
    assert_string_equal(getenv("KFLEET_T_A"), "a");
    assert_null(getenv("KF_T_NEW"));
    kf_execenv_unset(e, "KF_T_OVER");
    assert_null(kf_execenv_get(e, "KF_T_OVER"));
    kf_execenv_destroy(&e);
    assert_null(e);
}

/* What an exec'd program sees is the made environment. */
static void test_exec_sees_it(void **state)
{
    (void)state;
    setenv("KFLEET_T_SECRET", "s", 1);
    kf_execenv *e = kf_execenv_new();
    kf_execenv_unset_prefix(e, "KFLEET_");
    kf_execenv_set(e, "KF_T_SEEN", "yes");
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    char *argv[] = {"sh", "-c", "printf '%s|%s' \"$KF_T_SEEN\" \"${KFLEET_T_SECRET-unset}\"", NULL};
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(pfd[1], 1);
        execve("/bin/sh", argv, kf_execenv_array(e));
        kf_exec_say(2, "cannot exec ", "/bin/sh", kf_exec_why(errno));
        _exit(127);
    }
    close(pfd[1]);
    char out[64] = {0};
    size_t got = 0;
    ssize_t r;
    while ((r = read(pfd[0], out + got, sizeof out - 1 - got)) > 0)
        got += (size_t)r;
    close(pfd[0]);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_string_equal(out, "yes|unset");
    kf_execenv_destroy(&e);
}

static void test_exec_say(void **state)
{
    (void)state;
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    kf_exec_say(pfd[1], "cannot exec ", "/no/such", kf_exec_why(ENOENT));
    close(pfd[1]);
    char out[128] = {0};
    assert_true(read(pfd[0], out, sizeof out - 1) > 0);
    close(pfd[0]);
    assert_string_equal(out, "cannot exec /no/such: No such file or directory\n");
    assert_string_equal(kf_exec_why(12345), "an error this table does not name");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_changes_stay_in_the_copy),
        cmocka_unit_test(test_exec_sees_it),
        cmocka_unit_test(test_exec_say),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
