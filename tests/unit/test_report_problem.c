/* test_report_problem — a problem sweep's report as a leaderboard
 * (report_problem.c, issue 30 item 3) and `kfleet compare` of two sweeps of
 * a problem pairing rows by candidate (compare.c).
 *
 * The store, written by hand: agent n1 (a CPU node), configuration n=1024.
 *   sweep 1 "board-a": problem softmax (hash "ph"; pool of 4 seeds, renewed
 *     every 3600 s, generation 3 in the store; 2 references stored for one
 *     configuration), candidates torch_ref (the baseline, 4 ms), fast
 *     (2 ms: rank 1, speedup 2) and bad (validation failed); and a stray
 *     validate and profile of the problem itself (0.5 ms), which must be
 *     nobody's rank 1.
 *   sweep 2 "board-b": the same problem; torch_ref (4 ms), quick (fast's
 *     source, renamed: 2 ms), bad (another source, now passing, 3 ms).
 *   sweep 3 "board-c": sweep 2's candidates under another problem hash.
 * Every validation trial carries the pool's secret seed SECRET, which no
 * format may print. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/problem.h"
#include "report/compare.h"
#include "report/report.h"
#include "report/report_page.h"
#include "report/report_stream.h"

#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rows_fixture.h"

#define SECRET 987654321987ull
#define SECRET_TEXT "987654321987"

static Kfleet__Param pn = KFLEET__PARAM__INIT; /* n=1024, set by setup */
static Kfleet__Param *params[1] = {&pn};

/* Kernel k's validation (passed or failed, one trial on the secret seed)
 * and its profile: ms x 3, or skipped when ms is 0. */
static void put_row(kf_txn *t, uint32_t sweep, uint32_t k, int passed, double ms)
{
    uint32_t v = 2 * k, pr = 2 * k + 1;
    Kfleet__TaskState vs = passed ? KFLEET__TASK_STATE__SUCCEEDED : KFLEET__TASK_STATE__FAILED;
    Kfleet__TaskState ps = ms > 0 ? KFLEET__TASK_STATE__SUCCEEDED : KFLEET__TASK_STATE__SKIPPED;
    put_task_of(t, sweep, v, KFLEET__TASK_KIND__VALIDATE, k, vs);
    put_task_of(t, sweep, pr, KFLEET__TASK_KIND__PROFILE, k, ps);
    Kfleet__ValidateTrial tr = KFLEET__VALIDATE_TRIAL__INIT;
    Kfleet__ValidateTrial *trials[1] = {&tr};
    tr.seed = SECRET;
    tr.passed = passed;
    tr.max_abs_err = passed ? 1e-7 : 0.5;
    Kfleet__Result r = KFLEET__RESULT__INIT;
    r.task_id = kf_task_id(sweep, v);
    r.attempt = 1;
    r.state = vs;
    r.agent_id = "n1";
    r.n_trials = 1;
    r.trials = trials;
    r.tol_abs = 1e-5;
    r.tol_rel = 1e-4;
    int dup = -1;
    assert_int_equal(kf_store_put_result(t, &r, &dup), 0);
    const double samples[3] = {ms, ms, ms};
    put_end_of(t, sweep, pr, ps, ms > 0 ? samples : NULL, ms > 0 ? 3 : 0);
}

/* A problem sweep: names[0..2] the candidates (names[0] the baseline),
 * then the problem softmax of problem_hash. */
static void put_sweep(kf_txn *t, uint32_t id, const char *name, const char *const names[3],
                      const char *const hashes[3], const char *problem_hash)
{
    Kfleet__KernelRef k[4], *kernels[4];
    for (int i = 0; i < 4; i++) {
        kfleet__kernel_ref__init(&k[i]);
        kernels[i] = &k[i];
        k[i].candidate = i < 3;
        k[i].name = (char *)(i < 3 ? names[i] : "softmax");
        k[i].hash = (char *)(i < 3 ? hashes[i] : problem_hash);
    }
    k[3].problem = 1;
    Kfleet__Sweep sw = KFLEET__SWEEP__INIT;
    sw.sweep_id = id;
    sw.name = (char *)name;
    sw.created_ns = 1700000000000000000ull;
    sw.n_kernels = 4;
    sw.kernels = kernels;
    sw.baseline = (char *)names[0];
    sw.max_attempts = 1;
    sw.seed_pool = 4;
    sw.seed_renew_s = 3600;
    assert_int_equal(kf_store_put_sweep(t, &sw), 0);
}

