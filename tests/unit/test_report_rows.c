/* report_rows: which of a node's ceilings a row is judged impossible by
 * (issue 43): its output dtype's matrix rate on a GPU (fp32 FMA unless its
 * tolerance admits TF32, fp64's own, bf16's otherwise), the host's FLOP
 * rate on a CPU. */
#include "report/report_rows.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

/* An H200's doctor, rounded: 4,000 GB/s copies, 700 TFLOP/s bf16, 50 fp32
 * FMA, 350 TF32, 55 fp64; a host of 100 GFLOP/s and 20 GB/s. */
static Kfleet__AgentInfo node(void)
{
    Kfleet__AgentInfo a = KFLEET__AGENT_INFO__INIT;
    a.n_gpus = 1;
    a.ceiling_copy_gbps = 4000;
    a.ceiling_bf16_tflops = 700;
    a.ceiling_f32_tflops = 50;
    a.ceiling_tf32_tflops = 350;
    a.ceiling_f64_tflops = 55;
    a.ceiling_host_copy_gbps = 20;
    a.ceiling_host_gflops = 100;
    return a;
}

typedef struct fixture {
    Kfleet__ProfileStats ps;
    Kfleet__Result pres, vres;
    rtask prof, val;
    rrow w;
} fixture;

/* A row of gflops GFLOP/s whose output is dtype, validated with rtol
 * (0: none stated, the kernel's tol_rel of 1e-6 then). */
static void row(fixture *f, double gflops, const char *dtype, double rtol)
{
    memset(f, 0, sizeof *f);
    kfleet__profile_stats__init(&f->ps);
    kfleet__result__init(&f->pres);
    kfleet__result__init(&f->vres);
    f->ps.output_dtype = (char *)dtype;
    f->pres.profile = &f->ps;
    f->vres.rtol = rtol;
    f->vres.tol_rel = 1e-6;
    f->prof.res = &f->pres;
    f->val.res = &f->vres;
    f->w.profile = &f->prof;
    f->w.validate = &f->val;
    f->w.gbps = 1; /* far below every bandwidth ceiling */
    f->w.gflops = gflops;
    f->w.impossible_x = NAN;
}

static void judged(double gflops, const char *dtype, double rtol, int cuda, const char *of,
                   double x)
{
    Kfleet__AgentInfo a = node();
    fixture f;
    row(&f, gflops, dtype, rtol);
    kf_rep_judge_possible(&f.w, cuda, &a);
    if (!of) {
        assert_null(f.w.impossible_of);
        assert_true(isnan(f.w.impossible_x));
        return;
    }
    assert_non_null(f.w.impossible_of);
    assert_string_equal(f.w.impossible_of, of);
    assert_true(fabs(f.w.impossible_x - x) < 1e-9);
}

/* The output cache: an fp32 matmul at 401.6 "TFLOP/s" under
 * KernelBench's 1e-4 is 8x the fp32 FMA rate; under the bf16 ceiling it
 * passed unflagged. An honest 40 TFLOP/s fp32 kernel is not flagged. */
static void test_fp32(void **state)
{
    (void)state;
    judged(401.6e3, "f32", 1e-4, 1, "fp32 FMA rate", 401.6 / 50);
    judged(40e3, "f32", 1e-4, 1, NULL, 0);
    /* No rtol: the kernel's relative L2 bound (1e-6) is what it held. */
    judged(401.6e3, "f32", 0, 1, "fp32 FMA rate", 401.6 / 50);
}

/* A tolerance that admits TF32's rounding (2^-11): a TF32 kernel at 300
 * TFLOP/s is honest; 1,000 is 2.9x the TF32 rate. */
static void test_tf32(void **state)
{
    (void)state;
    judged(300e3, "f32", 1e-3, 1, NULL, 0);
    judged(1000e3, "f32", 1e-3, 1, "TF32 matrix rate", 1000.0 / 350);
}

static void test_other_dtypes(void **state)
{
    (void)state;
    judged(200e3, "f64", 0, 1, "fp64 matrix rate", 200.0 / 55);
    judged(100e3, "f64", 0, 1, NULL, 0);
    /* Half-precision outputs and an older agent's rows (no dtype): bf16's
     * rate, as before. */
    judged(1000e3, "bf16", 1e-2, 1, NULL, 0);
    judged(2000e3, "f16", 1e-2, 1, "bf16 matrix rate", 2000.0 / 700);
    judged(401.6e3, "", 1e-4, 1, NULL, 0);
}

/* The host: an answer computed ahead and copied in run() claims the
 * problem's FLOPs in a copy's time. 300 GFLOP/s on a 100 GFLOP/s host is
 * impossible; 200 (2x: a hot cache, a peak measured under load) is not. */
static void test_host(void **state)
{
    (void)state;
    judged(300, "f64", 0, 0, "host FLOP rate", 3);
    judged(200, "f32", 0, 0, NULL, 0);
    /* An agent that measured no host FLOP ceiling flags nothing by it. */
    Kfleet__AgentInfo a = node();
    a.ceiling_host_gflops = 0;
    fixture f;
    row(&f, 1e6, "f32", 0);
    kf_rep_judge_possible(&f.w, 0, &a);
    assert_null(f.w.impossible_of);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp32),
        cmocka_unit_test(test_tf32),
        cmocka_unit_test(test_other_dtypes),
        cmocka_unit_test(test_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
