/* Tests for coordinator/report/: a store written by hand with known
 * samples, results and failures, rendered in all three formats.
 *
 * The fixture (sweep "demo", baseline "base", one agent n1 with a GPU):
 *   base cfg0 n=1048576 block=32: validate passes; profile samples
 *        1, 2, 3, 4, 100 ms, 3e9 bytes -> median 3 ms, 1000 GB/s exactly
 *   base cfg1 n=2097152 block=64: profile of 4 stored samples (one
 *        throttled) but the agent claimed 5, not converged
 *        -> samples-mismatch, throttled, noisy; median 4 ms
 *   fast cfg0: validate FAILS (tolerance); profile 1.5 ms x3 -> speedup 2
 *        against base's same configuration on n1 (3 ms)
 *   fast cfg1: profile TIMED OUT
 *   builds of base and fast on n1.
 * A second sweep with `nodes: any` and no build tasks checks that the row
 * takes the node that ran the profile and finds the build of the first
 * sweep through the store's build record. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "report/report.h"

#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char dir[64];
static kf_store *store;
static uint32_t sweep1, sweep2, sweep3, sweep4, sweep5, sweep6, sweep7;

#define HASH_BASE "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0"
#define HASH_FAST "fafafafafafafafafafafafafafafafafafafafafafafafafafafafafafafafa"
#define ART_BASE "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"
#define ART_FAST "a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2"
#define BAD_BYTES                                                                                  \
    "KFBYTES \xff not UTF-8 \xc2\x9b"                                                              \
    "31m \xe2\x80\xae"                                                                             \
    "evil\x7f done"
#define FAIL_ERR                                                                                   \
    "max abs error 0.5 exceeds tolerance 1e-06 (seed 7)\nat index 12\nexpected 1.0\ngot 1.5"

static int rm_cb(const char *p, const struct stat *s, int f, struct FTW *w)
{
    (void)s;
    (void)f;
    (void)w;
    return remove(p);
}

/* ---- writing the fixture ---- */

typedef struct tspec {
    Kfleet__TaskKind kind;
    uint32_t kernel, config;
    int64_t n, block; /* 0: no params (builds) */
    const char *pin;
    Kfleet__TaskState state;
    const char *error;
} tspec;

static void put_task(kf_txn *t, uint32_t sweep, uint32_t idx, const tspec *ts)
{
    Kfleet__Param pn = KFLEET__PARAM__INIT, pb = KFLEET__PARAM__INIT;
    Kfleet__Param *params[2] = {&pn, &pb};
    pn.name = "n";
    pn.value = ts->n;
    pb.name = "block";
    pb.value = ts->block;
    Kfleet__Task task = KFLEET__TASK__INIT;
    task.task_id = kf_task_id(sweep, idx);
    task.sweep_id = sweep;
    task.kind = ts->kind;
    task.kernel_index = ts->kernel;
    task.config_index = ts->config;
    task.n_params = ts->n ? 2 : 0;
    task.params = params;
    task.pin_agent = (char *)ts->pin;
    task.agent_id = "n1";
    task.state = ts->state;
    task.attempts = 1;
    task.error = (char *)(ts->error ? ts->error : "");
    assert_int_equal(kf_store_put_task(t, &task), 0);
}

static void put_result(kf_txn *t, Kfleet__Result *r, uint32_t sweep, uint32_t idx,
                       Kfleet__TaskState st)
{
    r->task_id = kf_task_id(sweep, idx);
    r->attempt = 1;
    r->state = st;
    r->agent_id = "n1";
    r->elapsed_s = 0.5;
    int dup = -1;
    assert_int_equal(kf_store_put_result(t, r, &dup), 0);
    assert_int_equal(dup, 0);
}

static void put_samples(kf_txn *t, uint32_t sweep, uint32_t idx, const double *ms, size_t n,
                        int throttled_seq)
{
    for (size_t i = 0; i < n; i++) {
        Kfleet__Sample s = KFLEET__SAMPLE__INIT;
        s.seq = (uint32_t)i;
        s.seconds = ms[i] / 1000.0;
        s.t_ns = 1700000000000000000ull + i;
        s.throttled = (int)i == throttled_seq;
        int dup = -1;
        assert_int_equal(kf_store_put_sample(t, kf_task_id(sweep, idx), 1, &s, &dup), 0);
    }
}

static void put_profile(kf_txn *t, uint32_t sweep, uint32_t idx, uint32_t claimed, int converged)
{
    Kfleet__ProfileStats ps = KFLEET__PROFILE_STATS__INIT;
    ps.samples = claimed;
    ps.median_s = 42; /* the agent's summary: the report must not use it */
    ps.converged = converged;
    ps.bytes = 3e9;
    ps.flops = 6e9;
    Kfleet__Result r = KFLEET__RESULT__INIT;
    r.profile = &ps;
    r.sample_count = claimed;
    put_result(t, &r, sweep, idx, KFLEET__TASK_STATE__SUCCEEDED);
}

static void put_build(kf_txn *t, uint32_t sweep, uint32_t idx, const char *art, const char *hash)
{
    Kfleet__BuildInfo b = KFLEET__BUILD_INFO__INIT;
    b.artifact_hash = (char *)art;
    b.compile_s = 1.25;
    b.compiler = "gcc 12.2.0";
    b.registers = 32;
    Kfleet__Result r = KFLEET__RESULT__INIT;
    r.build = &b;
    put_result(t, &r, sweep, idx, KFLEET__TASK_STATE__SUCCEEDED);
    Kfleet__BuildRecord br = KFLEET__BUILD_RECORD__INIT;
    br.agent_id = "n1";
    br.kernel_hash = (char *)hash;
    br.task_id = kf_task_id(sweep, idx);
    br.state = KFLEET__TASK_STATE__SUCCEEDED;
    assert_int_equal(kf_store_put_build(t, &br), 0);
}

