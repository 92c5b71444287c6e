/* Tests for coordinator/report/report_html.c: report JSON built by hand, rendered
 * to HTML, and the page searched for what must and must not be there.
 *
 * The fixture (schema kfleet.report/2, nodes: all):
 *   nodes n1 (GPU, copy ceiling 1000 GB/s, bf16 100 TFLOP/s) and n2 (a CPU
 *   node without ceilings);
 *   triad n=1024 on n1 and n2 (the one configuration run on two nodes),
 *   triad n=2048 on n1: 24 bytes and 2 FLOPs per element;
 *   copy on n1: bytes only (GB/s; no point on the roofline);
 *   a kernel named <script>alert(1)</script> on n1 whose validation fails
 *   with an error full of markup, listed under failures too.
 * Every profile carries sample_seconds of recognisable digits that must not
 * reach the page. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "report/report.h"
#include "report/report_html.h"

#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define EVIL "<script>alert(1)</script>"
#define EVIL_ESC "&lt;script&gt;alert(1)&lt;/script&gt;"
#define EVIL_ERR "<img src=x onerror=alert(2)> & 'quoted' \"too\""
#define EVIL_ERR_ESC "&lt;img src=x onerror=alert(2)&gt; &amp; &#39;quoted&#39; &quot;too&quot;"

/* ---- building the report ---- */

static json_t *profile(double median, double bytes, double flops)
{
    json_t *p = json_object();
    json_object_set_new(p, "task_id", json_integer(2));
    json_object_set_new(p, "state", json_string("succeeded"));
    json_object_set_new(p, "error", json_null());
    json_object_set_new(p, "samples", json_integer(3));
    json_object_set_new(p, "median_s", json_real(median));
    json_object_set_new(p, "min_s", json_real(median * 0.9));
    json_object_set_new(p, "max_s", json_real(median * 1.5));
    json_object_set_new(p, "p10_s", json_real(median * 0.95));
    json_object_set_new(p, "p90_s", json_real(median * 1.25));
    json_object_set_new(p, "noise_pct", json_real(1.5));
    json_object_set_new(p, "bytes", json_real(bytes));
    json_object_set_new(p, "flops", json_real(flops));
    json_object_set_new(p, "gbps", bytes > 0 ? json_real(bytes / median / 1e9) : json_null());
    json_object_set_new(p, "gflops", flops > 0 ? json_real(flops / median / 1e9) : json_null());
    json_object_set_new(p, "pct_copy_ceiling", json_null());
    json_object_set_new(p, "pct_bf16_ceiling", json_null());
    json_object_set_new(p, "hot", json_false());
    json_object_set_new(p, "batch", json_integer(1));
    json_object_set_new(p, "telemetry", json_null());
    json_object_set_new(p, "sample_seconds",
                        json_pack("[f,f,f]", 0.00123456789, 0.00987654321, 0.00555555555));
    return p;
}

static json_t *validation(int passed, const char *error)
{
    return json_pack("{s:s, s:b, s:f, s:s?, s:[{s:f}]}", "state", passed ? "succeeded" : "failed",
                     "passed", passed, "max_abs_err", passed ? 0.0 : 0.5, "error", error, "trials",
                     "max_abs_err", passed ? 0.0 : 0.5);
}

static json_t *row(const char *kernel, int cfg, json_int_t n, const char *node, json_t *val,
                   json_t *prof)
{
    json_t *r = json_pack("{s:s, s:i, s:{s:I}, s:s, s:s, s:{s:s, s:s, s:n}}", "kernel", kernel,
                          "config_index", cfg, "params", "n", n, "node", node, "device",
                          strcmp(node, "n1") == 0 ? "Test GPU" : "cpu", "provenance", "agent_id",
                          node, "gpu_uuid", "GPU-0000-test", "sass_archs");
    json_object_set_new(r, "validation", val ? val : json_null());
    json_object_set_new(r, "profile", prof ? prof : json_null());
    json_object_set_new(r, "speedup", json_null());
    json_object_set_new(r, "flags", json_array());
    return r;
}

