/* report_html — the report JSON turned into one HTML page; see report_html.h.
 *
 * How: the page is written top to bottom: the sweep and its nodes with
 * their measured ceilings, the results table, a bar chart per kernel, a
 * roofline per node with ceilings, the comparison across nodes, the
 * failures. It reads only the JSON (never report.c's rows), so the page
 * shows what a script reading the JSON sees, and the two cannot disagree.
 *
 * This file is the page: its head, style and script, the tables and the
 * sections. The charts are drawn by report_svg.c; both read the JSON,
 * escape and format numbers with report_page.c, so that a figure reads the
 * same in the table and on a chart.
 *
 * Every string from the JSON is escaped (& < > " ') and every number is
 * checked: null ("not applicable") is written as a dash, never as a number.
 * `sample_seconds` is never read. */
#include "common/text.h"
#include "report/report_html.h"
#include "report/report_page.h"
#include "report/report_svg.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCHEMA "kfleet.report/2"

typedef struct page {
    const json_t *sweep, *rows, *agents;
    kf_rep_svg *charts;
} page;

/* ---- the results table ---- */

static void td(kf_buf *b, const char *cls, const char *s)
{
    kf_buf_adds(b, cls ? "<td class=\"" : "<td>");
    if (cls) {
        kf_buf_adds(b, cls);
        kf_buf_adds(b, "\">");
    }
    kf_text_html(b, s && *s ? s : KF_REP_DASH);
    kf_buf_adds(b, "</td>");
}

/* A numeric cell: data-sort holds the number for the table's script; an
 * empty one (no figure) sorts last. */
static void td_num(kf_buf *b, int ok, double sort, const char *text)
{
    if (ok)
        kf_buf_addf(b, "<td class=\"n\" data-sort=\"%.17g\">", sort);
    else
        kf_buf_adds(b, "<td class=\"n\" data-sort=\"\">");
    kf_text_html(b, ok ? text : KF_REP_DASH);
    kf_buf_adds(b, "</td>");
}

static void td_short(kf_buf *b, const json_t *p, const char *key)
{
    double v;
    char s[48] = "";
    int ok = kf_rep_num_at(p, key, &v);
    if (ok)
        kf_rep_fmt_short(v, s, sizeof s);
    td_num(b, ok, ok ? v : 0, s);
}

static int is_failed(const char *state)
{
    return state && (strcmp(state, "failed") == 0 || strcmp(state, "timed_out") == 0);
}

static void td_validation(kf_buf *b, const json_t *v)
{
    const char *st = kf_rep_str_at(v, "state");
    double mx;
    char s[96];
    if (!v || !st) {
        td(b, NULL, NULL);
        return;
    }
    if (strcmp(st, "succeeded") != 0 && !is_failed(st)) {
        td(b, NULL, st);
        return;
    }
    int pass = json_is_true(json_object_get(v, "passed"));
    size_t seeds = json_array_size(json_object_get(v, "trials"));
    int got = kf_rep_num_at(v, "max_abs_err", &mx);
    double nonfinite = 0, e;
    if (!pass) {
        /* The failing trials' figures only: a kernel that raised measured
         * nothing, and unwritten outputs are not an error of 0. */
        size_t nbad = 0;
        mx = 0;
        for (size_t i = 0; i < seeds; i++) {
            const json_t *t = json_array_get(json_object_get(v, "trials"), i);
            if (json_is_true(json_object_get(t, "passed")))
                continue;
            nbad++;
            if (kf_rep_num_at(t, "max_abs_err", &e) && e > mx)
                mx = e;
            if (kf_rep_num_at(t, "nonfinite", &e))
                nonfinite += e;
        }
        got = nbad > 0;
    }
    if (!pass && got && nonfinite > 0)
        snprintf(s, sizeof s, "FAIL %.0f non-finite", nonfinite);
    else if (got)
        snprintf(s, sizeof s, "%s %.1e", pass ? "pass" : "FAIL", mx);
    else
        snprintf(s, sizeof s, "%s", pass ? "pass" : "FAIL");
    kf_buf_addf(b, "<td class=\"%s\" title=\"max abs error over %zu seed%s\">", pass ? "ok" : "bad",
                seeds, seeds == 1 ? "" : "s");
    kf_text_html(b, s);
    kf_buf_adds(b, "</td>");
}