static int setup(void **state)
{
    (void)state;
    pn.name = "n";
    pn.value = 1024;
    kf_txn *t = rows_fixture_open();
    if (!t)
        return -1;
    kf_err err;
    Kfleet__AgentInfo ai = KFLEET__AGENT_INFO__INIT;
    ai.agent_id = "n1";
    ai.cpu_model = "test cpu";
    assert_int_equal(kf_store_put_agent(t, &ai), 0);

    static const char *const a_names[3] = {"torch_ref", "fast", "bad"};
    static const char *const b_names[3] = {"torch_ref", "quick", "bad"};
    static const char *const a_hashes[3] = {"h0", "h1", "h2"};
    static const char *const b_hashes[3] = {"h0", "h1", "h2b"};
    put_sweep(t, 1, "board-a", a_names, a_hashes, "ph");
    put_row(t, 1, 0, 1, 4);
    put_row(t, 1, 1, 1, 2);
    put_row(t, 1, 2, 0, 0);
    put_row(t, 1, 3, 1, 0.5); /* the problem's own: not a candidate */
    for (uint32_t sw = 2; sw <= 3; sw++) {
        put_sweep(t, sw, sw == 2 ? "board-b" : "board-c", b_names, b_hashes,
                  sw == 2 ? "ph" : "ph2");
        put_row(t, sw, 0, 1, 4);
        put_row(t, sw, 1, 1, 2);
        put_row(t, sw, 2, 1, 3);
    }

    uint64_t seeds[2] = {SECRET, 42};
    Kfleet__SeedPool pool = KFLEET__SEED_POOL__INIT;
    pool.problem_hash = "ph";
    pool.n_seeds = 2;
    pool.seeds = seeds;
    pool.generation = 3;
    pool.drawn_ns = 1700000000000000000ull;
    pool.renew_s = 3600;
    assert_int_equal(kf_store_put_seedpool(t, &pool), 0);
    uint8_t key[KF_STORE_CONFIG_KEY];
    kf_problem_config_key(params, 1, key);
    double one = 1;
    for (int i = 0; i < 2; i++) {
        Kfleet__Reference ref = KFLEET__REFERENCE__INIT;
        ref.problem_hash = "ph";
        ref.config_key.data = key;
        ref.config_key.len = sizeof key;
        ref.n_params = 1;
        ref.params = params;
        ref.seed = seeds[i];
        ref.generation = 3;
        ref.values.data = (uint8_t *)&one;
        ref.values.len = sizeof one;
        ref.count = 1;
        int dup = -1;
        assert_int_equal(kf_store_put_reference(t, &ref, &dup), 0);
    }
    assert_int_equal(kf_store_commit(&t, &err), 0);
    return 0;
}

static char *render(uint32_t sweep, kf_report_format fmt, kf_report_group group)
{
    kf_txn *t = NULL;
    kf_err err;
    assert_int_equal(kf_store_begin(store, 1, &t, &err), 0);
    kf_report_opts o = {.fmt = fmt, .group_by = group};
    kf_buf out = KF_BUF_INIT;
    int rc = kf_report_render_opts(t, sweep, &o, &out, &err);
    if (rc)
        fail_msg("render: %s", err.msg);
    kf_store_abort(&t);
    /* Seeds are secret: no format names one. */
    if (strstr(out.data, SECRET_TEXT))
        fail_msg("format %d prints the secret seed:\n%s", (int)fmt, out.data);
    return kf_buf_detach(&out);
}

static json_t *row_of(json_t *rows, const char *kernel)
{
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        if (strcmp(json_string_value(json_object_get(r, "kernel")), kernel) == 0)
            return r;
    }
    return NULL;
}

