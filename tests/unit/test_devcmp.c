/* test_devcmp — the comparison on the GPU (devcmp.c) as far as no GPU is
 * needed: the embedded PTX assembles for old and new GPUs (ptxas, when
 * this machine has one), and the host's half of the reduction
 * (kf_devcmp_combine), over the partition of the elements the device
 * uses, gives what the host comparison (hctx_compare) gives: the same
 * counts and maximum, the relative error within summation order. The
 * device half runs on the GPU machine (bench/gpu/run.sh devcompare). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "runner/devcmp.h"
#include "runner/hctx.h"
#include "common/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* 0 with its path in out, or -1: kf_find_exe answers 1 when it finds one. */
static int find_ptxas(char *out, size_t len)
{
    if (kf_find_exe("ptxas", out, len))
        return 0;
    snprintf(out, len, "/usr/local/cuda/bin/ptxas");
    return access(out, X_OK);
}

/* The PTX the runner loads, through the same ptxas the driver's JIT
 * mirrors: for the oldest target this toolkit has (sm_75 since CUDA 13;
 * the PTX itself says sm_50 and .version 7.0) and for Hopper. */
static void test_ptx_assembles(void **state)
{
    (void)state;
    assert_memory_equal(kf_devcmp_ptx, ".version 7.0\n", 13);
    char ptxas[4096];
    if (find_ptxas(ptxas, sizeof ptxas) != 0) {
        print_message("no ptxas on this machine (PATH, /usr/local/cuda/bin): PTX not assembled\n");
        skip();
    }
    char dir[] = "/tmp/kf-test-devcmp.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char ptx[128], cubin[128], cmd[8192];
    snprintf(ptx, sizeof ptx, "%s/devcmp.ptx", dir);
    FILE *f = fopen(ptx, "w");
    assert_non_null(f);
    assert_true(fputs(kf_devcmp_ptx, f) >= 0);
    assert_int_equal(fclose(f), 0);
    const char *archs[] = {"sm_75", "sm_90"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(cubin, sizeof cubin, "%s/%s.cubin", dir, archs[i]);
        snprintf(cmd, sizeof cmd, "'%s' -arch=%s '%s' -o '%s'", ptxas, archs[i], ptx, cubin);
        int rc = system(cmd);
        print_message("%s -arch=%s: exit %d\n", ptxas, archs[i], WEXITSTATUS(rc));
        assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
        assert_int_equal(access(cubin, R_OK), 0);
        unlink(cubin);
    }
    unlink(ptx);
    rmdir(dir);
}

/* What one element adds on the device (the PTX's C_HAVE .. C_NEXT). */
static void add_elem(kf_devcmp_part *p, double o, double r)
{
    p->ref_nonzero += r != 0;
    if (!isfinite(o)) {
        p->nonfinite++;
        return;
    }
    double d = fabs(o - r);
    if (d > p->max_abs)
        p->max_abs = d;
    p->diff2 += d * d;
    p->ref2 += r * r;
}

/* The device's reduction written out on the host: thread t of block b
 * takes elements b*256 + t, stepping by the grid; each block's thread 0
 * adds its threads' values in order (C_SUM); then kf_devcmp_combine. */
static void device_reduction(const void *out, kf_dtype dt, const double *ref, size_t n,
                             kf_devcmp_part *sum)
{
    unsigned blocks = kf_devcmp_blocks(n);
    size_t stride = (size_t)blocks * KF_DEVCMP_THREADS;
    kf_devcmp_part *parts = calloc(blocks ? blocks : 1, sizeof *parts);
    kf_devcmp_part *th = calloc(KF_DEVCMP_THREADS, sizeof *th);
    assert_non_null(parts);
    assert_non_null(th);
    for (unsigned b = 0; b < blocks; b++) {
        memset(th, 0, KF_DEVCMP_THREADS * sizeof *th);
        for (unsigned t = 0; t < KF_DEVCMP_THREADS; t++)
            for (size_t i = (size_t)b * KF_DEVCMP_THREADS + t; i < n; i += stride)
                add_elem(&th[t], hctx_elem(out, dt, i), ref[i]);
        kf_devcmp_combine(th, KF_DEVCMP_THREADS, &parts[b]);
    }
    kf_devcmp_combine(parts, blocks, sum);
    free(th);
    free(parts);
}