static void td_times(kf_buf *b, const json_t *p)
{
    double med, lo, hi, noise;
    char s[64] = "";
    int ok = kf_rep_num_at(p, "median_s", &med);
    if (ok)
        kf_rep_fmt_time(med, s, sizeof s);
    td_num(b, ok, ok ? med : 0, s);
    int range = ok && ((kf_rep_num_at(p, "p10_s", &lo) && kf_rep_num_at(p, "p90_s", &hi)) ||
                       (kf_rep_num_at(p, "min_s", &lo) && kf_rep_num_at(p, "max_s", &hi)));
    if (range) {
        const char *u;
        double k = kf_rep_time_unit(med, &u);
        char a[24], z[24];
        kf_rep_fmt_short(lo * k, a, sizeof a);
        kf_rep_fmt_short(hi * k, z, sizeof z);
        snprintf(s, sizeof s, "%s" KF_REP_DASH "%s %s", a, z, u);
    }
    td_num(b, range, range ? hi - lo : 0, s);
    ok = kf_rep_num_at(p, "noise_pct", &noise);
    snprintf(s, sizeof s, "%.1f%%", ok ? noise : 0);
    td_num(b, ok, ok ? noise : 0, s);
}

/* The nearer ceiling says what bounds the kernel: bandwidth or matrix. */
static void td_ceiling(kf_buf *b, const json_t *p)
{
    double bw = NAN, mma = NAN;
    char s[32] = "";
    kf_rep_num_at(p, "pct_copy_ceiling", &bw);
    kf_rep_num_at(p, "pct_bf16_ceiling", &mma);
    int use_bw = isfinite(bw) && !(mma > bw), ok = use_bw || isfinite(mma);
    if (ok)
        snprintf(s, sizeof s, "%.0f%% %s", use_bw ? bw : mma, use_bw ? "bw" : "mma");
    td_num(b, ok, use_bw ? bw : ok ? mma : 0, s);
}

static void td_speedup(kf_buf *b, const json_t *row)
{
    double v, e;
    char s[64] = "";
    int ok = kf_rep_result_profile(row) && kf_rep_num_at(row, "speedup", &v);
    if (ok && kf_rep_num_at(row, "speedup_err", &e))
        snprintf(s, sizeof s, "%.2f\xC3\x97 \xC2\xB1%.2f", v, e);
    else if (ok)
        snprintf(s, sizeof s, "%.2f\xC3\x97", v);
    td_num(b, ok, ok ? v : 0, s);
}

static void add_flag(char *s, size_t len, const char *f)
{
    size_t n = strlen(s);
    snprintf(s + n, len - n, "%s%s", n ? ", " : "", f);
}

static int row_failed(const json_t *row)
{
    return is_failed(kf_rep_str_at(kf_rep_obj_at(row, "validation"), "state")) ||
           is_failed(kf_rep_str_at(kf_rep_obj_at(row, "profile"), "state"));
}

