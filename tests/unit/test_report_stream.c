/* test_report_stream — rows streamed as they finish (report_stream.c, what
 * `kfleet submit --follow --format jsonl` prints): a row once, when its
 * validate and profile have both ended, with its verdict, median, speedup
 * and flags; a row still profiling is not sent; nothing twice.
 *
 * The store, written by hand: sweep "stream", baseline "base", kernels base,
 * cand, bad, one configuration n=1024 on agent n1.
 *   stage 1: base validated and profiled (2, 3, 4 ms: median 3 ms); cand
 *            validated, its profile still running; bad's validation failed
 *            and its profile was skipped
 *   stage 2: cand's profile ends (1.5 ms x 3: speedup 2) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "report/report_stream.h"

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
    return rows_fixture_setup("stream", 0);
}

/* One poll: its lines, parsed, into rows[] (at most 8). */
static size_t poll_rows(kf_report_stream *s, json_t **rows)
{
    kf_txn *t = NULL;
    kf_err err;
    assert_int_equal(kf_store_begin(store, 1, &t, &err), 0);
    kf_buf out = KF_BUF_INIT;
    size_t n = 99;
    assert_int_equal(kf_report_stream_poll(s, t, &out, &n, &err), KF_OK);
    kf_store_abort(&t);
    size_t got = 0;
    for (char *line = out.data, *nl; line && (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = '\0';
        printf("%s\n", line);
        json_error_t je;
        assert_true(got < 8);
        rows[got] = json_loads(line, 0, &je);
        assert_non_null(rows[got]);
        got++;
    }
    kf_buf_release(&out);
    assert_int_equal(got, n);
    return got;
}

static const char *str(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    assert_true(json_is_string(v));
    return json_string_value(v);
}

static void test_rows_as_they_finish(void **state)
{
    (void)state;
    kf_report_stream *s = kf_report_stream_new(SWEEP);
    json_t *rows[8];
    /* Stage 1: base and bad have finished, cand is still profiling. */
    size_t n = poll_rows(s, rows);
    assert_int_equal(n, 2);
    assert_string_equal(str(rows[0], "schema"), "kfleet.row/1");
    assert_string_equal(str(rows[0], "kernel"), "base");
    assert_string_equal(str(rows[0], "verdict"), "passed");
    assert_true(fabs(json_real_value(json_object_get(rows[0], "median_s")) - 0.003) < 1e-12);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(rows[0], "params"), "n")),
                     1024);
    assert_true(json_is_array(json_object_get(rows[0], "flags")));
    assert_string_equal(str(rows[1], "kernel"), "bad");
    assert_string_equal(str(rows[1], "verdict"), "validate failed");
    assert_true(json_is_null(json_object_get(rows[1], "median_s")));
    for (size_t i = 0; i < n; i++)
        json_decref(rows[i]);
    /* Nothing new: nothing sent. */
    assert_int_equal(poll_rows(s, rows), 0);

    /* Stage 2: cand's profile ends: its row, once, with its speedup. */
    kf_txn *t = NULL;
    kf_err err;
    assert_int_equal(kf_store_begin(store, 0, &t, &err), 0);
    const double cand_ms[] = {1.5, 1.5, 1.5};
    put_end(t, 3, KFLEET__TASK_STATE__SUCCEEDED, cand_ms, 3);
    assert_int_equal(kf_store_commit(&t, &err), 0);
    n = poll_rows(s, rows);
    assert_int_equal(n, 1);
    assert_string_equal(str(rows[0], "kernel"), "cand");
    assert_string_equal(str(rows[0], "verdict"), "passed");
    assert_true(fabs(json_real_value(json_object_get(rows[0], "speedup")) - 2.0) < 1e-9);
    json_decref(rows[0]);
    assert_int_equal(poll_rows(s, rows), 0);
    kf_report_stream_destroy(&s);
    assert_null(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_rows_as_they_finish)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
