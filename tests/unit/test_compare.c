/* Tests for coordinator/report/compare.c: two sweeps written into a store with
 * known samples, compared configuration by configuration.
 *
 * Sweep 1 (A) and sweep 2 (B), kernel "k", profiles only:
 *   n=1 on n1:  A 10 ms (noise 0), B 12 ms (noise 0)      -> +20 %, slower, regression
 *   n=2 on n1:  A 10 ms, B 10.1 ms, both noisy (~10 %)     -> +1 %, same
 *   n=3 on n1:  A 10 ms, B 5 ms                            -> -50 %, faster
 *   n=4:        A on n1, B on n2 (same device "H100")      -> matched by device, same
 *   n=5:        only in A;  n=6: only in B
 * So with threshold 5: 1 regression (exit 1); with threshold 25: none.
 *
 * Issue 29, k(n=1) on n1 at 10 ms in each, A the same:
 *   sweeps 3 -> 4: B declares 1 TB moved per run on n9, whose copy ceiling
 *     is 1 GB/s: 100,000x, impossible (not "same")
 *   sweeps 5 -> 6: B's tolerances are tol_abs inf where A's are 1e-06:
 *     changed (not "same")
 *   sweeps 3 -> 7: the kernel's source hash differs: changed, unless
 *     KF_COMPARE_ACCEPT_SOURCE. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "report/compare.h"
#include "common/util.h"

#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static char home[64], dir[128]; /* dir: HOME/state/store, as `kfleet --home HOME` reads it */
static kf_store *store;
static double next_bytes;            /* the next profile's declared bytes */
static const char *next_hash = "aa"; /* the next sweep's kernel hash */
static uint32_t next_kernel;         /* the next task's kernel */
static const char *next_pin = "";    /* the next task's pin */

static int rm_cb(const char *p, const struct stat *s, int f, struct FTW *w)
{
    (void)s;
    (void)f;
    (void)w;
    return remove(p);
}

/* A succeeded task of k(n) on `node`, of configuration `config`. */
static void put_task(kf_txn *t, uint32_t sweep, uint32_t idx, uint32_t config,
                     Kfleet__TaskKind kind, int64_t n, const char *node)
{
    Kfleet__Param pn = KFLEET__PARAM__INIT;
    Kfleet__Param *params[1] = {&pn};
    pn.name = "n";
    pn.value = n;
    Kfleet__Task task = KFLEET__TASK__INIT;
    task.task_id = kf_task_id(sweep, idx);
    task.sweep_id = sweep;
    task.kind = kind;
    task.kernel_index = next_kernel;
    task.pin_agent = (char *)next_pin;
    task.config_index = config;
    task.n_params = 1;
    task.params = params;
    task.agent_id = (char *)node;
    task.state = KFLEET__TASK_STATE__SUCCEEDED;
    task.attempts = 1;
    assert_int_equal(kf_store_put_task(t, &task), 0);
}

/* A succeeded profile of k(n) on `node`, whose samples are `ms`. */
static void put_profile(kf_txn *t, uint32_t sweep, uint32_t idx, int64_t n, const char *node,
                        const double *ms, size_t count)
{
    put_task(t, sweep, idx, idx, KFLEET__TASK_KIND__PROFILE, n, node);
    Kfleet__ProfileStats ps = KFLEET__PROFILE_STATS__INIT;
    ps.samples = (uint32_t)count;
    ps.converged = 1;
    ps.bytes = next_bytes;
    Kfleet__Result r = KFLEET__RESULT__INIT;
    r.task_id = kf_task_id(sweep, idx);
    r.attempt = 1;
    r.state = KFLEET__TASK_STATE__SUCCEEDED;
    r.agent_id = (char *)node;
    r.profile = &ps;
    r.sample_count = (uint32_t)count;
    int dup = -1;
    assert_int_equal(kf_store_put_result(t, &r, &dup), 0);
    for (size_t i = 0; i < count; i++) {
        Kfleet__Sample s = KFLEET__SAMPLE__INIT;
        s.seq = (uint32_t)i;
        s.seconds = ms[i] / 1000.0;
        assert_int_equal(kf_store_put_sample(t, kf_task_id(sweep, idx), 1, &s, &dup), 0);
    }
}