/* The row's flags, how its samples were taken, and why a task failed. */
static void td_flags(kf_buf *b, const json_t *row, int failed)
{
    char s[512] = "", f[160];
    size_t i;
    const json_t *v, *p = kf_rep_obj_at(row, "profile");
    json_array_foreach(json_object_get(row, "flags"), i, v)
    {
        const char *name = json_string_value(v);
        double pct;
        if (name && strcmp(name, "outlier") == 0 && kf_rep_num_at(row, "outlier_pct", &pct)) {
            snprintf(f, sizeof f, "outlier node +%.0f%%", pct);
            add_flag(s, sizeof s, f);
        } else if (name && strcmp(name, "failed") != 0) {
            add_flag(s, sizeof s, name);
        }
    }
    if (p && json_is_true(json_object_get(p, "hot")))
        add_flag(s, sizeof s, "hot");
    if (p && kf_rep_num_or(p, "batch", 1) > 1) {
        snprintf(f, sizeof f, "batch %.0f", kf_rep_num_or(p, "batch", 1));
        add_flag(s, sizeof s, f);
    }
    double x;
    if (p && kf_rep_num_at(p, "discarded_samples", &x) && x > 0) {
        snprintf(f, sizeof f, "%.0f discarded (throttled)", x);
        add_flag(s, sizeof s, f);
    }
    if (p && kf_rep_num_at(p, "sm_clock_median_mhz", &x)) {
        snprintf(f, sizeof f, "SM %.0f MHz %.0f W", x, kf_rep_num_or(p, "power_median_w", 0));
        add_flag(s, sizeof s, f);
    }
    const char *pst = kf_rep_str_at(p, "state"), *ns = kf_rep_str_at(row, "no_speedup");
    if (pst && strcmp(pst, "skipped") == 0) {
        char why[160];
        snprintf(f, sizeof f, "profile %s",
                 kf_rep_skip_why(kf_rep_str_at(p, "error"), why, sizeof why));
        add_flag(s, sizeof s, f);
    }
    if (ns) {
        snprintf(f, sizeof f, "no speedup: %s", ns);
        kf_rep_cut(f, sizeof f, 90);
        add_flag(s, sizeof s, f);
    }
    const char *const kinds[2] = {"validation", "profile"};
    for (int k = 0; k < 2; k++) {
        const json_t *t = kf_rep_obj_at(row, kinds[k]);
        if (!is_failed(kf_rep_str_at(t, "state")))
            continue;
        const char *e = kf_rep_str_at(t, "error");
        snprintf(f, sizeof f, "%s %s: %.*s", k ? "profile" : "validate",
                 strcmp(kf_rep_str_at(t, "state"), "failed") == 0 ? "failed" : "timed out",
                 e ? (int)strcspn(e, "\r\n") : 0, e ? e : "");
        kf_rep_cut(f, sizeof f, 70);
        add_flag(s, sizeof s, f);
    }
    td(b, failed ? "fail wrap" : s[0] ? "warn wrap" : "wrap", s);
}

static void dd(kf_buf *b, const char *name, const char *value)
{
    kf_buf_addf(b, "<dt>%s</dt><dd>", name);
    kf_text_html(b, value && *value ? value : KF_REP_DASH);
    kf_buf_adds(b, "</dd>");
}

static void dd_num(kf_buf *b, const char *name, const json_t *o, const char *key, const char *fmt)
{
    double v;
    char s[64] = "";
    if (kf_rep_num_at(o, key, &v))
        snprintf(s, sizeof s, fmt, v);
    dd(b, name, s);
}

static void dd_bool(kf_buf *b, const char *name, const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    dd(b, name, json_is_boolean(v) ? (json_is_true(v) ? "yes" : "no") : NULL);
}

static void td_provenance(kf_buf *b, const json_t *row)
{
    const json_t *pv = kf_rep_obj_at(row, "provenance"), *p = kf_rep_obj_at(row, "profile");
    const json_t *tm = kf_rep_obj_at(p, "telemetry");
    kf_buf_adds(b, "<td><details><summary>show</summary><dl>");
    dd(b, "node", kf_rep_str_at(pv, "agent_id"));
    dd(b, "host", kf_rep_str_at(pv, "hostname"));
    dd(b, "GPU", kf_rep_str_at(pv, "gpu_name"));
    dd(b, "GPU UUID", kf_rep_str_at(pv, "gpu_uuid"));
    dd(b, "CPU", kf_rep_str_at(pv, "cpu_model"));
    dd(b, "driver", kf_rep_str_at(pv, "driver_version"));
    dd(b, "compiler", kf_rep_str_at(pv, "compiler"));
    dd(b, "kernel hash", kf_rep_str_at(pv, "kernel_hash"));
    dd(b, "artifact hash", kf_rep_str_at(pv, "artifact_hash"));
    char s[96] = "";
    dd(b, "build task", kf_rep_str_at(pv, "build_task_id"));
    dd(b, "SASS archs", kf_rep_str_at(pv, "sass_archs"));
    dd_bool(b, "PTX", pv, "has_ptx");
    dd_num(b, "registers", pv, "registers", "%.0f");
    dd_num(b, "spill bytes", pv, "spill_bytes", "%.0f");
    const char *nv = kf_rep_str_at(pv, "nvcc_cuda"), *dr = kf_rep_str_at(pv, "driver_cuda");
    snprintf(s, sizeof s, "%s / %s", nv ? nv : KF_REP_DASH, dr ? dr : KF_REP_DASH);
    dd(b, "CUDA nvcc / driver", nv || dr ? s : NULL);
    dd(b, "forward compat", kf_rep_str_at(pv, "forward_compat"));
    dd(b, "torch extension", kf_rep_str_at(pv, "torch_extension"));
    dd(b, "agent version", kf_rep_str_at(pv, "agent_version"));
    if (tm) {
        dd_num(b, "SM clock min MHz", tm, "sm_clock_mhz_min", "%.0f");
        dd_num(b, "SM clock max MHz", tm, "sm_clock_mhz_max", "%.0f");
        dd_num(b, "power max W", tm, "power_w_max", "%.0f");
        dd_num(b, "temperature max C", tm, "temp_c_max", "%.0f");
    }
    kf_buf_adds(b, "</dl></details></td>");
}