static void put_sweep(kf_txn *t, uint32_t id, const char *name, int nodes_all)
{
    Kfleet__KernelRef kb = KFLEET__KERNEL_REF__INIT, kf = KFLEET__KERNEL_REF__INIT;
    Kfleet__KernelRef *kernels[2] = {&kb, &kf};
    kb.name = "base";
    kb.hash = HASH_BASE;
    kb.cuda = 1;
    kf.name = "fast";
    kf.hash = HASH_FAST;
    kf.cuda = 1;
    Kfleet__Sweep sw = KFLEET__SWEEP__INIT;
    sw.sweep_id = id;
    sw.name = (char *)name;
    sw.file = "sweeps/demo.yaml";
    sw.created_ns = 1700000000000000000ull; /* 2023-11-14T22:13:20Z */
    sw.finished_ns = 1700000060000000000ull;
    sw.n_kernels = 2;
    sw.kernels = kernels;
    sw.nodes_all = nodes_all;
    sw.baseline = "base";
    sw.max_attempts = 3;
    assert_int_equal(kf_store_put_sweep(t, &sw), 0);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/kf-test-report.XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    kf_err err;
    assert_int_equal(kf_store_open(dir, 0, &store, &err), 0);
    kf_txn *t = NULL;
    assert_int_equal(kf_store_begin(store, 0, &t, &err), 0);

    Kfleet__GpuInfo gpu = KFLEET__GPU_INFO__INIT;
    Kfleet__GpuInfo *gpus[1] = {&gpu};
    gpu.name = "NVIDIA H100 80GB HBM3";
    gpu.uuid = "GPU-0123-4567";
    gpu.cc_major = 9;
    Kfleet__AgentInfo ai = KFLEET__AGENT_INFO__INIT;
    ai.agent_id = "n1";
    ai.hostname = "host1.example";
    ai.cpu_model = "Xeon";
    ai.n_gpus = 1;
    ai.gpus = gpus;
    ai.driver_version = "550.54.15";
    ai.nvcc_version = "12.4";
    ai.cc_version = "gcc 12.2.0";
    ai.ceiling_copy_gbps = 2500;   /* the doctor's: base cfg0's 1000 GB/s is 40 % */
    ai.ceiling_bf16_tflops = 1000; /* 2000 GFLOP/s is 0.2 %: bandwidth bound */
    ai.price_per_gpu_hour = 3.0;   /* the inventory's price */
    assert_int_equal(kf_store_put_agent(t, &ai), 0);

    assert_int_equal(kf_store_next_sweep_id(t, &sweep1), 0);
    put_sweep(t, sweep1, "demo", 1);
    const tspec tasks[] = {
        {KFLEET__TASK_KIND__BUILD, 0, 0, 0, 0, "n1", KFLEET__TASK_STATE__SUCCEEDED, NULL},
        {KFLEET__TASK_KIND__BUILD, 1, 0, 0, 0, "n1", KFLEET__TASK_STATE__SUCCEEDED, NULL},
        {KFLEET__TASK_KIND__VALIDATE, 0, 0, 1048576, 32, "n1", KFLEET__TASK_STATE__SUCCEEDED, NULL},
        {KFLEET__TASK_KIND__PROFILE, 0, 0, 1048576, 32, "n1", KFLEET__TASK_STATE__SUCCEEDED, NULL},
        {KFLEET__TASK_KIND__PROFILE, 0, 1, 2097152, 64, "n1", KFLEET__TASK_STATE__SUCCEEDED, NULL},
        {KFLEET__TASK_KIND__VALIDATE, 1, 0, 1048576, 32, "n1", KFLEET__TASK_STATE__FAILED,
         FAIL_ERR},
        {KFLEET__TASK_KIND__PROFILE, 1, 0, 1048576, 32, "n1", KFLEET__TASK_STATE__SUCCEEDED, NULL},
        {KFLEET__TASK_KIND__PROFILE, 1, 1, 2097152, 64, "n1", KFLEET__TASK_STATE__TIMED_OUT,
         "timed out: the task ran past its limit of 3.0 s"},
    };
    for (uint32_t i = 0; i < sizeof tasks / sizeof tasks[0]; i++)
        put_task(t, sweep1, i, &tasks[i]);
    put_build(t, sweep1, 0, ART_BASE, HASH_BASE);
    put_build(t, sweep1, 1, ART_FAST, HASH_FAST);
    {
        Kfleet__ValidateTrial t1 = KFLEET__VALIDATE_TRIAL__INIT, t2 = KFLEET__VALIDATE_TRIAL__INIT;
        Kfleet__ValidateTrial *trials[2] = {&t1, &t2};
        t1.seed = 1;
        t1.max_abs_err = 1e-7;
        t1.passed = 1;
        t2.seed = 18344560041459230117ull; /* past 2^63 */
        t2.max_abs_err = 2e-7;
        t2.passed = 1;
        Kfleet__Result r = KFLEET__RESULT__INIT;
        r.n_trials = 2;
        r.trials = trials;
        put_result(t, &r, sweep1, 2, KFLEET__TASK_STATE__SUCCEEDED);
    }
    const double s3[] = {3, 1, 100, 2, 4};
    put_samples(t, sweep1, 3, s3, 5, -1);
    put_profile(t, sweep1, 3, 5, 1);
    const double s4[] = {4, 4, 4, 4};
    put_samples(t, sweep1, 4, s4, 4, 2);
    put_profile(t, sweep1, 4, 5, 0); /* claims 5, 4 stored */
    {
        Kfleet__Result r = KFLEET__RESULT__INIT;
        r.error = FAIL_ERR;
        put_result(t, &r, sweep1, 5, KFLEET__TASK_STATE__FAILED);
    }
    const double s6[] = {1.5, 1.5, 1.5};
    put_samples(t, sweep1, 6, s6, 3, -1);
    put_profile(t, sweep1, 6, 3, 1);
    {
        Kfleet__Result r = KFLEET__RESULT__INIT;
        r.error = "timed out: the task ran past its limit of 3.0 s";
        put_result(t, &r, sweep1, 7, KFLEET__TASK_STATE__TIMED_OUT);
    }

    /* Sweep 2: `nodes: any`, one unpinned profile run by n1, no builds. */
    assert_int_equal(kf_store_next_sweep_id(t, &sweep2), 0);
    put_sweep(t, sweep2, "any", 0);
    const tspec any = {KFLEET__TASK_KIND__PROFILE,    0,   0, 1048576, 32, "",
                       KFLEET__TASK_STATE__SUCCEEDED, NULL};
    put_task(t, sweep2, 0, &any);
    const double s20[] = {2, 2};
    put_samples(t, sweep2, 0, s20, 2, -1);
    put_profile(t, sweep2, 0, 2, 1);
    /* Its attempts: a first one lost after 4 s, the second ran 30 s. */
    for (uint32_t at = 1; at <= 2; at++) {
        Kfleet__Attempt a = KFLEET__ATTEMPT__INIT;
        a.task_id = kf_task_id(sweep2, 0);
        a.attempt = at;
        a.agent_id = "n1";
        a.assigned_ns = 1700000000000000000ull + (at == 1 ? 2 : 10) * 1000000000ull;
        a.ended_ns = a.assigned_ns + (at == 1 ? 4 : 30) * 1000000000ull;
        a.state = at == 1 ? KFLEET__TASK_STATE__FAILED : KFLEET__TASK_STATE__SUCCEEDED;
        assert_int_equal(kf_store_put_attempt(t, &a), 0);
    }

    /* Sweep 3: `nodes: all`, one configuration on n1, n2, n3; n3 is 50 %
     * slower, well beyond its noise: an outlier node. n2 is 1 % slower than
     * the nodes' median, inside the 2 % floor: not one. */
    assert_int_equal(kf_store_next_sweep_id(t, &sweep3), 0);
    put_sweep(t, sweep3, "fleet", 1);
    const char *pins[3] = {"n1", "n2", "n3"};
    const double per_node[3][4] = {{1, 1, 1, 1}, {1.01, 1.01, 1.01, 1.01}, {1.5, 1.5, 1.5, 1.5}};
    for (uint32_t i = 0; i < 3; i++) {
        const tspec ps3 = {KFLEET__TASK_KIND__PROFILE,    0,   0, 1048576, 32, pins[i],
                           KFLEET__TASK_STATE__SUCCEEDED, NULL};
        put_task(t, sweep3, i, &ps3);
        put_samples(t, sweep3, i, per_node[i], 4, -1);
        put_profile(t, sweep3, i, 4, 1);
    }
    /* Sweep 4: the throttle policy. Profile 0 (discard) stored 3 kept
     * samples of 1 ms at 1980 MHz / 600 W and 2 discarded ones of 9 ms at
     * 1200 MHz / 700 W; profile 1 (keep) 4 samples, 3 throttled. */
    assert_int_equal(kf_store_next_sweep_id(t, &sweep4), 0);
    put_sweep(t, sweep4, "throttle", 0);
    for (uint32_t i = 0; i < 2; i++) {
        const tspec ts4 = {KFLEET__TASK_KIND__PROFILE,    0,   i, 1024 << i, 32, "n1",
                           KFLEET__TASK_STATE__SUCCEEDED, NULL};
        put_task(t, sweep4, i, &ts4);
        for (uint32_t k = 0; k < 5; k++) {
            Kfleet__Sample smp = KFLEET__SAMPLE__INIT;
            smp.seq = k;
            smp.t_ns = 1700000000000000000ull + k;
            int slow = i == 0 ? (k == 1 || k == 3) : k < 3;
            smp.discarded = i == 0 && slow;
            smp.throttled = slow;
            smp.seconds = i == 0 && slow ? 9e-3 : 1e-3;
            smp.sm_clock_mhz = slow ? 1200 : 1980;
            smp.power_mw = slow ? 700000 : 600000;
            int dup = -1;
            if (i == 1 && k == 4)
                break;
            assert_int_equal(kf_store_put_sample(t, kf_task_id(sweep4, i), 1, &smp, &dup), 0);
        }
        Kfleet__ProfileStats ps = KFLEET__PROFILE_STATS__INIT;
        /* Issue 32: both stopped on precision (target 0.5 %), the first
         * under the burst protocol (rests as long as its samples), the
         * second sustained; the kept row's median did not get there
         * (imprecise, yet its four 1 ms samples are not noisy) and 2 of
         * its recovery waits were skipped. */
        ps.converged = i == 0;
        ps.precision_target_pct = 0.5;
        ps.thermal = i == 0 ? "burst" : "sustained";
        ps.rest_s = i == 0 ? 0.004 : 0;
        ps.measured_s = 0.004;
        ps.waits_skipped = i == 1 ? 2 : 0;
        ps.throttle_keep = i == 1;
        ps.clock_threshold_mhz = 1485;
        ps.default_sm_clock_mhz = 1980;
        Kfleet__Result r = KFLEET__RESULT__INIT;
        r.profile = &ps;
        r.sample_count = i == 0 ? 5 : 4;
        put_result(t, &r, sweep4, i, KFLEET__TASK_STATE__SUCCEEDED);
    }
    /* Sweep 5 (issue 29): base cfg0 at 3 ms (1000 GB/s, 40 % of n1's 2500
     * GB/s copy ceiling) and fast cfg0 at 0.5 ms: 6000 GB/s, 2.4x the
     * ceiling, past the 1.5x an honest kernel can reach: impossible. And a
     * validation refused for tol_abs = inf, before any trial. */
    assert_int_equal(kf_store_next_sweep_id(t, &sweep5), 0);
    put_sweep(t, sweep5, "impossible", 1);
    const double base5[] = {3, 3, 3}, fast5[] = {0.5, 0.5, 0.5};
    const double *ms5[2] = {base5, fast5};
    for (uint32_t i = 0; i < 2; i++) {
        const tspec ts5 = {KFLEET__TASK_KIND__PROFILE,    i,   0, 1048576, 32, "n1",
                           KFLEET__TASK_STATE__SUCCEEDED, NULL};
        put_task(t, sweep5, i, &ts5);
        put_samples(t, sweep5, i, ms5[i], 3, -1);
        put_profile(t, sweep5, i, 3, 1);
    }
    {
        const tspec v5 = {KFLEET__TASK_KIND__VALIDATE,
                          1,
                          0,
                          1048576,
                          32,
                          "n1",
                          KFLEET__TASK_STATE__FAILED,
                          "kernel fast declares tolerances that cannot fail"};
        put_task(t, sweep5, 2, &v5);
        Kfleet__Result r = KFLEET__RESULT__INIT;
        r.error = "kernel fast declares tolerances that cannot fail";
        r.tol_abs = INFINITY;
        r.tol_rel = 1e-6;
        put_result(t, &r, sweep5, 2, KFLEET__TASK_STATE__FAILED);
    }
    /* A failure whose error is longer than the text report shows. */
    assert_int_equal(kf_store_next_sweep_id(t, &sweep6), 0);
    put_sweep(t, sweep6, "long-error", 0);
    {
        const tspec ts6 = {KFLEET__TASK_KIND__VALIDATE, 0,   0, 1024, 32, "n1",
                           KFLEET__TASK_STATE__FAILED,  NULL};
        put_task(t, sweep6, 0, &ts6);
        char long_err[4096];
        size_t off = 0;
        for (int l = 1; l <= 100; l++)
            off += (size_t)snprintf(long_err + off, sizeof long_err - off, "line %d of the error\n",
                                    l);
        Kfleet__Result r6 = KFLEET__RESULT__INIT;
        r6.error = long_err;
        put_result(t, &r6, sweep6, 0, KFLEET__TASK_STATE__FAILED);
        const tspec tb6 = {KFLEET__TASK_KIND__BUILD,   0,   0, 0, 0, "n1",
                           KFLEET__TASK_STATE__FAILED, NULL};
        put_task(t, sweep6, 1, &tb6);
        Kfleet__Result rb6 = KFLEET__RESULT__INIT;
        rb6.error = "compile failed:\nk.cu(3): warning: unused x\nk.cu(5): error: expected a "
                    "\";\"\n1 error detected in the compilation of \"k.cu\".";
        put_result(t, &rb6, sweep6, 1, KFLEET__TASK_STATE__FAILED);
    }
    /* A C kernel's error that is not UTF-8, with a C1 CSI, a bidi override
     * and DEL (issue 44). */
    assert_int_equal(kf_store_next_sweep_id(t, &sweep7), 0);
    put_sweep(t, sweep7, "bad-bytes", 0);
    {
        const tspec ts7 = {KFLEET__TASK_KIND__VALIDATE, 0,   0, 1024, 32, "n1",
                           KFLEET__TASK_STATE__FAILED,  NULL};
        put_task(t, sweep7, 0, &ts7);
        Kfleet__Result r7 = KFLEET__RESULT__INIT;
        r7.error = BAD_BYTES;
        put_result(t, &r7, sweep7, 0, KFLEET__TASK_STATE__FAILED);
    }
    assert_int_equal(kf_store_commit(&t, &err), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kf_store_close(&store);
    return nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

/* ---- helpers ---- */

static char *render(uint32_t sweep, kf_report_format fmt, int color)
{
    kf_err err;
    kf_txn *t = NULL;
    assert_int_equal(kf_store_begin(store, 1, &t, &err), 0);
    kf_buf out = KF_BUF_INIT;
    int rc = kf_report_render(t, sweep, fmt, color, &out, &err);
    if (rc)
        fail_msg("render: %s", err.msg);
    kf_store_abort(&t);
    /* KF_TEST_SHOW=1 prints what was rendered, for eyeballing the layout. */
    if (getenv("KF_TEST_SHOW"))
        fprintf(stderr, "%s\n", out.data);
    return kf_buf_detach(&out);
}

static json_t *render_json(uint32_t sweep)
{
    char *s = render(sweep, KF_REPORT_JSON, 0);
    json_error_t je;
    json_t *root = json_loads(s, 0, &je);
    if (!root)
        fail_msg("report JSON does not parse: %s at line %d", je.text, je.line);
    free(s);
    return root;
}

/* A task id as the report writes it: "0x" and hex. */
static const char *hexid(uint64_t id)
{
    static char b[4][24];
    static int k;
    k = (k + 1) % 4;
    snprintf(b[k], sizeof b[k], "0x%llx", (unsigned long long)id);
    return b[k];
}

static double num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        fail_msg("%s is not a number", key);
    return json_number_value(v);
}

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    if (!s)
        fail_msg("%s is not a string", key);
    return s;
}