static void put_sweep(kf_txn *t, uint32_t id)
{
    Kfleet__KernelRef k = KFLEET__KERNEL_REF__INIT;
    Kfleet__KernelRef *kernels[1] = {&k};
    k.name = "k";
    k.hash = (char *)next_hash;
    k.cuda = 1;
    Kfleet__Sweep sw = KFLEET__SWEEP__INIT;
    sw.sweep_id = id;
    sw.name = id % 2 ? "before" : "after";
    sw.n_kernels = 1;
    sw.kernels = kernels;
    sw.max_attempts = 1;
    assert_int_equal(kf_store_put_sweep(t, &sw), 0);
}

/* A succeeded validation of k(n) on node with the given tolerances. */
static void put_validate(kf_txn *t, uint32_t sweep, uint32_t idx, int64_t n, const char *node,
                         double tol_abs, double tol_rel)
{
    put_task(t, sweep, idx, 0, KFLEET__TASK_KIND__VALIDATE, n, node);
    Kfleet__ValidateTrial tr = KFLEET__VALIDATE_TRIAL__INIT;
    Kfleet__ValidateTrial *trials[1] = {&tr};
    tr.passed = 1;
    Kfleet__Result r = KFLEET__RESULT__INIT;
    r.task_id = kf_task_id(sweep, idx);
    r.attempt = 1;
    r.state = KFLEET__TASK_STATE__SUCCEEDED;
    r.agent_id = (char *)node;
    r.n_trials = 1;
    r.trials = trials;
    r.tol_abs = tol_abs;
    r.tol_rel = tol_rel;
    int dup = -1;
    assert_int_equal(kf_store_put_result(t, &r, &dup), 0);
}

static void put_agent(kf_txn *t, const char *id)
{
    Kfleet__GpuInfo gpu = KFLEET__GPU_INFO__INIT;
    Kfleet__GpuInfo *gpus[1] = {&gpu};
    gpu.name = "H100";
    Kfleet__AgentInfo ai = KFLEET__AGENT_INFO__INIT;
    ai.agent_id = (char *)id;
    ai.n_gpus = 1;
    ai.gpus = gpus;
    assert_int_equal(kf_store_put_agent(t, &ai), 0);
}

