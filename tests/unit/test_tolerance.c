/* test_tolerance — a check that cannot fail is refused (common/tolerance.c):
 * max-abs and relative-L2 bounds, and numpy.isclose's atol + rtol |ref|
 * with the relative-L2 bound that stays beside it (issue 41). */
#include "common/tolerance.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static void test_abs_rel(void **state)
{
    (void)state;
    char why[512];
    assert_int_equal(kf_tol_vacuous(1e-5, 1e-6, why, sizeof why), 0);
    assert_int_not_equal(kf_tol_vacuous(INFINITY, 1e-6, why, sizeof why), 0);
    assert_non_null(strstr(why, "non-finite"));
    assert_int_not_equal(kf_tol_vacuous(1e-5, 1.0, why, sizeof why), 0);
    assert_non_null(strstr(why, "relative error exactly 1"));
    assert_int_not_equal(kf_tol_vacuous(-1, 0.1, why, sizeof why), 0);
}

static void test_close(void **state)
{
    (void)state;
    char why[512];
    /* KernelBench's fp32 check, with the defaults beside it. */
    assert_int_equal(kf_tol_close_vacuous(1e-4, 1e-4, INFINITY, 0.5, why, sizeof why), 0);
    assert_int_equal(kf_tol_close_vacuous(0, 1e-2, 1e-3, 1e-3, why, sizeof why), 0);
    /* rtol >= 1: every element of zeros is within its bound. */
    assert_int_not_equal(kf_tol_close_vacuous(0, 1.0, INFINITY, 0.5, why, sizeof why), 0);
    assert_non_null(strstr(why, "rtol = 1"));
    /* The relative-L2 bound beside it must still fail zeros. */
    assert_int_not_equal(kf_tol_close_vacuous(1e-2, 1e-2, INFINITY, 1.0, why, sizeof why), 0);
    assert_int_not_equal(kf_tol_close_vacuous(1e-2, 1e-2, INFINITY, NAN, why, sizeof why), 0);
    assert_int_not_equal(kf_tol_close_vacuous(INFINITY, 1e-2, 1, 0.5, why, sizeof why), 0);
    assert_int_not_equal(kf_tol_close_vacuous(-1e-3, 1e-2, 1, 0.5, why, sizeof why), 0);
    assert_int_not_equal(kf_tol_close_vacuous(1e-3, 1e-2, -1, 0.5, why, sizeof why), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_abs_rel),
        cmocka_unit_test(test_close),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