static int has_flag(const json_t *row, const char *flag)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(row, "flags"), i,
                       f) if (strcmp(json_string_value(f), flag) == 0) return 1;
    return 0;
}

static void assert_near(double got, double want, double eps)
{
    if (!(fabs(got - want) <= eps))
        fail_msg("got %.17g, want %.17g", got, want);
}

/* Display columns from a to b: UTF-8 continuation bytes take none. */
static int display_col(const char *a, const char *b)
{
    int n = 0;
    for (; a < b; a++)
        n += ((unsigned char)*a & 0xC0) != 0x80;
    return n;
}

static const char *line_start(const char *floor, const char *p)
{
    while (p > floor && p[-1] != '\n')
        p--;
    return p;
}

/* ---- tests ---- */

static void test_parse_format(void **state)
{
    (void)state;
    assert_int_equal(kf_report_parse_format("table"), KF_REPORT_TABLE);
    assert_int_equal(kf_report_parse_format("md"), KF_REPORT_MD);
    assert_int_equal(kf_report_parse_format("markdown"), KF_REPORT_MD);
    assert_int_equal(kf_report_parse_format("json"), KF_REPORT_JSON);
    assert_int_equal(kf_report_parse_format("xml"), -1);
    assert_int_equal(kf_report_parse_format(""), -1);
}