static int setup(void **state)
{
    (void)state;
    snprintf(home, sizeof home, "/tmp/kf-test-compare.XXXXXX");
    if (!mkdtemp(home))
        return -1;
    snprintf(dir, sizeof dir, "%s/state/store", home);
    kf_err err;
    assert_int_equal(kf_mkdirs(dir, 0700, &err), 0);
    assert_int_equal(kf_store_open(dir, 0, &store, &err), 0);
    kf_txn *t = NULL;
    assert_int_equal(kf_store_begin(store, 0, &t, &err), 0);
    put_agent(t, "n1");
    put_agent(t, "n2");
    put_sweep(t, 1);
    put_sweep(t, 2);
    static const double ten[5] = {10, 10, 10, 10, 10}, twelve[5] = {12, 12, 12, 12, 12},
                        five[5] = {5, 5, 5, 5, 5}, noisy_a[5] = {9, 10, 11, 8, 12},
                        noisy_b[5] = {9.1, 10.1, 11.1, 8.1, 12.1};
    put_profile(t, 1, 0, 1, "n1", ten, 5);
    put_profile(t, 2, 0, 1, "n1", twelve, 5);
    put_profile(t, 1, 1, 2, "n1", noisy_a, 5);
    put_profile(t, 2, 1, 2, "n1", noisy_b, 5);
    put_profile(t, 1, 2, 3, "n1", ten, 5);
    put_profile(t, 2, 2, 3, "n1", five, 5);
    put_profile(t, 1, 3, 4, "n1", ten, 5);
    put_profile(t, 2, 3, 4, "n2", ten, 5);
    put_profile(t, 1, 4, 5, "n1", ten, 5);
    put_profile(t, 2, 4, 6, "n1", ten, 5);
    /* Issue 29 (the header's sweeps 3 to 7). */
    Kfleet__GpuInfo gpu = KFLEET__GPU_INFO__INIT;
    Kfleet__GpuInfo *gpus[1] = {&gpu};
    gpu.name = "H100";
    Kfleet__AgentInfo slow = KFLEET__AGENT_INFO__INIT;
    slow.agent_id = "n9";
    slow.n_gpus = 1;
    slow.gpus = gpus;
    slow.ceiling_copy_gbps = 1;
    assert_int_equal(kf_store_put_agent(t, &slow), 0);
    for (uint32_t sw = 3; sw <= 7; sw++) {
        next_hash = sw == 7 ? "bb" : "aa";
        put_sweep(t, sw);
        next_bytes = sw == 4 ? 1e12 : 0;
        put_profile(t, sw, 0, 1, sw == 4 ? "n9" : "n1", ten, 5);
        put_validate(t, sw, 1, 1, sw == 4 ? "n9" : "n1", sw == 6 ? INFINITY : 1e-6, 1e-5);
    }
    next_bytes = 0;
    next_hash = "aa";
    assert_int_equal(kf_store_commit(&t, &err), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kf_store_close(&store);
    return nftw(home, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

static char *compare(uint32_t a, uint32_t b, double threshold, kf_compare_format json,
                     kf_compare_result *res)
{
    kf_err err;
    kf_txn *t = NULL;
    assert_int_equal(kf_store_begin(store, 1, &t, &err), 0);
    kf_buf out = KF_BUF_INIT;
    int rc = kf_compare_render(t, a, b, threshold, 0, json, &out, res, &err);
    kf_store_abort(&t);
    if (rc)
        print_message("%s\n", err.msg);
    assert_int_equal(rc, 0);
    return kf_buf_detach(&out);
}

static void test_table(void **state)
{
    (void)state;
    kf_compare_result res;
    char *s = compare(1, 2, 5, KF_COMPARE_TABLE, &res);
    assert_int_equal(res.pairs, 4);
    assert_int_equal(res.slower, 1);
    assert_int_equal(res.faster, 1);
    assert_int_equal(res.same, 2);
    assert_int_equal(res.broken, 1); /* n=5 passed in A and is missing from B */
    assert_int_equal(res.only_b, 1);
    assert_int_equal(res.regressions, 2);
    assert_non_null(strstr(s, "+20.00%"));
    assert_non_null(strstr(s, "REGRESSION"));
    assert_non_null(strstr(s, "-50.00%"));
    assert_non_null(strstr(s, "missing from sweep B"));
    assert_non_null(strstr(s, "only in B"));
    assert_non_null(strstr(s, "2 regressions (threshold 5.0%)"));
    /* Regressions come first: the broken one, then the slower one. */
    const char *broken = strstr(s, "missing from sweep B"), *slower = strstr(s, "+20.00%"),
               *faster = strstr(s, "-50.00%");
    assert_true(broken < slower && slower < faster);
    free(s);

    /* A threshold above the slowdown: slower, but only the missing one is a regression. */
    s = compare(1, 2, 25, KF_COMPARE_TABLE, &res);
    assert_int_equal(res.slower, 1);
    assert_int_equal(res.regressions, 1);
    free(s);

    /* Reversed, the slowdown is a speed-up, and B's own n=6 is missing. */
    s = compare(2, 1, 5, KF_COMPARE_TABLE, &res);
    assert_int_equal(res.regressions, 2); /* n=3: 5 ms -> 10 ms; n=6 missing */
    assert_int_equal(res.faster, 1);
    free(s);

    /* Markdown, for CI bots: the same rows in a table. */
    s = compare(1, 2, 5, KF_COMPARE_MD, &res);
    assert_non_null(strstr(s, "| kernel | params | node A | node B |"));
    assert_non_null(strstr(s, "**REGRESSION**"));
    free(s);
}

static void test_json(void **state)
{
    (void)state;
    kf_compare_result res;
    char *s = compare(1, 2, 5, KF_COMPARE_JSON, &res);
    json_error_t je;
    json_t *o = json_loads(s, 0, &je);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "schema")), "kfleet.compare/2");
    json_t *rows = json_object_get(o, "rows");
    assert_int_equal(json_array_size(rows), 6); /* 4 in both, 1 only in A, 1 only in B */
    int seen_device_match = 0, seen_same = 0;
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        const char *params = json_string_value(json_object_get(r, "params"));
        const char *verdict = json_string_value(json_object_get(r, "verdict"));
        if (strcmp(params, "n=4") == 0) {
            assert_string_equal(json_string_value(json_object_get(json_object_get(r, "a"), "node")),
                                "n1");
            assert_string_equal(json_string_value(json_object_get(json_object_get(r, "b"), "node")),
                                "n2");
            seen_device_match = 1;
        }
        if (strcmp(params, "n=2") == 0) {
            /* +1 % inside a ~15 % band (two noisy profiles combined) */
            assert_string_equal(verdict, "same");
            assert_true(json_real_value(json_object_get(r, "noise_band_pct")) > 1);
            seen_same = 1;
        }
    }
    assert_true(seen_device_match && seen_same);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(o, "summary"), "regressions")), 2);
    json_decref(o);
    free(s);
}