static void table_row(kf_buf *b, page *pg, const json_t *row)
{
    /* A configuration that failed or was skipped shows its row (red, with
     * why in the flags) but no figure: its numbers are not a result. */
    const json_t *p = kf_rep_result_profile(row);
    char s[320];
    double v;
    int failed = row_failed(row);
    kf_buf_adds(b, failed ? "<tr class=\"failed\">" : "<tr>");
    td(b, NULL, kf_rep_row_kernel(row));
    kf_rep_params_str(pg->rows, row, 0, s, sizeof s);
    td(b, "wrap", s);
    td(b, NULL, kf_rep_row_node(row));
    td(b, "wrap", kf_rep_str_at(row, "device"));
    td_validation(b, kf_rep_obj_at(row, "validation"));
    int ok = kf_rep_num_at(p, "samples", &v) && v > 0;
    snprintf(s, sizeof s, "%.0f", ok ? v : 0);
    td_num(b, ok, ok ? v : 0, s);
    td_times(b, p);
    td_short(b, p, "gbps");
    td_short(b, p, "gflops");
    td_ceiling(b, p);
    td_speedup(b, row);
    /* Its place among its configuration's rows on its device (report_rank.h). */
    ok = kf_rep_num_at(row, "rank", &v) && v > 0;
    snprintf(s, sizeof s, "%.0f", ok ? v : 0);
    td_num(b, ok, ok ? v : 0, s);
    td_flags(b, row, failed);
    td_provenance(b, row);
    kf_buf_adds(b, "</tr>\n");
}

static const char *const columns_names[] = {
    "kernel",     "params",  "node",    "device",
    "validation", "samples", "median",  "p10" KF_REP_DASH "p90",
    "noise",      "GB/s",    "GFLOP/s", "% ceiling",
    "speedup",    "rank",    "flags",   "provenance"};

static void results_table(kf_buf *b, page *pg)
{
    size_t n = sizeof columns_names / sizeof columns_names[0], i;
    const json_t *row;
    kf_buf_adds(b, "<h2 id=\"results\">Results</h2>\n");
    if (!json_array_size(pg->rows)) {
        kf_buf_adds(b, "<p>No validate or profile tasks.</p>\n");
        return;
    }
    kf_buf_adds(b, "<p class=\"note\">Click a column's header to sort by it. Times are medians of "
                   "the stored samples; noise is 1.4826 MAD / median; GB/s and GFLOP/s are at "
                   "the median.</p>\n<table id=\"kf-results\">\n<thead><tr>");
    for (size_t c = 0; c < n; c++)
        kf_buf_addf(b, "<th%s>%s</th>",
                    c == n - 1          ? " class=\"nosort\""
                    : c >= 5 && c <= 13 ? " class=\"n\""
                                        : "",
                    columns_names[c]);
    kf_buf_adds(b, "</tr></thead>\n<tbody>\n");
    json_array_foreach(pg->rows, i, row) table_row(b, pg, row);
    /* No scrolling box around it: that would clip an open provenance card. */
    kf_buf_adds(b, "</tbody></table>\n");
}

/* ---- the page around them ---- */