static void test_unknown_sweep(void **state)
{
    (void)state;
    kf_err err;
    kf_txn *t = NULL;
    assert_int_equal(kf_store_begin(store, 1, &t, &err), 0);
    kf_buf out = KF_BUF_INIT;
    assert_int_equal(kf_report_render(t, 999, KF_REPORT_TABLE, 0, &out, &err), KF_ENOTFOUND);
    assert_string_equal(err.msg, "no sweep 999 in this store; `kfleet status` lists the sweeps");
    assert_int_equal(out.len, 0);
    kf_store_abort(&t);
    kf_buf_release(&out);
}

static void test_json(void **state)
{
    (void)state;
    json_t *root = render_json(sweep1);
    assert_string_equal(str(root, "schema"), "kfleet.report/2");
    assert_string_equal(str(root, "kfleet_version"), KF_VERSION);
    json_t *sw = json_object_get(root, "sweep");
    assert_int_equal((int)num(sw, "sweep_id"), (int)sweep1);
    assert_string_equal(str(sw, "created"), "2023-11-14T22:13:20Z");
    assert_string_equal(str(sw, "baseline"), "base");
    json_t *tot = json_object_get(root, "totals");
    assert_int_equal((int)num(tot, "tasks"), 8);
    assert_int_equal((int)num(tot, "succeeded"), 6);
    assert_int_equal((int)num(tot, "failed"), 1);
    assert_int_equal((int)num(tot, "timed_out"), 1);
    json_t *agents = json_object_get(root, "agents");
    assert_int_equal(json_array_size(agents), 1);
    assert_string_equal(str(json_array_get(agents, 0), "hostname"), "host1.example");

    /* Rows in (kernel, config, node) order. */
    json_t *rows = json_object_get(root, "rows");
    assert_int_equal(json_array_size(rows), 4);
    json_t *r0 = json_array_get(rows, 0), *r1 = json_array_get(rows, 1),
           *r2 = json_array_get(rows, 2), *r3 = json_array_get(rows, 3);
    assert_string_equal(str(r0, "kernel"), "base");
    assert_int_equal((int)num(json_object_get(r0, "params"), "n"), 1048576);
    assert_int_equal((int)num(json_object_get(r0, "params"), "block"), 32);
    assert_string_equal(str(r0, "node"), "n1");
    assert_string_equal(str(r0, "device"), "NVIDIA H100 80GB HBM3");

    /* Recomputed from the stored samples, not the agent's 42 s. */
    json_t *p0 = json_object_get(r0, "profile");
    assert_true(num(p0, "median_s") == 0.003);
    assert_true(num(p0, "min_s") == 0.001);
    assert_true(num(p0, "max_s") == 0.1);
    assert_near(num(p0, "gbps"), 1000, 1e-9);
    assert_near(num(p0, "gflops"), 2000, 1e-9);
    assert_near(num(p0, "pct_copy_ceiling"), 40, 1e-9);
    assert_near(num(p0, "pct_bf16_ceiling"), 0.2, 1e-9);
    assert_int_equal((int)num(p0, "samples"), 5);
    assert_int_equal((int)num(p0, "attempt"), 1);
    json_t *times = json_object_get(p0, "sample_seconds");
    assert_int_equal(json_array_size(times), 5);
    /* The evidence in stored (seq) order, exactly as stored. */
    assert_true(json_real_value(json_array_get(times, 0)) == 0.003);
    assert_true(json_real_value(json_array_get(times, 2)) == 0.1);
    assert_int_equal(json_array_size(json_object_get(r0, "flags")), 0);
    assert_near(num(r0, "speedup"), 1.0, 1e-12);
    json_t *v0 = json_object_get(r0, "validation");
    assert_true(json_is_true(json_object_get(v0, "passed")));
    assert_true(num(v0, "max_abs_err") == 2e-7);
    assert_int_equal(json_array_size(json_object_get(v0, "trials")), 2);
    /* A seed past 2^63 is written unsigned (a string), so it can be replayed. */
    assert_string_equal(str(json_array_get(json_object_get(v0, "trials"), 1), "seed"),
                        "18344560041459230117");

    /* Provenance of the row. */
    json_t *pv = json_object_get(r0, "provenance");
    assert_string_equal(str(pv, "agent_id"), "n1");
    assert_string_equal(str(pv, "hostname"), "host1.example");
    assert_string_equal(str(pv, "gpu_uuid"), "GPU-0123-4567");
    assert_string_equal(str(pv, "driver_version"), "550.54.15");
    assert_string_equal(str(pv, "compiler"), "gcc 12.2.0");
    assert_string_equal(str(pv, "kernel_hash"), HASH_BASE);
    assert_string_equal(str(pv, "artifact_hash"), ART_BASE);
    assert_string_equal(str(pv, "build_task_id"), hexid(kf_task_id(sweep1, 0)));
    assert_string_equal(str(p0, "task_id"), hexid(kf_task_id(sweep1, 3)));

    /* 4 stored samples, 5 claimed; one throttled; not converged. */
    json_t *p1 = json_object_get(r1, "profile");
    assert_int_equal((int)num(p1, "samples"), 4);
    assert_int_equal((int)num(p1, "samples_reported"), 5);
    assert_true(num(p1, "median_s") == 0.004);
    assert_true(has_flag(r1, "samples-mismatch"));
    assert_true(has_flag(r1, "throttled"));
    assert_true(has_flag(r1, "noisy"));
    /* The baseline's own configuration: speedup against itself. */
    assert_near(num(r1, "speedup"), 1.0, 1e-12);
    assert_true(json_is_null(json_object_get(r1, "validation")));

    /* fast cfg0: 1.5 ms against base's same configuration (3 ms) on n1. The
     * error: base's noise 1.4826 * MAD(1) / 3 = 49.42 %, so its median's
     * standard error is 1.2533 * 0.4942 / sqrt(5) = 27.70 %; fast's is 0. */
    assert_string_equal(str(r2, "kernel"), "fast");
    assert_near(num(r2, "speedup"), 2.0, 1e-12);
    assert_true(num(r2, "baseline_median_s") == 0.003);
    assert_near(num(r2, "speedup_err"), 2.0 * 1.2533 * (1.4826 / 3) / sqrt(5.0), 1e-9);
    /* Five samples are too few for a median interval: null, not a range. */
    assert_true(json_is_null(json_object_get(json_object_get(r2, "profile"), "median_ci95_s")));
    assert_true(has_flag(r2, "failed"));
    assert_false(has_flag(r2, "samples-mismatch"));
    json_t *v2 = json_object_get(r2, "validation");
    assert_true(json_is_false(json_object_get(v2, "passed")));
    assert_non_null(strstr(str(v2, "error"), "tolerance"));
    assert_string_equal(str(json_object_get(r2, "provenance"), "artifact_hash"), ART_FAST);

    /* The timed-out profile: no figures, null rather than 0. */
    json_t *p3 = json_object_get(r3, "profile");
    assert_string_equal(str(p3, "state"), "timed_out");
    assert_true(json_is_null(json_object_get(p3, "median_s")));
    assert_true(json_is_null(json_object_get(r3, "speedup")));
    assert_true(has_flag(r3, "failed"));

    json_t *builds = json_object_get(root, "builds");
    assert_int_equal(json_array_size(builds), 2);
    assert_string_equal(str(json_array_get(builds, 0), "kind"), "build");
    assert_string_equal(str(json_array_get(builds, 0), "artifact_hash"), ART_BASE);
    assert_true(num(json_array_get(builds, 0), "compile_s") == 1.25);

    json_t *failures = json_object_get(root, "failures");
    assert_int_equal(json_array_size(failures), 2);
    json_t *f0 = json_array_get(failures, 0), *f1 = json_array_get(failures, 1);
    assert_string_equal(str(f0, "task_id"), hexid(kf_task_id(sweep1, 5)));
    assert_string_equal(str(f0, "kind"), "validate");
    assert_string_equal(str(f0, "kernel"), "fast");
    assert_string_equal(str(f0, "error"), FAIL_ERR);
    assert_string_equal(str(f1, "state"), "timed_out");
    assert_non_null(strstr(str(f1, "error"), "timed out"));
    json_decref(root);
}