/* Issue 29: what B passes with is not called same or faster when a row is
 * impossible or the check changed; each is a regression saying why. */
static void test_judgement(void **state)
{
    (void)state;
    kf_compare_result res;
    char *s = compare(3, 4, 5, KF_COMPARE_TABLE, &res);
    assert_int_equal(res.impossible, 1);
    assert_int_equal(res.same, 0);
    assert_int_equal(res.regressions, 1);
    assert_non_null(strstr(s, "REGRESSION impossible: B 100000.0x the node's copy bandwidth"));
    free(s);
    s = compare(5, 6, 5, KF_COMPARE_JSON, &res);
    assert_int_equal(res.changed, 1);
    assert_int_equal(res.regressions, 1);
    assert_non_null(strstr(s, "tolerances changed: tol_abs 1e-06 tol_rel 1e-05 -> tol_abs inf "
                              "tol_rel 1e-05"));
    assert_non_null(strstr(s, "\"verdict\": \"changed\""));
    free(s);
    s = compare(3, 7, 5, KF_COMPARE_TABLE, &res);
    assert_int_equal(res.changed, 1);
    assert_non_null(strstr(s, "kernel source changed (aa -> bb)"));
    free(s);
    /* Accepting a changed source: the same times are "same", no regression. */
    kf_err err;
    kf_txn *t = NULL;
    assert_int_equal(kf_store_begin(store, 1, &t, &err), 0);
    kf_buf out = KF_BUF_INIT;
    assert_int_equal(
        kf_compare_render(t, 3, 7, 5, KF_COMPARE_ACCEPT_SOURCE, KF_COMPARE_TABLE, &out, &res, &err),
        0);
    kf_store_abort(&t);
    kf_buf_release(&out);
    assert_int_equal(res.changed, 0);
    assert_int_equal(res.same, 1);
    assert_int_equal(res.regressions, 0);
}

static void test_missing(void **state)
{
    (void)state;
    kf_err err;
    kf_txn *t = NULL;
    assert_int_equal(kf_store_begin(store, 1, &t, &err), 0);
    kf_buf out = KF_BUF_INIT;
    kf_compare_result res;
    assert_int_equal(kf_compare_render(t, 1, 99, 5, 0, KF_COMPARE_TABLE, &out, &res, &err),
                     KF_ENOTFOUND);
    assert_non_null(strstr(err.msg, "no sweep 99"));
    kf_store_abort(&t);
    kf_buf_release(&out);
}

/* The CLI's exit codes, the CI gate: 1 on a regression, 0 without, 2 for
 * bad usage or a sweep that does not exist. */