static const char css[] =
    ":root{color-scheme:light}"
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#1d2330;"
    "background:#fff;max-width:1400px;margin:24px auto;padding:0 16px}"
    "h1{font-size:22px;margin:0 0 4px}"
    "h2{font-size:18px;margin:32px 0 8px;border-bottom:1px solid #dde1ea;padding-bottom:4px}"
    ".meta,.note{color:#5a6270}.nav a{margin-right:12px}"
    "table{border-collapse:collapse;font-size:13px}"
    "th,td{padding:4px 6px;border-bottom:1px solid #e6e8ef;text-align:left;vertical-align:top;"
    "white-space:nowrap}td.wrap{white-space:normal;min-width:8em;max-width:17em}"
    "th{background:#f3f4f8}.n{text-align:right;font-variant-numeric:tabular-nums}"
    "#kf-results th{cursor:pointer;position:sticky;top:0;user-select:none}"
    "#kf-results th.nosort{cursor:default}"
    "#kf-results th[aria-sort=ascending]::after{content:' \\25B2'}"
    "#kf-results th[aria-sort=descending]::after{content:' \\25BC'}"
    "#kf-results tbody tr:hover{background:#f7f8fb}"
    "tr.failed td{background:#fdecea}"
    ".ok{color:#1a7f37}.bad{color:#c62828;font-weight:600}.fail{color:#c62828}.warn{color:#9a6700}"
    ".scroll{overflow-x:auto}"
    "details summary{cursor:pointer;color:#4e79a7}"
    /* an open provenance is a card over the table, not a wider column */
    "td details{position:relative}"
    "td details dl{position:absolute;right:0;z-index:2;width:40em;background:#fff;"
    "border:1px solid #cfd3de;box-shadow:0 4px 14px rgba(0,0,0,.12);padding:8px 10px;"
    "display:grid;grid-template-columns:max-content auto;gap:2px 12px;margin:4px 0;"
    "white-space:normal;word-break:break-all}"
    "dt{color:#5a6270}dd{margin:0;font-family:ui-monospace,Menlo,Consolas,monospace;"
    "font-size:12px}"
    "code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}"
    "pre{background:#f6f7f9;padding:8px;white-space:pre-wrap;word-break:break-word;margin:4px 0 "
    "12px}"
    "svg{max-width:100%;height:auto;display:block;margin:8px 0 4px}"
    "svg text{font-family:system-ui,sans-serif;font-size:12px;fill:#1d2330}"
    "svg .title{font-size:14px;font-weight:600}svg .sub{fill:#5a6270}"
    "svg .val{fill:#3a4250;font-size:11px}svg .ptlabel{font-size:11px}"
    "svg .rooflabel{fill:#c62828;font-size:12px}"
    "svg .grid{stroke:#e6e8ef}svg .axis{stroke:#5a6270}"
    "svg .whisker{stroke:#1d2330;stroke-width:1}"
    "svg .roof{stroke:#c62828;stroke-width:2;fill:none}"
    "svg circle{stroke:#fff;stroke-width:1}";

/* Sorts the results table on a header click: numerically by data-sort
 * where a cell has one (blanks last), else by text, digits as numbers. */
static const char script[] =
    "(function () {\n"
    "  var table = document.getElementById('kf-results');\n"
    "  if (!table) return;\n"
    "  var heads = table.tHead.rows[0].cells;\n"
    "  function key(c) { var s = c.getAttribute('data-sort'); return s === null ? c.textContent "
    ": s; }\n"
    "  function sortBy(col) {\n"
    "    var up = heads[col].getAttribute('aria-sort') !== 'ascending';\n"
    "    var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);\n"
    "    rows.sort(function (a, b) {\n"
    "      var x = key(a.cells[col]), y = key(b.cells[col]);\n"
    "      if (a.cells[col].hasAttribute('data-sort')) {\n"
    "        var fx = x !== '' && Number.isFinite(+x), fy = y !== '' && Number.isFinite(+y);\n"
    "        if (!fx || !fy) return fx === fy ? 0 : fx ? -1 : 1;\n"
    "        return up ? x - y : y - x;\n"
    "      }\n"
    "      var c = x.localeCompare(y, undefined, {numeric: true});\n"
    "      return up ? c : -c;\n"
    "    });\n"
    "    for (var i = 0; i < heads.length; i++) heads[i].removeAttribute('aria-sort');\n"
    "    heads[col].setAttribute('aria-sort', up ? 'ascending' : 'descending');\n"
    "    rows.forEach(function (r) { body.appendChild(r); });\n"
    "  }\n"
    "  for (var i = 0; i < heads.length; i++)\n"
    "    if (!heads[i].classList.contains('nosort'))\n"
    "      heads[i].addEventListener('click', sortBy.bind(null, i));\n"
    "  table.setAttribute('data-sortable', 'yes');\n"
    "})();\n";

