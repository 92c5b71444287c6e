/* test_pyenv — the node's Python as a runner learns it (runner/pyenv.c):
 * from the description its agent put in its environment (kf_pyenv_export)
 * when the interpreter is the same, without starting one; by starting the
 * interpreter otherwise, which for one that does not exist is an error
 * naming it. */
#include "runner/pyenv.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* What pyprobe.py prints, for an interpreter that is not on this machine. */
static const char probe[] =
    "{\"executable\": \"/nowhere/bin/python3\", \"version\": \"3.99.1\", "
    "\"prefix\": \"/nowhere\", \"base_prefix\": \"/nowhere\", \"base_exec_prefix\": "
    "\"/nowhere\", \"path\": [\"/nowhere/lib/python3.99\"], \"libpython\": "
    "[\"/nowhere/lib/libpython3.99.so.1.0\"], \"packages\": {\"numpy\": \"9.9.9\"}}";

/* The agent's description is read, not an interpreter started: this one
 * does not exist, so starting it would fail. Then the export hands the same
 * on to a child. */
static void test_description_from_the_agent(void **st)
{
    (void)st;
    setenv("KF_PYTHON", "/nowhere/bin/python3", 1);
    setenv("KF_PYENV_FOR", "/nowhere/bin/python3", 1);
    setenv("KF_PYENV_PROBE", probe, 1);
    const kf_pyenv *py = NULL;
    kf_err err;
    kf_err_clear(&err);
    assert_int_equal(kf_pyenv_get(&py, &err), KF_OK);
    assert_string_equal(py->version, "3.99.1");
    assert_string_equal(py->numpy, "9.9.9");
    assert_string_equal(py->libpython, "/nowhere/lib/libpython3.99.so.1.0");
    unsetenv("KF_PYENV_FOR");
    unsetenv("KF_PYENV_PROBE");
    kf_execenv *env = kf_execenv_new();
    kf_pyenv_export(env);
    assert_string_equal(kf_execenv_get(env, "KF_PYENV_FOR"), "/nowhere/bin/python3");
    assert_string_equal(kf_execenv_get(env, "KF_PYENV_PROBE"), probe);
    kf_execenv_destroy(&env);
}

/* A description for another interpreter is not taken: the one asked for is
 * started, and one that does not exist is named; the export then removes
 * the variables (nothing was probed to hand on). */
static void test_other_interpreter_is_probed(void **st)
{
    (void)st;
    setenv("KF_PYTHON", "/nowhere-else/python3", 1);
    setenv("KF_PYENV_FOR", "/nowhere/bin/python3", 1);
    setenv("KF_PYENV_PROBE", probe, 1);
    const kf_pyenv *py = NULL;
    kf_err err;
    kf_err_clear(&err);
    assert_int_equal(kf_pyenv_get(&py, &err), KF_ENOTFOUND);
    assert_non_null(strstr(err.msg, "/nowhere-else/python3 does not run on this node"));
    kf_execenv *env = kf_execenv_new(); /* a copy of this process's: both set */
    kf_pyenv_export(env);
    assert_null(kf_execenv_get(env, "KF_PYENV_FOR"));
    assert_null(kf_execenv_get(env, "KF_PYENV_PROBE"));
    kf_execenv_destroy(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_description_from_the_agent),
        cmocka_unit_test(test_other_interpreter_is_probed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