static int cli(const char *args)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s/kfleet --home %s compare %s >/dev/null 2>&1", KF_BINARY_DIR, home,
             args);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_exit_codes(void **state)
{
    (void)state;
    assert_int_equal(cli("1 2"), 1);
    assert_int_equal(cli("1 2 --threshold 25"), 1); /* n=5 is still missing from B */
    assert_int_equal(cli("1 2 --threshold 25%"), 1);
    assert_int_equal(cli("1 2 --format md"), 1);
    assert_int_equal(cli("1 2 --format json"), 1);
    assert_int_equal(cli("1 9"), 2);
    assert_int_equal(cli("1"), 2);
    assert_int_equal(cli("1 2 --threshold -3"), 2);
    assert_int_equal(cli("1 2 --format html"), 2);
    assert_int_equal(cli("3 4"), 1); /* impossible */
    assert_int_equal(cli("5 6"), 1); /* tolerances changed */
    assert_int_equal(cli("3 7"), 1); /* source changed */
    assert_int_equal(cli("3 7 --accept-changed-source"), 0);
}

/* A `nodes: any` sweep's baseline runs on each agent that ran a candidate
 * of its configuration (issue 41): A (sweep 10) ran on n1 and n2, so its
 * baseline has a row on each; B (sweep 11) on n1 alone. The baseline's
 * row on n2 is no configuration missing from B (nor, the other way, new):
 * left out, where it would be "broken", a regression. */
static void test_baseline_on_more_nodes(void **state)
{
    (void)state;
    kf_err err;
    kf_txn *t = NULL;
    assert_int_equal(kf_store_begin(store, 0, &t, &err), 0);
    Kfleet__KernelRef kb = KFLEET__KERNEL_REF__INIT, kc = KFLEET__KERNEL_REF__INIT;
    Kfleet__KernelRef *kernels[2] = {&kb, &kc};
    kb.name = "base";
    kc.name = "cand";
    kb.hash = kc.hash = "aa";
    static const double ten[5] = {10, 10, 10, 10, 10}, five[5] = {5, 5, 5, 5, 5};
    for (uint32_t id = 10; id <= 11; id++) {
        Kfleet__Sweep sw = KFLEET__SWEEP__INIT;
        sw.sweep_id = id;
        sw.name = "nodes";
        sw.n_kernels = 2;
        sw.kernels = kernels;
        sw.baseline = "base";
        assert_int_equal(kf_store_put_sweep(t, &sw), 0);
        next_kernel = 0;
        put_profile(t, id, 0, 1, "n1", ten, 5);
        next_kernel = 1;
        put_profile(t, id, 1, 1, id == 10 ? "n2" : "n1", five, 5);
        if (id == 10) { /* the baseline made for n2 */
            next_kernel = 0;
            next_pin = "n2";
            put_profile(t, id, 2, 1, "n2", ten, 5);
            next_pin = "";
        }
    }
    next_kernel = 0;
    assert_int_equal(kf_store_commit(&t, &err), 0);
    kf_compare_result res;
    for (int way = 0; way < 2; way++) {
        char *s = compare(way ? 11 : 10, way ? 10 : 11, 5, KF_COMPARE_JSON, &res);
        assert_int_equal(res.regressions, 0);
        assert_int_equal(res.broken, 0);
        assert_int_equal(res.only_b, 0);
        assert_int_equal(res.same, 2); /* base on n1, cand (n2 against n1: one device) */
        json_error_t je;
        json_t *root = json_loads(s, 0, &je);
        assert_int_equal(json_array_size(json_object_get(root, "rows")), 2);
        json_decref(root);
        free(s);
    }
}

/* The same code run twice on a machine that was 25 % slower the second
 * time: sweeps 40 -> 41, k(n=1..4) all 10 ms -> 12.5 ms and n=5 10 ms ->
 * 16 ms, one source. The machine's shift (+25 %, from the five controls)
 * is no regression of each; n=5 is 28 % slower than the machine and is. */