static void page_head(kf_buf *b, page *pg)
{
    kf_buf_adds(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                   "<title>");
    kf_text_htmlf(b, "kfleet sweep %.0f: %s", kf_rep_num_or(pg->sweep, "sweep_id", 0),
                  kf_rep_str_at(pg->sweep, "name") ? kf_rep_str_at(pg->sweep, "name") : "");
    kf_buf_addf(b, "</title>\n<style>%s</style>\n</head>\n<body>\n", css);
}

static void totals(kf_buf *b, const json_t *t)
{
    static const char *const states[] = {"succeeded", "failed",   "timed_out", "cancelled",
                                         "pending",   "assigned", "running"};
    kf_buf_addf(b, "<p>%.0f tasks:", kf_rep_num_or(t, "tasks", 0));
    for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
        double n = kf_rep_num_or(t, states[i], 0);
        if (i >= 4 && n == 0)
            continue; /* nothing still pending: the usual case, left unsaid */
        int bad = n > 0 && (i == 1 || i == 2);
        kf_buf_addf(b, "%s %s%.0f %s%s", i ? "," : "", bad ? "<span class=\"bad\">" : "", n,
                    i == 2 ? "timed out" : states[i], bad ? "</span>" : "");
    }
    kf_buf_adds(b, "</p>\n");
}

/* A problem sweep: the reference every row was judged by, and its seed
 * policy (never a seed). */
static void problem_line(kf_buf *b, const json_t *p)
{
    if (!p)
        return;
    const json_t *pol = kf_rep_obj_at(p, "seed_policy"), *refs = kf_rep_obj_at(p, "references");
    double renew, gen;
    kf_buf_adds(b, "<p class=\"meta\">Problem <b>");
    kf_text_html(b, kf_rep_str_at(p, "name"));
    kf_buf_adds(b, "</b> (hash <code>");
    kf_text_html(b, kf_rep_str_at(p, "hash") ? kf_rep_str_at(p, "hash") : KF_REP_DASH);
    kf_buf_addf(b, "</code>) judges every row &middot; seeds: pool of %.0f",
                kf_rep_num_or(pol, "pool_size", 0));
    if (kf_rep_num_at(pol, "renew_s", &renew))
        kf_buf_addf(b, ", renewed every %g s", renew);
    else
        kf_buf_adds(b, ", never renewed");
    if (kf_rep_num_at(pol, "generation", &gen))
        kf_buf_addf(b, ", generation %.0f", gen);
    else
        kf_buf_adds(b, ", no pool stored yet");
    kf_buf_addf(b, " &middot; %.0f references stored for %.0f configurations",
                kf_rep_num_or(refs, "stored", 0), kf_rep_num_or(refs, "configurations", 0));
    const json_t *tol = kf_rep_obj_at(p, "tolerances");
    if (tol)
        kf_buf_addf(b, " &middot; tolerances: the sweep's atol %g, rtol %g for the problem's",
                    kf_rep_num_or(tol, "atol", 0), kf_rep_num_or(tol, "rtol", 0));
    kf_buf_adds(b, "</p>\n");
}

