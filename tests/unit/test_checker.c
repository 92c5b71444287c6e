/* test_checker — a candidate's outputs judged in the checker process
 * (runner/checker.c): right outputs pass, wrong ones fail, and a candidate
 * that writes over the reference in its own process after the checker
 * started (a C kernel writing over the reference buffer) still fails; the
 * runner gets each verdict back as its answer, and the guard's spot checks
 * are answered from the checker's references, which the runner no longer
 * needs to hold. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "runner/checker.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 4096

/* All the checker wrote, once it has finished. */
static void read_verdicts(int fd, char *out, size_t len)
{
    size_t got = 0;
    ssize_t r;
    while (got + 1 < len && (r = read(fd, out + got, len - 1 - got)) > 0)
        got += (size_t)r;
    out[got] = '\0';
    close(fd);
}

static void test_outputs_judged_outside(void **state)
{
    (void)state;
    double *ref0 = malloc(N * sizeof *ref0), *ref1 = malloc(N * sizeof *ref1);
    float *right = malloc(N * sizeof *right), *zeros = calloc(N, sizeof *zeros);
    for (size_t i = 0; i < N; i++) {
        ref0[i] = 1.0 + (double)i / N;
        ref1[i] = -2.0 + (double)i / 7.0;
        right[i] = (float)ref0[i];
    }
    const double *refs[] = {ref0, ref1};
    size_t counts[] = {N, N};
    int vp[2];
    assert_int_equal(pipe(vp), 0);
    kf_checker *c = NULL;
    kf_err err;
    assert_int_equal(kf_checker_start(refs, counts, 2, 1e-5, 1e-6, vp[1], &c, &err), KF_OK);
    /* The verdict descriptor is the checker's alone now. */
    assert_int_equal(write(vp[1], "x", 1), -1);

    /* 0: the right output of set 0 passes, and the runner is told so. */
    hctx_check a;
    assert_int_equal(kf_checker_check(c, 0, right, KF_DTYPE_F32, N, &a, &err), KF_OK);
    assert_int_equal(a.passed, 1);
    assert_int_equal(a.nonfinite, 0);
    assert_int_equal(a.ref_nonzero, N);
    /* 1: zeros for set 1 fail. */
    assert_int_equal(kf_checker_check(c, 1, zeros, KF_DTYPE_F32, N, &a, &err), KF_OK);
    assert_int_equal(a.passed, 0);
    assert_true(a.max_abs > 1);
    /* 2: the "candidate" writes its zeros over the references in its own
     * process, as a C kernel overwriting the reference buffer would, and
     * sends zeros again: the checker's copy is untouched, so it fails. */
    memset(ref0, 0, N * sizeof *ref0);
    memset(ref1, 0, N * sizeof *ref1);
    assert_int_equal(kf_checker_check(c, 0, zeros, KF_DTYPE_F32, N, &a, &err), KF_OK);
    assert_int_equal(a.passed, 0);
    /* Spot checks (no verdict line): values at positions of set 1 are
     * answered from the checker's copy, which the zeros above never
     * reached: the right values are exact, a NaN counts, zeros are off. */
    uint64_t at[3] = {0, 7, N - 1};
    double vals[3] = {-2.0, -2.0 + 1.0, -2.0 + (double)(N - 1) / 7.0};
    assert_int_equal(kf_checker_spot(c, 1, at, vals, 3, &a, &err), KF_OK);
    assert_int_equal(a.nonfinite, 0);
    assert_true(a.max_abs == 0 && a.rel == 0);
    vals[1] = NAN;
    vals[2] = 0;
    assert_int_equal(kf_checker_spot(c, 1, at, vals, 3, &a, &err), KF_OK);
    assert_int_equal(a.nonfinite, 1);
    assert_true(a.max_abs > 500);
    at[2] = N; /* past the output */
    assert_int_equal(kf_checker_spot(c, 1, at, vals, 3, &a, &err), KF_EINVAL);
    assert_int_equal(kf_checker_spot(c, 9, at, vals, 3, &a, &err), KF_EINVAL);
    /* 3: one NaN (an unwritten, poisoned element) fails. */
    right[17] = NAN;
    assert_int_equal(kf_checker_check(c, 0, right, KF_DTYPE_F32, N, &a, &err), KF_OK);
    assert_int_equal(a.nonfinite, 1);
    assert_int_equal(a.passed, 0);
    /* 4: a reference that does not exist, 5: a short output: bad, to the
     * runner too. */
    assert_int_equal(kf_checker_check(c, 9, zeros, KF_DTYPE_F32, N, &a, &err), KF_EINVAL);
    assert_int_equal(kf_checker_check(c, 0, zeros, KF_DTYPE_F32, N - 1, &a, &err), KF_EINVAL);
    assert_int_equal(kf_checker_finish(&c), 0);
    assert_null(c);

    char v[4096];
    read_verdicts(vp[0], v, sizeof v);
    printf("%s", v);
    assert_non_null(strstr(v, "check 0 ref 0 pass 1 nonfinite 0 "));
    assert_non_null(strstr(v, "check 1 ref 1 pass 0 nonfinite 0 "));
    assert_non_null(strstr(v, "check 2 ref 0 pass 0 nonfinite 0 "));
    assert_non_null(strstr(v, "check 3 ref 0 pass 0 nonfinite 1 "));
    assert_non_null(strstr(v, "check 4 ref 9 bad\n"));
    assert_non_null(strstr(v, "check 5 ref 0 bad\n"));
    assert_non_null(strstr(v, "done checks 6 failed 5\n"));
    free(ref0);
    free(ref1);
    free(right);
    free(zeros);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outputs_judged_outside),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
