/* test_report_rank — the leaderboard (report_rank.c): every row's rank
 * among its configuration's rows on its device, by median, in the JSON,
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

static char *render(kf_report_format fmt, kf_report_group group)
{
    kf_txn *t = NULL;
    kf_err err;
    assert_int_equal(kf_store_begin(store, 1, &t, &err), 0);
    kf_report_opts o = {.fmt = fmt, .group_by = group};
    kf_buf out = KF_BUF_INIT;
    int rc = kf_report_render_opts(t, SWEEP, &o, &out, &err);
    if (rc)
        fail_msg("render: %s", err.msg);
    kf_store_abort(&t);
    return kf_buf_detach(&out);
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
    kf_txn *t = NULL;
    kf_err err;
    assert_int_equal(kf_store_begin(store, 1, &t, &err), 0);
    kf_report_opts o = {.fmt = KF_REPORT_JSON, .group_by = KF_GROUP_KERNEL};
    kf_buf out = KF_BUF_INIT;
    if (kf_report_render_opts(t, sweep, &o, &out, &err))
        fail_msg("render: %s", err.msg);
    kf_store_abort(&t);
    char *s = kf_buf_detach(&out);
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

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_ranks_in_json_and_csv),
                                       cmocka_unit_test(test_leaderboard_table),
                                       cmocka_unit_test(test_cancelled_not_evaluated)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