static void page_summary(kf_buf *b, page *pg, const json_t *report)
{
    const json_t *s = pg->sweep;
    const char *fin = kf_rep_str_at(s, "finished"), *base = kf_rep_str_at(s, "baseline");
    kf_buf_adds(b, "<h1>");
    kf_text_htmlf(b, "Sweep %.0f: %s", kf_rep_num_or(s, "sweep_id", 0),
                  kf_rep_str_at(s, "name") ? kf_rep_str_at(s, "name") : "");
    kf_buf_adds(b, "</h1>\n<p class=\"meta\"><code>");
    kf_text_html(b, kf_rep_str_at(s, "file"));
    kf_buf_adds(b, "</code> &middot; created ");
    kf_text_html(b, kf_rep_str_at(s, "created") ? kf_rep_str_at(s, "created") : KF_REP_DASH);
    kf_buf_adds(b, fin ? ", finished " : ", not finished");
    kf_text_html(b, fin);
    if (json_is_true(json_object_get(s, "cancelled")))
        kf_buf_adds(b, " (cancelled)");
    kf_buf_adds(b, " &middot; nodes: ");
    kf_text_html(b, kf_rep_str_at(s, "nodes"));
    if (base) {
        kf_buf_adds(b, " &middot; speedup against ");
        kf_text_html(b, base);
        kf_buf_adds(b, " in the same configuration on the same node");
    }
    kf_buf_adds(b, " &middot; kfleet ");
    kf_text_html(b, kf_rep_str_at(report, "kfleet_version"));
    kf_buf_adds(b, "</p>\n");
    problem_line(b, kf_rep_obj_at(report, "problem"));
    totals(b, kf_rep_obj_at(report, "totals"));
    kf_buf_adds(b, "<p class=\"nav\"><a href=\"#nodes\">Nodes</a><a href=\"#results\">Results</a>"
                   "<a href=\"#kernels\">Per kernel</a><a href=\"#roofline\">Roofline</a>"
                   "<a href=\"#nodes-compared\">Across nodes</a>"
                   "<a href=\"#failures\">Failures</a></p>\n");
}

static void node_line(kf_buf *b, const json_t *a)
{
    const json_t *gpus = json_object_get(a, "gpus"), *g = json_array_get(gpus, 0);
    char dev[320], s[48] = "";
    double v;
    if (g)
        snprintf(dev, sizeof dev, "%s%s",
                 kf_rep_str_at(g, "name") ? kf_rep_str_at(g, "name") : "GPU",
                 json_array_size(gpus) > 1 ? " (several)" : "");
    else
        snprintf(dev, sizeof dev, "%s (CPU)",
                 kf_rep_str_at(a, "cpu_model") ? kf_rep_str_at(a, "cpu_model") : "?");
    kf_buf_adds(b, "<tr>");
    td(b, NULL, kf_rep_str_at(a, "agent_id"));
    td(b, NULL, kf_rep_str_at(a, "hostname"));
    td(b, NULL, dev);
    td(b, NULL, kf_rep_str_at(a, "driver_version"));
    int ok = kf_rep_num_at(a, "ceiling_copy_gbps", &v);
    snprintf(s, sizeof s, "%.0f", ok ? v : 0);
    td_num(b, ok, v, s);
    ok = kf_rep_num_at(a, "ceiling_bf16_tflops", &v);
    snprintf(s, sizeof s, "%.0f", ok ? v : 0);
    td_num(b, ok, v, s);
    const char *note = kf_rep_str_at(a, "doctor_error");
    td(b, NULL, json_is_true(json_object_get(a, "lost")) ? "lost" : note);
    kf_buf_adds(b, "</tr>\n");
}

static void nodes_table(kf_buf *b, page *pg)
{
    size_t i;
    const json_t *a;
    kf_buf_adds(b, "<h2 id=\"nodes\">Nodes</h2>\n");
    if (!json_array_size(pg->agents)) {
        kf_buf_adds(b, "<p>No agent ran a task of this sweep.</p>\n");
        return;
    }
    kf_buf_adds(b, "<div class=\"scroll\"><table>\n<thead><tr><th>node</th><th>host</th>"
                   "<th>device</th><th>driver</th><th class=\"n\">copy GB/s</th>"
                   "<th class=\"n\">bf16 TFLOP/s</th><th>note</th></tr></thead>\n<tbody>\n");
    json_array_foreach(pg->agents, i, a) node_line(b, a);
    kf_buf_adds(b, "</tbody></table></div>\n<p class=\"note\">Ceilings: the doctor's "
                   "device-to-device copy rate (host memcpy on a CPU node) and cuBLAS bf16 "
                   "rate, measured when the agent registered.</p>\n");
}