static void test_leaderboard_json(void **state)
{
    (void)state;
    char *s = render(1, KF_REPORT_JSON, KF_GROUP_CONFIG);
    json_error_t je;
    json_t *root = json_loads(s, 0, &je);
    assert_non_null(root);
    json_t *p = json_object_get(root, "problem"), *pol = json_object_get(p, "seed_policy"),
           *refs = json_object_get(p, "references"), *rows = json_object_get(root, "rows");
    assert_string_equal(json_string_value(json_object_get(p, "name")), "softmax");
    assert_string_equal(json_string_value(json_object_get(p, "hash")), "ph");
    assert_int_equal(json_integer_value(json_object_get(pol, "pool_size")), 4);
    assert_true(json_number_value(json_object_get(pol, "renew_s")) == 3600);
    assert_int_equal(json_integer_value(json_object_get(pol, "generation")), 3);
    assert_int_equal(json_integer_value(json_object_get(refs, "stored")), 2);
    assert_int_equal(json_integer_value(json_object_get(refs, "configurations")), 1);
    assert_int_equal(json_integer_value(json_object_get(refs, "generation_max")), 3);
    /* The candidates, ranked; the problem judged them and has no row. */
    assert_int_equal(json_array_size(rows), 3);
    assert_null(row_of(rows, "softmax"));
    json_t *fast = row_of(rows, "fast"), *ref = row_of(rows, "torch_ref"),
           *bad = row_of(rows, "bad");
    assert_string_equal(json_string_value(json_object_get(json_array_get(rows, 0), "kernel")),
                        "fast");
    assert_int_equal(json_integer_value(json_object_get(fast, "rank")), 1);
    assert_string_equal(json_string_value(json_object_get(fast, "verdict")), "passed");
    assert_true(fabs(json_number_value(json_object_get(fast, "speedup")) - 2) < 1e-9);
    assert_int_equal(json_integer_value(json_object_get(ref, "rank")), 2);
    assert_true(json_is_null(json_object_get(bad, "rank")));
    assert_string_equal(json_string_value(json_object_get(bad, "verdict")), "validate failed");
    json_t *trial =
        json_array_get(json_object_get(json_object_get(fast, "validation"), "trials"), 0);
    assert_non_null(trial);
    assert_true(json_is_null(json_object_get(trial, "seed")));
    json_decref(root);
    free(s);

    /* Unasked, a problem sweep's rows come in leaderboard order; asked for
     * by kernel, they do. */
    kf_txn *t = NULL;
    kf_err err;
    assert_int_equal(kf_store_begin(store, 1, &t, &err), 0);
    kf_buf out = KF_BUF_INIT;
    kf_report_opts o = {.fmt = KF_REPORT_CSV};
    assert_int_equal(kf_report_render_opts(t, 1, &o, &out, &err), 0);
    char *f = strstr(out.data, "\r\nfast,"), *r = strstr(out.data, "\r\ntorch_ref,");
    assert_true(f && r && f < r);
    kf_buf_reset(&out);
    o.group_set = 1;
    assert_int_equal(kf_report_render_opts(t, 1, &o, &out, &err), 0);
    f = strstr(out.data, "\r\nfast,"), r = strstr(out.data, "\r\ntorch_ref,");
    assert_true(f && r && r < f);
    kf_store_abort(&t);
    kf_buf_release(&out);
}

static void test_leaderboard_formats(void **state)
{
    (void)state;
    static const kf_report_format text[] = {KF_REPORT_TABLE, KF_REPORT_MD};
    for (int i = 0; i < 2; i++) {
        char *s = render(1, text[i], KF_GROUP_CONFIG);
        printf("%s", s);
        assert_non_null(strstr(s, "problem: softmax (hash ph) judges every row"));
        assert_non_null(strstr(s, "pool of 4 seeds, renewed every 3600 s, generation 3"));
        assert_non_null(strstr(s, "2 references stored for 1 configuration\n"));
        /* Markdown escapes the # and the _ of a kernel's name. */
        char *f = strstr(s, i ? "\\#1 fast" : "#1 fast"),
             *r = strstr(s, i ? "\\#2 torch\\_ref" : "#2 torch_ref");
        assert_true(f && r && f < r);
        free(s);
    }
    char *s = render(1, KF_REPORT_CSV, KF_GROUP_CONFIG);
    printf("%s", s);
    char *nl = strstr(s, "\r\n");
    assert_true(nl && nl - s > 16 && strncmp(nl - 16, ",seed_generation", 16) == 0);
    char *fast = strstr(s, "\r\nfast,");
    assert_non_null(fast);
    char *end = strstr(fast + 2, "\r\n");
    const char *tail = ",passed,softmax,ph,4,3600,3";
    assert_true(end && strncmp(end - strlen(tail), tail, strlen(tail)) == 0);
    assert_null(strstr(s, "\r\nsoftmax,"));
    free(s);
    s = render(1, KF_REPORT_HTML, KF_GROUP_CONFIG);
    assert_non_null(strstr(s, "Problem <b>softmax</b> (hash <code>ph</code>) judges every row"));
    assert_non_null(strstr(s, "seeds: pool of 4, renewed every 3600 s, generation 3"));
    free(s);
}