static json_t *agent(const char *id, int ceilings)
{
    json_t *a = json_pack("{s:s, s:s, s:s, s:[]}", "agent_id", id, "hostname", "host", "cpu_model",
                          "Test CPU", "gpus");
    json_object_set_new(a, "ceiling_copy_gbps", ceilings ? json_real(1000) : json_null());
    json_object_set_new(a, "ceiling_bf16_tflops", ceilings ? json_real(100) : json_null());
    if (ceilings)
        json_array_append_new(json_object_get(a, "gpus"), json_pack("{s:s}", "name", "Test GPU"));
    return a;
}

/* The fixture above; with_ceilings 0 drops n1's ceilings, multi 0 drops
 * the run of triad n=1024 on n2. */
static json_t *report(int with_ceilings, int multi)
{
    json_t *rows = json_array();
    json_array_append_new(rows, row("triad", 0, 1024, "n1", validation(1, NULL),
                                    profile(2e-6, 24.0 * 1024, 2.0 * 1024)));
    if (multi)
        json_array_append_new(rows, row("triad", 0, 1024, "n2", validation(1, NULL),
                                        profile(3e-6, 24.0 * 1024, 2.0 * 1024)));
    json_array_append_new(rows, row("triad", 1, 2048, "n1", validation(1, NULL),
                                    profile(4e-6, 24.0 * 2048, 2.0 * 2048)));
    json_array_append_new(rows, row("copy", 0, 4096, "n1", NULL, profile(8e-6, 8e6, 0)));
    json_array_append_new(rows,
                          row(EVIL, 0, 64, "n1", validation(0, EVIL_ERR), profile(1e-3, 1e6, 1e9)));
    json_t *fail = json_pack("{s:s, s:s, s:s, s:{s:i}, s:s, s:s, s:i, s:i}", "kind", "validate",
                             "kernel", EVIL, "state", "failed", "params", "n", 64, "node", "n1",
                             "error", EVIL_ERR, "task_id", 7, "attempt", 1);
    return json_pack("{s:s, s:s, s:{s:i, s:s, s:s, s:s, s:s, s:n}, s:{s:i, s:i, s:i}, s:[o,o], "
                     "s:o, s:[o], s:[]}",
                     "schema", "kfleet.report/2", "kfleet_version", "0.1.0", "sweep", "sweep_id", 3,
                     "name", "demo", "file", "demo.yaml", "created", "2026-01-01T00:00:00Z",
                     "nodes", "all", "baseline", "totals", "tasks", 10, "succeeded", 9, "failed", 1,
                     "agents", agent("n1", with_ceilings), agent("n2", 0), "rows", rows, "failures",
                     fail, "builds");
}

/* ---- looking at the page ---- */

static char *render(json_t *rep)
{
    kf_buf b = KF_BUF_INIT;
    kf_err err;
    assert_non_null(rep);
    assert_int_equal(kf_report_html(rep, &b, &err), KF_OK);
    json_decref(rep);
    assert_true(strncmp(b.data, "<!DOCTYPE html>", 15) == 0);
    assert_non_null(strstr(b.data, "</html>\n"));
    return kf_buf_detach(&b);
}

static size_t count(const char *s, const char *what)
{
    size_t n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

/* 1 when word occurs, in any case, with no letter or digit either side:
 * "nan" as a number would, "provenance" does not. */
static int has_word(const char *s, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = s; *p; p++)
        if (strncasecmp(p, word, n) == 0 && (p == s || !isalnum((unsigned char)p[-1])) &&
            !isalnum((unsigned char)p[n]))
            return 1;
    return 0;
}

/* The page without its script, whose code may say `null`. */
static char *markup(char *html)
{
    char *script = strstr(html, "<script>\n");
    assert_non_null(script);
    *script = '\0';
    return html;
}

