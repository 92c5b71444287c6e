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

#define SWEEP 1
static char dir[64];
static kf_store *store;

static int rm_cb(const char *p, const struct stat *s, int f, struct FTW *w)
{
    (void)s, (void)f, (void)w;
    return remove(p);
}

static void put_task(kf_txn *t, uint32_t idx, Kfleet__TaskKind kind, uint32_t kernel,
                     Kfleet__TaskState st)
{
    Kfleet__Param pn = KFLEET__PARAM__INIT;
    Kfleet__Param *params[1] = {&pn};
    pn.name = "n";
    pn.value = 1024;
    Kfleet__Task task = KFLEET__TASK__INIT;
    task.task_id = kf_task_id(SWEEP, idx);
    task.sweep_id = SWEEP;
    task.kind = kind;
    task.kernel_index = kernel;
    task.n_params = 1;
    task.params = params;
    task.agent_id = "n1";
    task.state = st;
    task.attempts = 1;
    task.error = "";
    assert_int_equal(kf_store_put_task(t, &task), 0);
}

/* The terminal record of task idx; a profile's with its samples (ms). */
static void put_end(kf_txn *t, uint32_t idx, Kfleet__TaskState st, const double *ms, size_t n)
{
    Kfleet__ProfileStats ps = KFLEET__PROFILE_STATS__INIT;
    ps.samples = (uint32_t)n;
    ps.converged = 1;
    Kfleet__Result r = KFLEET__RESULT__INIT;
    r.task_id = kf_task_id(SWEEP, idx);
    r.attempt = 1;
    r.state = st;
    r.agent_id = "n1";
    if (ms) {
        r.profile = &ps;
        r.sample_count = (uint32_t)n;
    }
    int dup = -1;
    assert_int_equal(kf_store_put_result(t, &r, &dup), 0);
    for (size_t i = 0; i < n; i++) {
        Kfleet__Sample s = KFLEET__SAMPLE__INIT;
        s.seq = (uint32_t)i;
        s.seconds = ms[i] / 1000.0;
        assert_int_equal(kf_store_put_sample(t, kf_task_id(SWEEP, idx), 1, &s, &dup), 0);
    }
}

static int setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/kf-stream-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    kf_err err;
    if (kf_store_open(dir, 0, &store, &err) != KF_OK)
        return -1;
    kf_txn *t = NULL;
    assert_int_equal(kf_store_begin(store, 0, &t, &err), 0);
    Kfleet__KernelRef kb = KFLEET__KERNEL_REF__INIT, kc = KFLEET__KERNEL_REF__INIT,
                      kx = KFLEET__KERNEL_REF__INIT;
    Kfleet__KernelRef *kernels[3] = {&kb, &kc, &kx};
    kb.name = "base";
    kc.name = "cand";
    kx.name = "bad";
    Kfleet__Sweep sw = KFLEET__SWEEP__INIT;
    sw.sweep_id = SWEEP;
    sw.name = "stream";
    sw.created_ns = 1700000000000000000ull;
    sw.n_kernels = 3;
    sw.kernels = kernels;
    sw.baseline = "base";
    assert_int_equal(kf_store_put_sweep(t, &sw), 0);
    const double base_ms[] = {2, 3, 4};
    put_task(t, 0, KFLEET__TASK_KIND__VALIDATE, 0, KFLEET__TASK_STATE__SUCCEEDED);
    put_task(t, 1, KFLEET__TASK_KIND__PROFILE, 0, KFLEET__TASK_STATE__SUCCEEDED);
    put_task(t, 2, KFLEET__TASK_KIND__VALIDATE, 1, KFLEET__TASK_STATE__SUCCEEDED);
    put_task(t, 3, KFLEET__TASK_KIND__PROFILE, 1, KFLEET__TASK_STATE__RUNNING);
    put_task(t, 4, KFLEET__TASK_KIND__VALIDATE, 2, KFLEET__TASK_STATE__FAILED);
    put_task(t, 5, KFLEET__TASK_KIND__PROFILE, 2, KFLEET__TASK_STATE__SKIPPED);
    put_end(t, 0, KFLEET__TASK_STATE__SUCCEEDED, NULL, 0);
    put_end(t, 1, KFLEET__TASK_STATE__SUCCEEDED, base_ms, 3);
    put_end(t, 2, KFLEET__TASK_STATE__SUCCEEDED, NULL, 0);
    put_end(t, 4, KFLEET__TASK_STATE__FAILED, NULL, 0);
    put_end(t, 5, KFLEET__TASK_STATE__SKIPPED, NULL, 0);
    assert_int_equal(kf_store_commit(&t, &err), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kf_store_close(&store);
    nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
    return 0;
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
