/* test_report_rank — the leaderboard (report_rank.c): every row's rank
 * among its configuration's rows on its device, by median, or by speedup
 * against each node's own baseline where the rows have one, in the JSON,
 * the CSV and, with --group-by config, the order and the "#N" of the table.
 *
 * The store, written by hand: sweep "rank", baseline "base", kernels base
 * (2, 3, 4 ms: median 3 ms), cand (1.5 ms: median 1.5 ms, speedup 2) and bad
 * (validation failed, profile skipped), one configuration n=1024 on agent
 * n1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "report/report.h"

#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rows_fixture.h"

static int setup(void **state)
{
    (void)state;
    return rows_fixture_setup("rank", 1);
}

static char *render_sweep(uint32_t sweep, kf_report_format fmt, kf_report_group group)
{
    kf_txn *t = NULL;
    kf_err err;
    assert_int_equal(kf_store_begin(store, 1, &t, &err), 0);
    kf_report_opts o = {.fmt = fmt, .group_by = group};
    kf_buf out = KF_BUF_INIT;
    if (kf_report_render_opts(t, sweep, &o, &out, &err))
        fail_msg("render: %s", err.msg);
    kf_store_abort(&t);
    return kf_buf_detach(&out);
}

static char *render(kf_report_format fmt, kf_report_group group)
{
    return render_sweep(SWEEP, fmt, group);
}

static json_t *row_of(json_t *rows, const char *kernel)
{
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) if (strcmp(json_string_value(json_object_get(r, "kernel")),
                                              kernel) == 0) return r;
    fail_msg("no row of %s", kernel);
    return NULL;
}

static void test_ranks_in_json_and_csv(void **state)
{
    (void)state;
    char *s = render(KF_REPORT_JSON, KF_GROUP_KERNEL);
    json_error_t je;
    json_t *root = json_loads(s, 0, &je), *rows = json_object_get(root, "rows");
    assert_non_null(rows);
    /* The default order stays by kernel; the rank is there anyway. */
    assert_string_equal(json_string_value(json_object_get(json_array_get(rows, 0), "kernel")),
                        "base");
    assert_int_equal(json_integer_value(json_object_get(row_of(rows, "cand"), "rank")), 1);
    assert_int_equal(json_integer_value(json_object_get(row_of(rows, "base"), "rank")), 2);
    assert_true(json_is_null(json_object_get(row_of(rows, "bad"), "rank")));
    json_decref(root);
    free(s);

    s = render(KF_REPORT_CSV, KF_GROUP_CONFIG);
    printf("%s", s);
    char *nl = strstr(s, "\r\n");
    assert_non_null(nl);
    assert_true(nl - s > 5 && strncmp(nl - 5, ",rank", 5) == 0); /* the header's last column */
    /* Rows in leaderboard order, each line ending with its rank. */
    char *cand = strstr(s, "\r\ncand,"), *base = strstr(s, "\r\nbase,"),
         *bad = strstr(s, "\r\nbad,");
    assert_true(cand && base && bad && cand < base && base < bad);
    assert_true(strncmp(strstr(cand + 2, "\r\n") - 2, ",1", 2) == 0);
    assert_true(strncmp(strstr(base + 2, "\r\n") - 2, ",2", 2) == 0);
    assert_true(strncmp(strstr(bad + 2, "\r\n") - 1, ",", 1) == 0);
    free(s);
}

static void test_leaderboard_table(void **state)
{
    (void)state;
    char *s = render(KF_REPORT_TABLE, KF_GROUP_CONFIG);
    printf("%s", s);
    char *c = strstr(s, "#1 cand"), *b = strstr(s, "#2 base"), *x = strstr(s, "- bad");
    assert_true(c && b && x && c < b && b < x);
    free(s);
    /* Not a leaderboard: no places. */
    s = render(KF_REPORT_MD, KF_GROUP_KERNEL);
    assert_null(strstr(s, "#1 cand"));
    free(s);
    assert_int_equal(kf_report_parse_group("config"), KF_GROUP_CONFIG);
}

static double evaluations(uint32_t sweep)
{
    char *s = render_sweep(sweep, KF_REPORT_JSON, KF_GROUP_KERNEL);
    json_error_t je;
    json_t *root = json_loads(s, 0, &je);
    assert_non_null(root);
    double n = json_number_value(json_object_get(json_object_get(root, "cost"), "evaluations"));
    json_decref(root);
    free(s);
    return n;
}