static void test_structure(void **state)
{
    (void)state;
    char *h = render(report(1, 1));
    assert_int_equal(count(h, "<table id=\"kf-results\">"), 1);
    /* 5 rows; a median as people read it and as the script sorts it */
    assert_int_equal(count(h, "<details>"), 5);
    assert_non_null(strstr(h, ">2.000 \xC2\xB5s</td>"));
    assert_non_null(strstr(h, "<td class=\"n\" data-sort=\"1.9999999999999999e-06\">"));
    /* one bar chart per kernel with a result: triad and copy. The evil
     * kernel's validation failed: its profile is no result, drawn nowhere
     * (no chart of its own, no point on the roofline), its row has no
     * figure. */
    assert_int_equal(count(h, "<svg class=\"kf-bars\""), 2);
    assert_null(strstr(h, EVIL_ESC ": GFLOP/s"));
    assert_null(strstr(h, "1.000 ms</td>"));
    /* copy counts no FLOPs: its chart is in GB/s, 8e6 B / 8 us = 1000 */
    assert_non_null(strstr(h, "copy: GB/s"));
    assert_non_null(strstr(h, "triad: GFLOP/s"));
    /* a roofline for n1 only (n2 has no ceilings), with both roofs */
    assert_int_equal(count(h, "<svg class=\"kf-roofline\""), 1);
    assert_non_null(strstr(h, "copy 1000 GB/s"));
    assert_non_null(strstr(h, "bf16 100 TFLOP/s"));
    assert_non_null(strstr(h, "Not on the chart, as they count no FLOPs: copy."));
    /* triad n=1024 ran on n1 and n2 */
    assert_int_equal(count(h, "<svg class=\"kf-nodes\""), 1);
    assert_non_null(strstr(h, "triad: median time per node"));
    /* the failure, and the failing row marked */
    assert_non_null(strstr(h, "Failures (1)"));
    assert_int_equal(count(h, "<tr class=\"failed\">"), 1);
    assert_non_null(strstr(h, "validate failed: "));
    assert_non_null(strstr(h, "table.setAttribute('data-sortable', 'yes')"));
    free(h);
}

static void test_escaping(void **state)
{
    (void)state;
    char *h = render(report(1, 1));
    /* kernel name in the table, the chart titles, the legend and failures */
    assert_null(strstr(h, "<script>alert"));
    assert_true(count(h, EVIL_ESC) >= 2);
    assert_null(strstr(h, "<img"));
    assert_non_null(strstr(h, EVIL_ERR_ESC));
    assert_null(strstr(h, "'quoted'"));
    /* the page's own script is the only one */
    assert_int_equal(count(h, "<script"), 1);
    free(h);
}

static void test_no_nan_no_samples(void **state)
{
    (void)state;
    char *h = render(report(1, 1));
    assert_null(strstr(h, "sample_seconds"));
    assert_null(strstr(h, "123456789"));
    assert_null(strstr(h, "987654321"));
    assert_null(strstr(h, "555555555"));
    markup(h);
    assert_false(has_word(h, "nan"));
    assert_false(has_word(h, "inf"));
    assert_false(has_word(h, "null"));
    free(h);
}

static void test_no_ceilings(void **state)
{
    (void)state;
    char *h = render(report(0, 0));
    assert_null(strstr(h, "<svg class=\"kf-roofline\""));
    assert_non_null(strstr(h, "so there is no roofline"));
    assert_null(strstr(h, "<svg class=\"kf-nodes\""));
    assert_non_null(strstr(h, "No configuration ran on more than one node"));
    assert_int_equal(count(h, "<svg class=\"kf-bars\""), 2);
    markup(h);
    assert_false(has_word(h, "nan"));
    assert_false(has_word(h, "null"));
    free(h);
}

static void test_not_a_report(void **state)
{
    (void)state;
    kf_buf b = KF_BUF_INIT;
    kf_err err;
    json_t *j = json_pack("{s:s, s:[]}", "schema", "kfleet.verify/1", "rows");
    assert_int_equal(kf_report_html(j, &b, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "kfleet.verify/1"));
    assert_int_equal(b.len, 0);
    json_decref(j);
    j = json_pack("{s:s, s:{}}", "schema", "kfleet.report/2", "sweep");
    assert_int_equal(kf_report_html(j, &b, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "rows"));
    assert_int_equal(b.len, 0);
    json_decref(j);
    assert_int_equal(kf_report_html(NULL, &b, &err), KF_EINVAL);
}

static void test_parse_format(void **state)
{
    (void)state;
    assert_int_equal(kf_report_parse_format("html"), KF_REPORT_HTML);
    assert_int_equal(kf_report_parse_format("HTML"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_structure),         cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_no_nan_no_samples), cmocka_unit_test(test_no_ceilings),
        cmocka_unit_test(test_not_a_report),      cmocka_unit_test(test_parse_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
