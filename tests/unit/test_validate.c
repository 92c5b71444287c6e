/* test_validate — validate.c's comparison of an output with its reference
 * (the rest of a validation runs through the runner in test_harness.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "runner/hctx.h"

#include <math.h>
#include <stdlib.h>

/* A big output's comparison, split over threads, finds what one thread
 * finds: every non-finite element, the largest error wherever it lies
 * (here in the last thread's part), the same relative error. */
static void test_compare_threads(void **state)
{
    (void)state;
    size_t n = 3u << 20;
    float *out = malloc(n * sizeof *out);
    double *ref = malloc(n * sizeof *ref);
    assert_non_null(out);
    assert_non_null(ref);
    for (size_t i = 0; i < n; i++) {
        ref[i] = (double)(i % 1000) / 7.0;
        out[i] = (float)ref[i];
    }
    out[7] = NAN;
    out[n / 2] = INFINITY;
    out[n - 3] = (float)(ref[n - 3] + 0.5);
    hctx_check one, many, most;
    hctx_compare(out, KF_DTYPE_F32, ref, n, 1, NULL, &one);
    hctx_compare(out, KF_DTYPE_F32, ref, n, 8, NULL, &many);
    hctx_compare(out, KF_DTYPE_F32, ref, n, 16, NULL, &most);
    assert_int_equal(one.nonfinite, 2);
    assert_int_equal(many.nonfinite, 2);
    assert_int_equal(most.nonfinite, 2);
    assert_true(fabs(one.max_abs - 0.5) < 1e-4); /* float rounding aside */
    assert_true(many.max_abs == one.max_abs);
    assert_true(most.max_abs == one.max_abs);
    assert_true(one.rel > 0);
    assert_true(fabs(many.rel - one.rel) <= 1e-12 * one.rel);
    assert_true(fabs(most.rel - one.rel) <= 1e-12 * one.rel);
    /* A given thread count gives one answer. */
    hctx_check again;
    hctx_compare(out, KF_DTYPE_F32, ref, n, 16, NULL, &again);
    assert_true(again.rel == most.rel);
    free(out);
    free(ref);
}

/* A small output is compared on one thread, with the same answers. */
static void test_compare_small(void **state)
{
    (void)state;
    double out[4] = {1, 2, 3, 4}, ref[4] = {1, 2, 3, 3.5};
    hctx_check c;
    hctx_compare(out, KF_DTYPE_F64, ref, 4, 8, NULL, &c);
    assert_int_equal(c.nonfinite, 0);
    assert_true(c.max_abs == 0.5);
    assert_true(fabs(c.rel - 0.5 / sqrt(1 + 4 + 9 + 3.5 * 3.5)) < 1e-15);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compare_threads),
        cmocka_unit_test(test_compare_small),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