static void test_machine_shift(void **state)
{
    (void)state;
    kf_err err;
    kf_txn *t = NULL;
    assert_int_equal(kf_store_begin(store, 0, &t, &err), 0);
    put_sweep(t, 40);
    put_sweep(t, 41);
    static const double ten[3] = {10, 10, 10}, slow[3] = {12.5, 12.5, 12.5},
                        slower[3] = {16, 16, 16};
    for (uint32_t i = 0; i < 5; i++) {
        put_profile(t, 40, i, i + 1, "n1", ten, 3);
        put_profile(t, 41, i, i + 1, "n1", i < 4 ? slow : slower, 3);
    }
    assert_int_equal(kf_store_commit(&t, &err), 0);
    kf_compare_result res;
    char *s = compare(40, 41, 5, KF_COMPARE_TABLE, &res);
    assert_int_equal(res.machine_controls, 5);
    assert_true(fabs(res.machine_shift_pct - 25) < 1e-9);
    assert_true(fabs(res.machine_spread_pct) < 1e-9);
    assert_int_equal(res.same, 4);
    assert_int_equal(res.slower, 1);
    assert_int_equal(res.regressions, 1);
    assert_non_null(strstr(s, "the 5 configurations with the same kernel source ran +25.00% in B"));
    assert_non_null(strstr(s, "+60.00%")); /* the change as measured */
    assert_non_null(strstr(s, "+28.00% against the machine's +25.00%"));
    free(s);
    s = compare(40, 41, 30, KF_COMPARE_JSON, &res);
    assert_int_equal(res.regressions, 0);
    json_error_t je;
    json_t *root = json_loads(s, 0, &je);
    assert_non_null(root);
    json_t *m = json_object_get(root, "machine");
    assert_int_equal(json_integer_value(json_object_get(m, "controls")), 5);
    assert_true(fabs(json_real_value(json_object_get(m, "shift_pct")) - 25) < 1e-9);
    json_decref(root);
    free(s);
    /* Two sweeps of other sources tell nothing of the machine: 3 -> 7's
     * one pair is judged as measured. */
    s = compare(3, 7, 5, KF_COMPARE_TABLE, &res);
    assert_int_equal(res.machine_controls, 0);
    assert_null(strstr(s, "machine:"));
    free(s);
}

/* An agent of a host's: its provenance (hostname, CPU) is what "the same
 * machine" reads. */
static void put_host_agent(kf_txn *t, const char *id, const char *host)
{
    Kfleet__AgentInfo ai = KFLEET__AGENT_INFO__INIT;
    ai.agent_id = (char *)id;
    ai.hostname = (char *)host;
    ai.cpu_model = "Xeon";
    ai.version = "1";
    assert_int_equal(kf_store_put_agent(t, &ai), 0);
}

/* Issue 43 item 5: the same code on the same machine never exits 1. Sweeps
 * 50 -> 51: kernel k (one source) n=1..5 at 10 ms on h1, then n=1..4 at
 * 12.5 ms and n=5 at 16 ms on h2, another agent of the same host "box":
 * n=5 moved +28 % against the machine's +25 %, beyond its band — "same code,
 * moved", no regression. 52 -> 53: the same times, B on h3 of host "other":
 * n=5 is judged as any pair, slower, a regression. 54 -> 55: a second
 * kernel j whose source changed (timed with KF_COMPARE_ACCEPT_SOURCE) runs
 * +20 % against the machine while the same code k moved up to 28 %: within
 * what the same code did, not told apart ("same"); 56 -> 57, where k moved
 * only with the machine, the same +20 % of j is slower, a regression. */
