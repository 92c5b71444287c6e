/* report — the report of a sweep in the format asked for; see report.h.
 *
 * The one place that knows the formats: a table of name and printer. The
 * report is built once from the store (report_model.h), typed; the table
 * and Markdown (report_text.c) and the CSV (report_csv.c) print its rows;
 * the JSON printer (report_json.c) makes its tree from them, which the
 * HTML page (report_html.c) reads, so every format shows the same figures.
 * No printer calls back into this file or re-parses another's output. */
#include "report/report.h"
#include "report/report_csv.h"
#include "report/report_html.h"
#include "report/report_json.h"
#include "report/report_model.h"
#include "report/report_text.h"

#include <string.h>

/* Each printer reads the model (report_model.h). */
typedef int (*render_fn)(const kf_report_model *m, const kf_report_opts *o, kf_buf *out);

static int render_table(const kf_report_model *m, const kf_report_opts *o, kf_buf *out)
{
    return kf_rep_render_text(kf_report_model_rows(m), 0, o->color, out);
}

static int render_md(const kf_report_model *m, const kf_report_opts *o, kf_buf *out)
{
    return kf_rep_render_text(kf_report_model_rows(m), 1, o->color, out);
}

/* The JSON printer's tree, with each profile's samples unless asked not
 * to (HTML: never; it would only parse and drop them). */
static int with_tree(const kf_report_model *m, int with_samples, kf_buf *out,
                     int (*print)(const json_t *doc, kf_buf *out))
{
    json_t *doc = kf_rep_json_doc(kf_report_model_rows(m), with_samples);
    if (!doc)
        return KF_ENOMEM;
    int rc = print(doc, out);
    json_decref(doc);
    return rc;
}

static int render_json(const kf_report_model *m, const kf_report_opts *o, kf_buf *out)
{
    return with_tree(m, !o->omit_samples, out, kf_rep_json_write);
}

static int render_csv(const kf_report_model *m, const kf_report_opts *o, kf_buf *out)
{
    return kf_report_csv(kf_report_model_rows(m), o->provenance, out);
}

/* The page reads the tree the JSON printer makes: what it shows is what a
 * script reading the JSON sees. */
static int print_html(const json_t *doc, kf_buf *out)
{
    return kf_report_html(doc, out, NULL);
}

static int render_html(const kf_report_model *m, const kf_report_opts *o, kf_buf *out)
{
    (void)o;
    return with_tree(m, 0, out, print_html);
}

/* Every format, in kf_report_format order (the order the help lists them);
 * "md|markdown": md has another name. */
const char *const kf_report_format_names[] = {"table", "md|markdown", "json", "html", "csv", NULL};

static const render_fn renderers[] = {
    [KF_REPORT_TABLE] = render_table, [KF_REPORT_MD] = render_md,   [KF_REPORT_JSON] = render_json,
    [KF_REPORT_HTML] = render_html,   [KF_REPORT_CSV] = render_csv,
};

int kf_report_parse_format(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    for (int i = 0; s && kf_report_format_names[i]; i++)
        for (const char *p = kf_report_format_names[i]; *p;) {
            size_t len = strcspn(p, "|");
            if (len == n && strncmp(p, s, n) == 0)
                return i;
            p += len + (p[len] == '|');
        }
    return -1;
}

int kf_report_parse_group(const char *s)
{
    static const char *const names[] = {"kernel", "gpu", "node", "config"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

int kf_report_render(kf_txn *t, uint32_t sweep_id, kf_report_format fmt, int color, kf_buf *out,
                     kf_err *err)
{
    kf_report_opts o = {.fmt = fmt, .color = color};
    return kf_report_render_opts(t, sweep_id, &o, out, err);
}

int kf_report_render_opts(kf_txn *t, uint32_t sweep_id, const kf_report_opts *opts, kf_buf *out,
                          kf_err *err)
{
    render_fn render =
        (unsigned)opts->fmt < sizeof renderers / sizeof *renderers ? renderers[opts->fmt] : NULL;
    if (!render)
        return kf_err_set(err, KF_EINVAL, "unknown report format %d", (int)opts->fmt);
    kf_report_model *m = NULL;
    int rc = kf_report_model_new(t, sweep_id, opts, &m, err);
    if (rc)
        return rc;
    /* Rendered into a scratch buffer so a failure leaves out as it was. */
    kf_buf tmp = KF_BUF_INIT;
    rc = render(m, opts, &tmp);
    if (!rc)
        kf_buf_add(out, tmp.data, tmp.len);
    kf_buf_release(&tmp);
    kf_report_model_destroy(&m);
    if (rc)
        return kf_err_set(err, rc, "sweep %u: failed rendering the report: %s", sweep_id,
                          kf_strerror(rc));
    return KF_OK;
}