/* The row stream (submit --follow --format jsonl) keeps the seed secret
 * too, though it does not read the problem's provenance. */
static void test_stream_keeps_seeds_secret(void **state)
{
    (void)state;
    kf_txn *t = NULL;
    kf_err err;
    assert_int_equal(kf_store_begin(store, 1, &t, &err), 0);
    kf_report_stream *st = kf_report_stream_new(1);
    kf_buf out = KF_BUF_INIT;
    size_t n = 0;
    assert_int_equal(kf_report_stream_poll(st, t, &out, &n, &err), 0);
    kf_store_abort(&t);
    assert_true(n >= 3);
    assert_null(strstr(out.data, SECRET_TEXT));
    assert_non_null(strstr(out.data, "\"seed\":null"));
    kf_buf_release(&out);
    kf_report_stream_destroy(&st);
}

static char *compare(uint32_t a, uint32_t b, kf_compare_format fmt, kf_compare_result *res)
{
    kf_err err;
    kf_txn *t = NULL;
    assert_int_equal(kf_store_begin(store, 1, &t, &err), 0);
    kf_buf out = KF_BUF_INIT;
    int rc = kf_compare_render(t, a, b, 5, 0, fmt, &out, res, &err);
    kf_store_abort(&t);
    if (rc)
        fail_msg("compare: %s", err.msg);
    return kf_buf_detach(&out);
}

/* fast was renamed quick: by candidate (its source) it pairs with fast,
 * where by name fast would be broken (missing from B) and quick new. bad
 * was edited: the same name, another source, judged by the same problem:
 * fixed, not "changed". */
static void test_compare_by_candidate(void **state)
{
    (void)state;
    kf_compare_result res;
    char *s = compare(1, 2, KF_COMPARE_TABLE, &res);
    printf("%s", s);
    assert_int_equal(res.pairs, 3);
    assert_int_equal(res.broken, 0);
    assert_int_equal(res.only_b, 0);
    assert_int_equal(res.changed, 0);
    assert_int_equal(res.fixed, 1);
    assert_int_equal(res.same, 2);
    assert_int_equal(res.regressions, 0);
    assert_non_null(strstr(s, "candidate fast in A, renamed (same source h1)"));
    free(s);

    s = compare(1, 2, KF_COMPARE_JSON, &res);
    json_error_t je;
    json_t *root = json_loads(s, 0, &je), *r;
    assert_non_null(root);
    size_t i;
    int seen = 0;
    json_array_foreach(json_object_get(root, "rows"), i, r)
    {
        if (strcmp(json_string_value(json_object_get(r, "kernel")), "quick") != 0)
            continue;
        seen = 1;
        json_t *a = json_object_get(r, "a");
        assert_string_equal(json_string_value(json_object_get(a, "kernel")), "fast");
        assert_string_equal(json_string_value(json_object_get(a, "source_hash")), "h1");
    }
    assert_true(seen);
    json_decref(root);
    free(s);

    /* Another problem is another check: every pair that passes is changed. */
    s = compare(2, 3, KF_COMPARE_TABLE, &res);
    printf("%s", s);
    assert_int_equal(res.pairs, 3);
    assert_int_equal(res.changed, 3);
    assert_int_equal(res.regressions, 3);
    assert_non_null(strstr(s, "problem changed (ph -> ph2)"));
    free(s);
}

/* A profile skipped because the problem's reference was not computed
 * says so, not "validation did not pass" (issue 42): the report takes the
 * scheduler's words from the task's error. */
static void test_skip_words(void **state)
{
    (void)state;
    char out[160];
    assert_string_equal(kf_rep_skip_why("skipped: the problem's reference for this configuration "
                                        "was not computed (FAILED): setup failed",
                                        out, sizeof out),
                        "skipped: the problem's reference for this configuration was not computed");
    assert_string_equal(
        kf_rep_skip_why("skipped: its validation did not pass (FAILED): x", out, sizeof out),
        "skipped: its validation did not pass");
    assert_string_equal(kf_rep_skip_why(NULL, out, sizeof out), "skipped: validation did not pass");
    assert_string_equal(kf_rep_skip_why("", out, sizeof out), "skipped: validation did not pass");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leaderboard_json), cmocka_unit_test(test_leaderboard_formats),
        cmocka_unit_test(test_stream_keeps_seeds_secret),
        cmocka_unit_test(test_compare_by_candidate), cmocka_unit_test(test_skip_words)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