/* Discarded samples are counted and stored, never in the statistics; the
 * medians of SM clock and power are the kept samples'; under `keep` a row
 * mostly throttled is labelled sustained at the power cap. */
static void test_throttle_policy(void **state)
{
    (void)state;
    json_t *root = render_json(sweep4);
    json_t *rows = json_object_get(root, "rows");
    assert_int_equal(json_array_size(rows), 2);
    json_t *d = json_array_get(rows, 0), *k = json_array_get(rows, 1);
    json_t *pd = json_object_get(d, "profile"), *pk = json_object_get(k, "profile");
    assert_true(num(pd, "median_s") == 1e-3);
    assert_true(num(pd, "max_s") == 1e-3);
    assert_int_equal((int)num(pd, "samples"), 3);
    assert_int_equal((int)num(pd, "discarded_samples"), 2);
    assert_int_equal((int)num(pd, "sm_clock_median_mhz"), 1980);
    assert_true(num(pd, "power_median_w") == 600.0);
    assert_string_equal(str(pd, "throttle_policy"), "discard");
    assert_int_equal((int)num(pd, "clock_threshold_mhz"), 1485);
    assert_false(has_flag(d, "samples-mismatch"));
    assert_false(has_flag(d, "sustained-at-power-cap"));
    assert_string_equal(str(pk, "throttle_policy"), "keep");
    assert_int_equal((int)num(pk, "discarded_samples"), 0);
    assert_int_equal((int)num(pk, "samples"), 4);
    assert_int_equal((int)num(pk, "sm_clock_median_mhz"), 1200);
    assert_true(has_flag(k, "sustained-at-power-cap"));
    assert_true(has_flag(k, "imprecise"));
    assert_false(has_flag(k, "noisy"));
    assert_true(has_flag(k, "throttle-waits-capped"));
    assert_false(has_flag(d, "imprecise"));
    assert_false(has_flag(d, "throttle-waits-capped"));
    assert_true(num(pk, "precision_target_pct") == 0.5);
    assert_true(json_is_null(json_object_get(pk, "precision_pct"))); /* 4 samples */
    json_t *th = json_object_get(pk, "thermal");
    assert_string_equal(str(th, "protocol"), "sustained");
    assert_int_equal((int)num(th, "waits_skipped"), 2);
    assert_true(num(th, "rest_s") == 0);
    json_t *thd = json_object_get(pd, "thermal");
    assert_string_equal(str(thd, "protocol"), "burst");
    assert_true(num(thd, "rest_s") == 0.004);
    assert_string_equal(str(root, "thermal_protocol"), "burst, sustained");
    json_decref(root);
    char *txt = render(sweep4, KF_REPORT_TABLE, 0);
    assert_non_null(strstr(txt, "2 discarded (throttled)"));
    assert_non_null(strstr(txt, "sustained at the power cap"));
    assert_non_null(strstr(txt, "SM 1980 MHz 600 W"));
    assert_non_null(strstr(txt, "imprecise: too few samples"));
    assert_non_null(strstr(txt, "2 throttle waits skipped"));
    assert_non_null(strstr(txt, "thermal protocol: burst, sustained (after a warm-up to a steady "
                                "SM clock; burst: each sample after a rest as long, the kernel "
                                "as it runs alone; sustained: samples back to back, at the "
                                "power cap)\n"));
    free(txt);
}