static void test_same_machine(void **state)
{
    (void)state;
    kf_err err;
    kf_txn *t = NULL;
    assert_int_equal(kf_store_begin(store, 0, &t, &err), 0);
    put_host_agent(t, "h1", "box");
    put_host_agent(t, "h2", "box");
    put_host_agent(t, "h3", "other");
    static const double ten[3] = {10, 10, 10}, slow[3] = {12.5, 12.5, 12.5},
                        slower[3] = {16, 16, 16}, j_b[3] = {15, 15, 15};
    for (uint32_t sw = 50; sw <= 53; sw++) {
        put_sweep(t, sw);
        const char *node = sw == 50 || sw == 52 ? "h1" : sw == 51 ? "h2" : "h3";
        for (uint32_t i = 0; i < 5; i++)
            put_profile(t, sw, i, i + 1, node, sw % 2 == 0 ? ten : i < 4 ? slow : slower, 3);
    }
    Kfleet__KernelRef kk = KFLEET__KERNEL_REF__INIT, kj = KFLEET__KERNEL_REF__INIT;
    Kfleet__KernelRef *kernels[2] = {&kk, &kj};
    kk.name = "k";
    kk.hash = "aa";
    kj.name = "j";
    for (uint32_t sw = 54; sw <= 57; sw++) {
        kj.hash = sw % 2 == 0 ? "j1" : "j2";
        Kfleet__Sweep sweep = KFLEET__SWEEP__INIT;
        sweep.sweep_id = sw;
        sweep.name = "two";
        sweep.n_kernels = 2;
        sweep.kernels = kernels;
        assert_int_equal(kf_store_put_sweep(t, &sweep), 0);
        next_kernel = 0;
        for (uint32_t i = 0; i < 5; i++)
            put_profile(t, sw, i, i + 1, "h1",
                        sw % 2 == 0         ? ten
                        : i < 4 || sw == 57 ? slow
                                            : slower,
                        3);
        next_kernel = 1;
        put_profile(t, sw, 5, 9, "h1", sw % 2 == 0 ? ten : j_b, 3);
        next_kernel = 0;
    }
    assert_int_equal(kf_store_commit(&t, &err), 0);
    kf_compare_result res;
    char *s = compare(50, 51, 5, KF_COMPARE_TABLE, &res);
    assert_int_equal(res.machine_controls, 5);
    assert_int_equal(res.moved, 1);
    assert_int_equal(res.slower, 0);
    assert_int_equal(res.regressions, 0);
    assert_true(fabs(res.machine_moved_pct - 28) < 1e-9);
    assert_non_null(strstr(s, "same code, moved: +28.00% against the machine's +25.00%: the "
                              "same code on the same machine (box)"));
    free(s);
    s = compare(52, 53, 5, KF_COMPARE_JSON, &res);
    assert_int_equal(res.moved, 0);
    assert_int_equal(res.slower, 1);
    assert_int_equal(res.regressions, 1);
    free(s);
    kf_buf out = KF_BUF_INIT;
    assert_int_equal(kf_store_begin(store, 1, &t, &err), 0);
    assert_int_equal(kf_compare_render(t, 54, 55, 5, KF_COMPARE_ACCEPT_SOURCE, KF_COMPARE_TABLE,
                                       &out, &res, &err),
                     0);
    assert_int_equal(res.moved, 1);  /* k n=5, as in 50 -> 51 */
    assert_int_equal(res.slower, 0); /* j +20 % within k's 28 % */
    assert_int_equal(res.regressions, 0);
    kf_buf_reset(&out);
    assert_int_equal(kf_compare_render(t, 56, 57, 5, KF_COMPARE_ACCEPT_SOURCE, KF_COMPARE_TABLE,
                                       &out, &res, &err),
                     0);
    assert_true(fabs(res.machine_moved_pct) < 1e-9);
    assert_int_equal(res.slower, 1);
    assert_int_equal(res.regressions, 1);
    assert_non_null(strstr(out.data, "+20.00% against the machine's +25.00%"));
    kf_store_abort(&t);
    kf_buf_release(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),         cmocka_unit_test(test_json),
        cmocka_unit_test(test_judgement),     cmocka_unit_test(test_missing),
        cmocka_unit_test(test_exit_codes),    cmocka_unit_test(test_baseline_on_more_nodes),
        cmocka_unit_test(test_machine_shift), cmocka_unit_test(test_same_machine),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