/* A row is an evaluation once one of its checks ran to an end: bad's
 * failed validation counts; cancelled before running (a sweep cut by its
 * limit), a row does not, or a cut sweep's rate would count work never
 * done. */
static void test_cancelled_not_evaluated(void **state)
{
    (void)state;
    assert_true(evaluations(SWEEP) == 3);
    const uint32_t cut = SWEEP + 1;
    kf_txn *t = NULL;
    kf_err err;
    assert_int_equal(kf_store_begin(store, 0, &t, &err), 0);
    Kfleet__KernelRef ka = KFLEET__KERNEL_REF__INIT, kb = KFLEET__KERNEL_REF__INIT;
    Kfleet__KernelRef *kernels[2] = {&ka, &kb};
    ka.name = "ran";
    kb.name = "cut";
    Kfleet__Sweep sw = KFLEET__SWEEP__INIT;
    sw.sweep_id = cut;
    sw.name = "cut";
    sw.created_ns = 1700000000000000000ull;
    sw.n_kernels = 2;
    sw.kernels = kernels;
    assert_int_equal(kf_store_put_sweep(t, &sw), 0);
    const double ms[] = {2, 3, 4};
    put_task_of(t, cut, 0, KFLEET__TASK_KIND__VALIDATE, 0, KFLEET__TASK_STATE__SUCCEEDED);
    put_task_of(t, cut, 1, KFLEET__TASK_KIND__PROFILE, 0, KFLEET__TASK_STATE__SUCCEEDED);
    put_task_of(t, cut, 2, KFLEET__TASK_KIND__VALIDATE, 1, KFLEET__TASK_STATE__CANCELLED);
    put_task_of(t, cut, 3, KFLEET__TASK_KIND__PROFILE, 1, KFLEET__TASK_STATE__CANCELLED);
    put_end_of(t, cut, 0, KFLEET__TASK_STATE__SUCCEEDED, NULL, 0);
    put_end_of(t, cut, 1, KFLEET__TASK_STATE__SUCCEEDED, ms, 3);
    put_end_of(t, cut, 2, KFLEET__TASK_STATE__CANCELLED, NULL, 0);
    put_end_of(t, cut, 3, KFLEET__TASK_STATE__CANCELLED, NULL, 0);
    assert_int_equal(kf_store_commit(&t, &err), 0);
    assert_true(evaluations(cut) == 1);
}

/* The row of kernel on node. */
static json_t *row_on(json_t *rows, const char *kernel, const char *node)
{
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        if (strcmp(json_string_value(json_object_get(r, "kernel")), kernel) == 0 &&
            strcmp(json_string_value(json_object_get(r, "node")), node) == 0)
            return r;
    }
    fail_msg("no row of %s on %s", kernel, node);
    return NULL;
}

/* A sweep on four nodes, as the scheduler leaves a `nodes: any` sweep
 * since issue 41 (sched_baseline.c): the baseline "base" ran on n1 (3 ms,
 * its submitted tasks) and, pinned, on n2 (6 ms: a slower node) and n4
 * (its validation failed there); "fast" ran on n2 (2.4 ms), "slow" on n1
 * (2 ms), "lone" on n3 (1 ms, no baseline there: a sweep from before) and
 * "orphan" on n4 (1.2 ms). Each speedup is against its own node's
 * baseline, and the leaderboard ranks by them: fast (2.5x) before slow
 * (1.5x), although slow's median is the smaller, as the medians of two
 * nodes are not the kernels' alone. lone and orphan have no speedup,
 * are not ranked, and say why. */