/* Errors whole, to a bound (issue 33): the first 40 lines, then how many
 * more and where they are; a validation that failed with no trial shows
 * no error figure. */
static void test_long_error(void **state)
{
    (void)state;
    char *s = render(sweep6, KF_REPORT_TABLE, 0), more[96];
    assert_non_null(strstr(s, "      line 1 of the error\n"));
    assert_non_null(strstr(s, "      line 40 of the error\n"));
    assert_null(strstr(s, "line 41 of the error"));
    snprintf(more, sizeof more, "      ... 60 more lines: kfleet report %u --format json\n",
             sweep6);
    assert_non_null(strstr(s, more));
    assert_non_null(strstr(s, "FAIL: error, nothing measured"));
    assert_null(strstr(s, "max|err|"));
    /* A build error's cell: the announcing first line, then the line that
     * names the error (not the warning before it, not the count after). */
    assert_non_null(strstr(s, "compile failed: k.cu(5): error: expected a \";\"\n"));
    free(s);
}

/* Issue 44: an error that is not UTF-8 keeps its text in every format,
 * the odd byte shown as \xff (the JSON no longer says "<not UTF-8>"); the
 * JSON escapes DEL, C1 and bidi controls (\u009B), so the file holds none
 * raw and reads back as the kernel's characters; the table and Markdown
 * show them escaped. */
static void test_bad_bytes(void **state)
{
    (void)state;
    char *s = render(sweep7, KF_REPORT_JSON, 0);
    for (const char *c = s; *c; c++)
        if (strncmp(c, "\xc2\x9b", 2) == 0 || strncmp(c, "\xe2\x80\xae", 3) == 0 || *c == 0x7f)
            fail_msg("a raw control in the JSON at byte %zu", (size_t)(c - s));
    assert_non_null(strstr(s, "KFBYTES \\\\xff not UTF-8 \\u009B31m \\u202Eevil\\u007F done"));
    json_t *root = json_loads(s, 0, NULL);
    assert_non_null(root);
    const json_t *f0 = json_array_get(json_object_get(root, "failures"), 0);
    assert_string_equal(str(f0, "error"), "KFBYTES \\xff not UTF-8 \xc2\x9b"
                                          "31m \xe2\x80\xae"
                                          "evil\x7f done");
    json_decref(root);
    free(s);
    const char *escaped = "KFBYTES \\xff not UTF-8 \\u009b31m \\u202eevil\\x7f done";
    kf_report_format fmts[] = {KF_REPORT_TABLE, KF_REPORT_MD};
    for (int i = 0; i < 2; i++) {
        s = render(sweep7, fmts[i], 0);
        if (!strstr(s, escaped))
            fail_msg("format %d hides or passes the error raw:\n%s", i, s);
        free(s);
    }
}

static void test_nodes_any(void **state)
{
    (void)state;
    json_t *root = render_json(sweep2);
    json_t *rows = json_object_get(root, "rows");
    assert_int_equal(json_array_size(rows), 1);
    json_t *r0 = json_array_get(rows, 0);
    assert_string_equal(str(r0, "node"), "n1");
    assert_true(num(json_object_get(r0, "profile"), "median_s") == 0.002);
    /* No build task in this sweep: found through the build record. */
    json_t *pv = json_object_get(r0, "provenance");
    assert_string_equal(str(pv, "artifact_hash"), ART_BASE);
    assert_string_equal(str(pv, "build_task_id"), hexid(kf_task_id(sweep1, 0)));
    /* It is the baseline itself: its own best. */
    assert_near(num(r0, "speedup"), 1.0, 0);
    assert_int_equal(json_array_size(json_object_get(root, "builds")), 0);
    assert_int_equal(json_array_size(json_object_get(root, "failures")), 0);
    /* Schedule: 34 s of GPU attempts on n1's one GPU, the first assigned
     * 2 s after submission: ideal 2 + 34 = 36 s against a 60 s makespan. */
    json_t *sc = json_object_get(root, "schedule");
    assert_near(num(sc, "makespan_s"), 60, 1e-9);
    assert_near(num(sc, "gpu_busy_s"), 34, 1e-9);
    assert_true(num(sc, "gpu_attempts") == 2);
    assert_near(num(sc, "startup_s"), 2, 1e-9);
    assert_near(num(sc, "ideal_s"), 36, 1e-9);
    assert_near(num(sc, "over_ideal_pct"), (60.0 / 36 - 1) * 100, 1e-9);
    /* Its 26 idle s by cause: start-up 0-2 s, the gap 6-10 s between the
     * two attempts, the tail 40-60 s; n1's one slot holds all of it. */
    json_t *id = json_object_get(sc, "idle");
    assert_near(num(id, "startup_s"), 2, 1e-9);
    assert_near(num(id, "gaps_s"), 4, 1e-9);
    assert_near(num(id, "tail_s"), 20, 1e-9);
    assert_near(num(id, "busy_s"), 34, 1e-9);
    json_t *sl0 = json_array_get(json_object_get(id, "slots"), 0);
    assert_int_equal(json_array_size(json_object_get(id, "slots")), 1);
    assert_string_equal(str(sl0, "agent_id"), "n1");
    assert_true(num(sl0, "tasks") == 2);
    assert_near(num(sl0, "tail_s"), 20, 1e-9);
    /* Measured: its two kept samples of 2 ms, 4 ms of the 60 s on one GPU. */
    assert_near(num(sc, "timed_samples_s"), 0.004, 1e-12);
    assert_near(num(sc, "measured_pct"), 0.004 / 60 * 100, 1e-12);
    assert_near(num(json_object_get(sc, "measured_pct_by_agent"), "n1"), 0.004 / 60 * 100, 1e-12);
    /* Cost (issue 32): one evaluation in 60 s of n1's one GPU is 60 per
     * GPU-hour; at n1's 3.0 per GPU-hour, 0.05, all of it the one row's. */
    json_t *co = json_object_get(root, "cost");
    assert_string_equal(str(co, "slots"), "gpu");
    assert_true(num(co, "evaluations") == 1);
    assert_near(num(co, "evaluations_per_gpu_hour"), 60, 1e-9);
    assert_near(num(co, "cost"), 0.05, 1e-12);
    assert_near(num(co, "cost_per_evaluation"), 0.05, 1e-12);
    json_t *cn = json_array_get(json_object_get(co, "nodes"), 0);
    assert_string_equal(str(cn, "node"), "n1");
    assert_near(num(cn, "price_per_slot_hour"), 3.0, 0);
    assert_near(num(cn, "cost"), 0.05, 1e-12);
    json_decref(root);
    char *txt = render(sweep2, KF_REPORT_TABLE, 0);
    assert_non_null(strstr(txt, "idle: start-up 2.0 s, between tasks 4.0 s, tail 20.0 s; by slot "
                                "(start-up+gaps+tail s): n1/0 2.0+4.0+20.0\n"));
    assert_non_null(strstr(txt, "cost: 1 evaluations in 0.0167 GPU-hours = 60 per GPU-hour; 0.05 "
                                "at 3 per GPU-hour, 0.05 per evaluation\n"));
    assert_non_null(strstr(txt, "schedule: makespan 60.00 s"));
    assert_non_null(strstr(txt, "measured: 0.004 s of timed samples, 0.0% of the makespan on GPU "
                                "slots\n"));
    assert_non_null(
        strstr(txt, "ideal 36.00 s = start-up 2.00 s + GPU task time / GPU slots: +66.7%"));
    free(txt);
}

