/* report_launches: what a profile's samples launched, by kernel name
 * (issue 43 item 4), in the JSON (shares of the kernels' time, launches per
 * run) and the text section (three names a row, made inert). */
#include "report/report_launches.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* 10 samples of batch 4 traced by CUPTI: a gemm of cuBLAS's 30 ms in all,
 * a softmax of 10 ms, two copies per run; and a name with a terminal
 * escape in it. */
typedef struct fx {
    Kfleet__Launch l[4], *lp[4];
    Kfleet__ProfileStats ps;
} fx;

static void make(fx *f, const char *timer)
{
    static const char *names[] = {"sm90_xmma_gemm_f32f32", "my_softmax", "(copy)",
                                  "evil\x1b[31mred"};
    static const double secs[] = {0.030, 0.010, 0.0005, 0.0001};
    static const uint64_t counts[] = {40, 40, 80, 4};
    kfleet__profile_stats__init(&f->ps);
    for (int i = 0; i < 4; i++) {
        kfleet__launch__init(&f->l[i]);
        f->l[i].name = (char *)names[i];
        f->l[i].seconds = secs[i];
        f->l[i].count = counts[i];
        f->lp[i] = &f->l[i];
    }
    f->ps.samples = 9;
    f->ps.discarded = 1;
    f->ps.batch = 4;
    f->ps.timer = (char *)timer;
    f->ps.n_launches = 4;
    f->ps.launches = f->lp;
}

static void test_json(void **state)
{
    (void)state;
    fx f;
    make(&f, "cupti");
    json_t *a = kf_rep_launches_json(&f.ps);
    assert_int_equal(json_array_size(a), 4);
    json_t *g = json_array_get(a, 0);
    assert_string_equal(json_string_value(json_object_get(g, "name")), "sm90_xmma_gemm_f32f32");
    assert_true(fabs(json_real_value(json_object_get(g, "share")) - 0.030 / 0.0406) < 1e-9);
    assert_true(fabs(json_real_value(json_object_get(g, "per_run")) - 1.0) < 1e-12);
    assert_true(fabs(json_real_value(json_object_get(json_array_get(a, 2), "per_run")) - 2.0) <
                1e-12);
    json_decref(a);
    /* Not every sample traced: no per-run figure, the counts stand. */
    make(&f, "cupti+events");
    a = kf_rep_launches_json(&f.ps);
    assert_true(json_is_null(json_object_get(json_array_get(a, 0), "per_run")));
    assert_int_equal(json_integer_value(json_object_get(json_array_get(a, 0), "count")), 40);
    json_decref(a);
    /* A host kernel: none. */
    f.ps.n_launches = 0;
    a = kf_rep_launches_json(&f.ps);
    assert_true(json_is_null(a));
    json_decref(a);
    assert_true(json_is_null(kf_rep_launches_json(NULL)));
}

static void test_text(void **state)
{
    (void)state;
    fx f;
    make(&f, "cupti");
    Kfleet__Result res = KFLEET__RESULT__INIT;
    res.profile = &f.ps;
    Kfleet__Task task = KFLEET__TASK__INIT;
    rtask rt = {0};
    rt.task = &task;
    rt.res = &res;
    rrow rows[2] = {{0}, {0}};
    rows[0].kernel_name = "wraps_torch";
    rows[0].node = "n1";
    rows[0].profile = &rt;
    rows[1].kernel_name = "no_profile";
    rep r = {0};
    r.rows = rows;
    r.nrows = 2;
    kf_buf out = KF_BUF_INIT;
    kf_rep_render_launches(&r, 0, &out);
    kf_buf_addc(&out, '\0');
    const char *s = out.data;
    assert_non_null(strstr(s, "kernels launched"));
    assert_non_null(strstr(s, "wraps_torch on n1: 73.9% sm90_xmma_gemm_f32f32 (1 per run), 24.6% "
                              "my_softmax (1 per run), 1.2% (copy) (2 per run), and 1 more"));
    assert_null(strstr(s, "no_profile"));
    assert_null(strstr(s, "\x1b"));
    kf_buf_release(&out);
    /* No row launched anything: no section. */
    f.ps.n_launches = 0;
    kf_buf empty = KF_BUF_INIT;
    kf_rep_render_launches(&r, 0, &empty);
    assert_int_equal(empty.len, 0);
    kf_buf_release(&empty);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