static void test_rank_by_speedup_on_each_node(void **state)
{
    (void)state;
    const uint32_t sw = SWEEP + 2;
    kf_txn *t = NULL;
    kf_err err;
    assert_int_equal(kf_store_begin(store, 0, &t, &err), 0);
    Kfleet__KernelRef k[5] = {KFLEET__KERNEL_REF__INIT, KFLEET__KERNEL_REF__INIT,
                              KFLEET__KERNEL_REF__INIT, KFLEET__KERNEL_REF__INIT,
                              KFLEET__KERNEL_REF__INIT};
    Kfleet__KernelRef *kernels[5] = {&k[0], &k[1], &k[2], &k[3], &k[4]};
    const char *names[5] = {"base", "fast", "slow", "lone", "orphan"};
    for (int i = 0; i < 5; i++)
        k[i].name = (char *)names[i];
    Kfleet__Sweep rec = KFLEET__SWEEP__INIT;
    rec.sweep_id = sw;
    rec.name = "nodes";
    rec.created_ns = 1700000000000000000ull;
    rec.n_kernels = 5;
    rec.kernels = kernels;
    rec.baseline = "base";
    assert_int_equal(kf_store_put_sweep(t, &rec), 0);
    struct {
        uint32_t kernel;
        const char *pin, *agent;
        double ms; /* the profile's samples, ms-ish apart; 0: validation failed */
    } rows[] = {{0, "", "n1", 3},   {1, "", "n2", 2.4}, {2, "", "n1", 2},  {3, "", "n3", 1},
                {4, "", "n4", 1.2}, {0, "n2", "n2", 6}, {0, "n4", "n4", 0}};
    const Kfleet__TaskState ok = KFLEET__TASK_STATE__SUCCEEDED;
    for (uint32_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        uint32_t v = 2 * i, p = v + 1;
        int good = rows[i].ms > 0;
        const Kfleet__TaskState vs = good ? ok : KFLEET__TASK_STATE__FAILED,
                                ps = good ? ok : KFLEET__TASK_STATE__SKIPPED;
        put_task_on(t, sw, v, KFLEET__TASK_KIND__VALIDATE, rows[i].kernel, vs, rows[i].pin,
                    rows[i].agent);
        put_task_on(t, sw, p, KFLEET__TASK_KIND__PROFILE, rows[i].kernel, ps, rows[i].pin,
                    good ? rows[i].agent : "");
        put_end_on(t, sw, v, vs, NULL, 0, rows[i].agent,
                   good ? "" : "validation failed (pool seed 0): wrong\ndetails");
        const double ms[3] = {rows[i].ms * 0.99, rows[i].ms, rows[i].ms * 1.01};
        put_end_on(t, sw, p, ps, good ? ms : NULL, good ? 3 : 0, good ? rows[i].agent : "", "");
    }
    assert_int_equal(kf_store_commit(&t, &err), 0);

    char *s = render_sweep(sw, KF_REPORT_JSON, KF_GROUP_KERNEL);
    json_error_t je;
    json_t *root = json_loads(s, 0, &je), *jr = json_object_get(root, "rows");
    assert_non_null(jr);
    assert_int_equal(json_array_size(jr), 7);
    struct {
        const char *kernel, *node;
        double speedup; /* NAN: none */
        int rank;       /* 0: null */
        const char *why;
    } want[] = {
        {"fast", "n2", 2.5, 1, NULL},
        {"slow", "n1", 1.5, 2, NULL},
        {"base", "n1", 1, 3, NULL},
        {"base", "n2", 1, 4, NULL},
        {"lone", "n3", NAN, 0, "baseline base not measured on n3"},
        {"orphan", "n4", NAN, 0,
         "baseline base on n4: validate failed: validation failed (pool seed 0): wrong"},
        {"base", "n4", NAN, 0, NULL},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        json_t *r = row_on(jr, want[i].kernel, want[i].node);
        json_t *sp = json_object_get(r, "speedup"), *rk = json_object_get(r, "rank"),
               *why = json_object_get(r, "no_speedup");
        if (isnan(want[i].speedup))
            assert_true(json_is_null(sp));
        else
            assert_true(fabs(json_number_value(sp) - want[i].speedup) < 1e-9);
        if (want[i].rank)
            assert_int_equal(json_integer_value(rk), want[i].rank);
        else
            assert_true(json_is_null(rk));
        if (want[i].why)
            assert_string_equal(json_string_value(why), want[i].why);
        else
            assert_true(json_is_null(why));
    }
    json_decref(root);
    free(s);

    /* The leaderboard says the same, and why a row has no speedup. */
    s = render_sweep(sw, KF_REPORT_TABLE, KF_GROUP_CONFIG);
    printf("%s", s);
    char *f = strstr(s, "#1 fast"), *sl = strstr(s, "#2 slow"), *l = strstr(s, "- lone");
    assert_true(f && sl && l && f < sl && sl < l);
    assert_non_null(strstr(s, "no speedup: baseline base not measured on n3"));
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_ranks_in_json_and_csv),
                                       cmocka_unit_test(test_leaderboard_table),
                                       cmocka_unit_test(test_cancelled_not_evaluated),
                                       cmocka_unit_test(test_rank_by_speedup_on_each_node)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