static void test_table(void **state)
{
    (void)state;
    char *s = render(sweep1, KF_REPORT_TABLE, 0);
    assert_non_null(strstr(s, "sweep 1: demo (sweeps/demo.yaml)"));
    assert_non_null(strstr(s, "2023-11-14T22:13:20Z"));
    assert_non_null(strstr(s, "host1.example"));
    assert_non_null(strstr(s, "base"));
    assert_non_null(strstr(s, "fast"));
    assert_non_null(strstr(s, "n=1048576 block=32"));
    assert_non_null(strstr(s, "FAIL"));
    assert_non_null(strstr(s, "pass max|err| 2.0e-07, 2 seeds"));
    assert_non_null(strstr(s, "3.000 ms"));
    assert_non_null(strstr(s, "1.500 ms"));
    assert_non_null(strstr(s, "1000.00"));
    assert_non_null(strstr(s, "2.00x"));
    assert_non_null(strstr(s, "%ceiling"));
    assert_non_null(strstr(s, "40% bw"));
    assert_non_null(strstr(s, "samples-mismatch"));
    assert_non_null(strstr(s, "validate failed: max abs error 0.5 exceeds tolerance"));
    /* Failures with their whole error (issue 33): the fourth line too. */
    assert_non_null(strstr(s, "expected 1.0"));
    assert_non_null(strstr(s, "      got 1.5\n"));
    assert_non_null(strstr(s, "a1a1a1a1a1a1"));
    assert_null(strchr(s, '\033'));
    assert_non_null(strstr(s, "profile failed: timed out: the task ran past its limit"));
    assert_non_null(strstr(s, "1 timed out"));
    /* Aligned in display columns (the min-max dash is three bytes): the
     * flags start under the "flags" header on every row. */
    const char *hdr = strstr(s, "  kernel");
    assert_non_null(hdr);
    int col = display_col(hdr, strstr(hdr, "flags"));
    const char *noisy = strstr(hdr, "noisy");
    const char *failed = strstr(hdr, "validate failed");
    assert_int_equal(display_col(line_start(hdr, noisy), noisy), col);
    assert_int_equal(display_col(line_start(hdr, failed), failed), col);
    /* No trailing blanks where the last cell is empty. */
    assert_null(strstr(s, " \n"));
    free(s);

    s = render(sweep1, KF_REPORT_TABLE, 1);
    assert_non_null(strstr(s, "\033[32mpass"));
    assert_non_null(strstr(s, "\033[31mFAIL"));
    assert_non_null(strstr(s, "\033[33m"));
    free(s);
}

static void test_outlier_nodes(void **state)
{
    (void)state;
    char *s = render(sweep3, KF_REPORT_JSON, 0);
    json_error_t je;
    json_t *root = json_loads(s, 0, &je);
    assert_non_null(root);
    json_t *rows = json_object_get(root, "rows");
    assert_int_equal(json_array_size(rows), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *r = json_array_get(rows, i);
        int is_n3 = strcmp(str(r, "node"), "n3") == 0;
        assert_int_equal(has_flag(r, "outlier"), is_n3);
        if (is_n3)
            assert_near(num(r, "outlier_pct"), (1.5 / 1.01 - 1) * 100, 1e-9);
        else
            assert_true(json_is_null(json_object_get(r, "outlier_pct")));
    }
    json_decref(root);
    free(s);
    s = render(sweep3, KF_REPORT_TABLE, 0);
    assert_non_null(strstr(s, "outlier node +49%"));
    free(s);
}

/* Issue 29: a row faster than the node can move its declared bytes is
 * flagged impossible in every format, with no speedup; a tolerance is never
 * null in JSON (a non-finite one is a string). */