/* The first lines of an error: enough to see the cause; the whole message
 * is in the JSON. */
static void error_block(kf_buf *b, const char *e)
{
    enum { LINES = 40 };
    const char *p = e;
    for (int l = 0; l < LINES && *p; l++)
        p += strcspn(p, "\n") + (p[strcspn(p, "\n")] == '\n');
    kf_buf_adds(b, "<pre>");
    char *part = strndup(e, (size_t)(p - e));
    kf_text_html(b, part ? part : "");
    free(part);
    if (*p)
        kf_buf_adds(b, "\n\xE2\x80\xA6 (the whole message is in the JSON report)");
    kf_buf_adds(b, "</pre>");
}

static void failures(kf_buf *b, page *pg, const json_t *list)
{
    size_t i;
    const json_t *f;
    char params[320];
    kf_buf_addf(b, "<h2 id=\"failures\">Failures (%zu)</h2>\n", json_array_size(list));
    if (!json_array_size(list)) {
        kf_buf_adds(b, "<p>No task failed or timed out.</p>\n");
        return;
    }
    kf_buf_adds(b, "<ul class=\"failures\">\n");
    json_array_foreach(list, i, f)
    {
        const char *st = kf_rep_str_at(f, "state"), *node = kf_rep_str_at(f, "node"),
                   *e = kf_rep_str_at(f, "error");
        kf_rep_params_str(NULL, f, 0, params, sizeof params);
        kf_buf_adds(b, "<li><b>");
        kf_text_html(b, kf_rep_str_at(f, "kind"));
        kf_buf_adds(b, "</b> ");
        kf_text_htmlf(
            b, "%s%s%s%s on %s: ", kf_rep_str_at(f, "kernel") ? kf_rep_str_at(f, "kernel") : "?",
            params[0] ? " [" : "", params, params[0] ? "]" : "", node ? node : "no node");
        kf_buf_addf(b, "<span class=\"bad\">%s</span>",
                    st && strcmp(st, "timed_out") == 0 ? "timed out" : "failed");
        kf_buf_adds(b, ", task ");
        kf_text_html(b, kf_rep_str_at(f, "task_id") ? kf_rep_str_at(f, "task_id") : "?");
        kf_buf_addf(b, ", attempt %.0f", kf_rep_num_or(f, "attempt", 0));
        if (e)
            error_block(b, e);
        kf_buf_adds(b, "</li>\n");
    }
    kf_buf_adds(b, "</ul>\n");
}

int kf_report_html(const json_t *report, kf_buf *out, kf_err *err)
{
    const char *schema = kf_rep_str_at(report, "schema");
    if (!schema || strcmp(schema, SCHEMA) != 0)
        return kf_err_set(err, KF_EINVAL,
                          "not a kfleet report: the HTML renderer reads schema \"%s\", got %s%s%s",
                          SCHEMA, schema ? "\"" : "", schema ? schema : "none", schema ? "\"" : "");
    page pg = {kf_rep_obj_at(report, "sweep"), json_object_get(report, "rows"),
               json_object_get(report, "agents"), NULL};
    if (!pg.sweep || !json_is_array(pg.rows))
        return kf_err_set(err, KF_EINVAL,
                          "report JSON without its \"sweep\" object or \"rows\" array: it "
                          "was not written by `kfleet report --format json`");
    pg.charts = kf_rep_svg_new(pg.rows, pg.agents);
    int rc = pg.charts ? KF_OK : KF_ENOMEM;
    if (rc == KF_OK) {
        page_head(out, &pg);
        page_summary(out, &pg, report);
        nodes_table(out, &pg);
        results_table(out, &pg);
        kf_rep_svg_kernel_charts(pg.charts, out);
        kf_rep_svg_rooflines(pg.charts, out);
        kf_rep_svg_node_charts(pg.charts, out);
        failures(out, &pg, json_object_get(report, "failures"));
        kf_buf_addf(out, "<script>\n%s</script>\n</body>\n</html>\n", script);
    }
    kf_rep_svg_destroy(&pg.charts);
    if (rc)
        return kf_err_set(err, rc, "out of memory for the charts of %zu rows",
                          json_array_size(pg.rows));
    return KF_OK;
}