static void expect_same(const void *out, kf_dtype dt, const double *ref, size_t n)
{
    hctx_check host;
    kf_devcmp_part dev;
    hctx_compare(out, dt, ref, n, 8, NULL, &host);
    device_reduction(out, dt, ref, n, &dev);
    assert_int_equal(dev.nonfinite, host.nonfinite);
    assert_int_equal(dev.ref_nonzero, host.ref_nonzero);
    assert_true(dev.max_abs == host.max_abs || (isnan(dev.max_abs) && isnan(host.max_abs)));
    double rel = dev.ref2 > 0 ? sqrt(dev.diff2 / dev.ref2) : sqrt(dev.diff2);
    if (isnan(host.rel))
        assert_true(isnan(rel));
    else
        assert_true(fabs(rel - host.rel) <= 1e-12 * host.rel);
}

/* Every dtype, sizes on both sides of the host's thread split and of the
 * device's block cap, with non-finite outputs, a NaN reference element (a
 * reference that wrote nothing there), zeros and errors. */
static void test_device_partition_matches_host(void **state)
{
    (void)state;
    size_t sizes[] = {1, 255, 257, 70000, (size_t)3 << 20};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        size_t n = sizes[si];
        double *ref = malloc(n * sizeof *ref), *o64 = malloc(n * sizeof *o64);
        float *o32 = malloc(n * sizeof *o32);
        int32_t *oi = malloc(n * sizeof *oi);
        uint16_t *obf = malloc(n * sizeof *obf), *of16 = malloc(n * sizeof *of16);
        assert_true(ref && o64 && o32 && oi && obf && of16);
        for (size_t i = 0; i < n; i++) {
            ref[i] = (double)((i * 2654435761u) % 2001) / 100.0 - 10.0;
            o64[i] = ref[i] + ((i % 97) == 3 ? 1e-3 : 0);
            o32[i] = (float)ref[i];
            oi[i] = (int32_t)ref[i];
            float fv = (float)ref[i];
            uint32_t u;
            memcpy(&u, &fv, 4);
            obf[i] = (uint16_t)(u >> 16);
            of16[i] = (uint16_t)(0x3C00 + (i % 1024)); /* 1 .. 2 in f16 */
        }
        if (n > 300) {
            o32[n / 3] = NAN;
            o64[n - 1] = INFINITY;
            obf[7] = 0x7FC0;  /* NaN */
            of16[5] = 0x7C00; /* +inf */
            oi[n / 2] = 1 << 30;
            ref[n - 2] = NAN; /* unwritten by the reference */
        }
        expect_same(o64, KF_DTYPE_F64, ref, n);
        expect_same(o32, KF_DTYPE_F32, ref, n);
        expect_same(oi, KF_DTYPE_I32, ref, n);
        expect_same(obf, KF_DTYPE_BF16, ref, n);
        expect_same(of16, KF_DTYPE_F16, ref, n);
        free(ref);
        free(o64);
        free(o32);
        free(oi);
        free(obf);
        free(of16);
    }
}

/* The combine step itself: counts and sums added in order, the largest
 * maximum kept, a NaN part's maximum ignored as the device ignores it. */
static void test_combine(void **state)
{
    (void)state;
    kf_devcmp_part p[3] = {{1, 2, 0.5, 1.0, 4.0}, {0, 3, NAN, 2.0, 5.0}, {2, 0, 0.75, 0.5, 1.0}};
    kf_devcmp_part s;
    kf_devcmp_combine(p, 3, &s);
    assert_int_equal(s.nonfinite, 3);
    assert_int_equal(s.ref_nonzero, 5);
    assert_true(s.max_abs == 0.75);
    assert_true(s.diff2 == 3.5 && s.ref2 == 10.0);
    kf_devcmp_combine(p, 0, &s);
    assert_true(s.nonfinite == 0 && s.max_abs == 0 && s.ref2 == 0);
    assert_int_equal(kf_devcmp_blocks(0), 0);
    assert_int_equal(kf_devcmp_blocks(1), 1);
    assert_int_equal(kf_devcmp_blocks((size_t)1 << 30), KF_DEVCMP_MAX_BLOCKS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ptx_assembles),
        cmocka_unit_test(test_device_partition_matches_host),
        cmocka_unit_test(test_combine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