static void test_impossible(void **state)
{
    (void)state;
    char *s = render(sweep5, KF_REPORT_JSON, 0);
    json_error_t je;
    json_t *root = json_loads(s, 0, &je);
    assert_non_null(root);
    json_t *rows = json_object_get(root, "rows");
    assert_int_equal(json_array_size(rows), 2);
    int seen = 0;
    for (size_t i = 0; i < 2; i++) {
        json_t *r = json_array_get(rows, i);
        json_t *im = json_object_get(r, "impossible");
        if (strcmp(str(r, "kernel"), "fast") == 0) {
            seen++;
            assert_true(has_flag(r, "impossible"));
            assert_string_equal(str(im, "of"), "copy bandwidth");
            assert_near(num(im, "times_ceiling"), 2.4, 1e-9);
            assert_true(json_is_null(json_object_get(r, "speedup")));
            json_t *v = json_object_get(r, "validation");
            assert_string_equal(str(v, "tol_abs"), "inf");
            assert_near(num(v, "tol_rel"), 1e-6, 1e-18);
        } else {
            assert_false(has_flag(r, "impossible"));
            assert_true(json_is_null(im));
            assert_near(num(r, "speedup"), 1, 1e-12);
        }
    }
    assert_int_equal(seen, 1);
    json_decref(root);
    free(s);
    s = render(sweep5, KF_REPORT_TABLE, 0);
    assert_non_null(strstr(s, "IMPOSSIBLE: 2.4x the node's copy bandwidth, no speedup"));
    free(s);
    s = render(sweep5, KF_REPORT_MD, 0);
    assert_non_null(strstr(s, "IMPOSSIBLE: 2.4x the node's copy bandwidth"));
    free(s);
    s = render(sweep5, KF_REPORT_CSV, 0);
    assert_non_null(strstr(s, "impossible"));
    free(s);
    s = render(sweep5, KF_REPORT_HTML, 0);
    assert_non_null(strstr(s, "impossible"));
    free(s);
}

static char *render_opts(uint32_t sweep, const kf_report_opts *o, int *rc_out)
{
    kf_err err;
    kf_txn *t = NULL;
    assert_int_equal(kf_store_begin(store, 1, &t, &err), 0);
    kf_buf out = KF_BUF_INIT;
    int rc = kf_report_render_opts(t, sweep, o, &out, &err);
    kf_store_abort(&t);
    *rc_out = rc;
    if (rc) {
        kf_buf_reset(&out);
        kf_buf_adds(&out, err.msg);
    }
    return kf_buf_detach(&out);
}

/* CSV: a header and one line per row, CRLF, the same figures as the JSON,
 * nulls as empty fields, provenance columns on request. */
static void test_csv(void **state)
{
    (void)state;
    kf_report_opts o = {.fmt = KF_REPORT_CSV, .provenance = 1};
    int rc;
    char *s = render_opts(sweep1, &o, &rc);
    assert_int_equal(rc, 0);
    size_t lines = 0;
    for (const char *p = s; (p = strstr(p, "\r\n")); p += 2)
        lines++;
    assert_int_equal(lines, 1 + 4); /* header + 4 rows */
    assert_true(strncmp(s, "kernel,params,node,device,validation,", 37) == 0);
    assert_non_null(strstr(s, ",gpu_uuid,"));
    /* base cfg0: median 3 ms, GPU UUID in the provenance columns */
    assert_non_null(strstr(s, "base,n=1048576;block=32,n1,NVIDIA H100 80GB HBM3,pass,"));
    assert_non_null(strstr(s, ",0.003,"));
    assert_non_null(strstr(s, "GPU-0123-4567"));
    /* fast cfg1 timed out: no median, no speedup: empty fields, not 0 or nan */
    assert_null(strstr(s, "nan"));
    assert_non_null(strstr(s, "fast,n=2097152;block=64,n1,NVIDIA H100 80GB HBM3,,"));
    free(s);
}

/* --baseline: another kernel of the sweep stands as the baseline; a name
 * that is not one is an error naming the kernels there are. --provenance
 * adds a section to the table. */
static void test_options(void **state)
{
    (void)state;
    assert_int_equal(kf_report_parse_group("gpu"), KF_GROUP_GPU);
    assert_int_equal(kf_report_parse_group("node"), KF_GROUP_NODE);
    assert_int_equal(kf_report_parse_group("kernel"), KF_GROUP_KERNEL);
    assert_int_equal(kf_report_parse_group("nodes"), -1);
    assert_int_equal(kf_report_parse_format("csv"), KF_REPORT_CSV);

    kf_report_opts o = {.fmt = KF_REPORT_JSON, .baseline = "fast"};
    int rc;
    char *s = render_opts(sweep1, &o, &rc);
    assert_int_equal(rc, 0);
    json_error_t je;
    json_t *root = json_loads(s, 0, &je);
    assert_non_null(root);
    assert_string_equal(str(json_object_get(root, "sweep"), "baseline"), "fast");
    /* base cfg0 (3 ms) against fast cfg0 (1.5 ms): 0.5 */
    assert_near(num(json_array_get(json_object_get(root, "rows"), 0), "speedup"), 0.5, 1e-12);
    json_decref(root);
    free(s);

    /* For a program's own reading: no sample arrays, all else the same. */
    kf_report_opts lean = {.fmt = KF_REPORT_JSON, .omit_samples = 1};
    s = render_opts(sweep1, &lean, &rc);
    assert_int_equal(rc, 0);
    assert_null(strstr(s, "sample_seconds"));
    assert_non_null(strstr(s, "\"median_s\""));
    free(s);

    o.baseline = "slow";
    s = render_opts(sweep1, &o, &rc);
    assert_int_equal(rc, KF_EINVAL);
    assert_non_null(strstr(s, "--baseline slow is not a kernel of sweep"));
    assert_non_null(strstr(s, "base, fast"));
    free(s);

    kf_report_opts t = {.fmt = KF_REPORT_TABLE, .group_by = KF_GROUP_NODE, .provenance = 1};
    s = render_opts(sweep1, &t, &rc);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(s, "provenance:"));
    assert_non_null(strstr(s, "GPU-0123-4567, driver 550.54.15"));
    assert_non_null(strstr(s, "source b0b0b0b0b0b0, binary a1a1a1a1a1a1"));
    free(s);
}

static void test_markdown(void **state)
{
    (void)state;
    char *s = render(sweep1, KF_REPORT_MD, 1);
    assert_true(strncmp(s, "# Sweep 1: demo", 15) == 0);
    assert_non_null(strstr(s, "\n| kernel | params |"));
    assert_non_null(strstr(s, "\n| --- | --- |"));
    assert_non_null(strstr(s, "---: |"));
    assert_non_null(strstr(s, "| base | n=1048576 block=32 |"));
    assert_non_null(strstr(s, "## Builds"));
    assert_non_null(strstr(s, "## Failures"));
    /* Colour is for terminals only. */
    assert_null(strchr(s, '\033'));
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_format),  cmocka_unit_test(test_unknown_sweep),
        cmocka_unit_test(test_json),          cmocka_unit_test(test_nodes_any),
        cmocka_unit_test(test_table),         cmocka_unit_test(test_markdown),
        cmocka_unit_test(test_outlier_nodes), cmocka_unit_test(test_csv),
        cmocka_unit_test(test_options),       cmocka_unit_test(test_throttle_policy),
        cmocka_unit_test(test_impossible),    cmocka_unit_test(test_long_error),
        cmocka_unit_test(test_bad_bytes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
