/* report — the report of a sweep in the format asked for; see report.h.
 *
 * The one place that knows the formats: a table of name and renderer.
 * report_rows.c collects the rows; the table and Markdown (report_text.c)
 * and the JSON (report_json.c) render them; the HTML page (report_html.c)
 * and the CSV (report_csv.c) are drawn from that JSON, so every format
 * shows the same figures. No renderer calls back into this file. */
#include "report/report.h"
#include "report/report_rank.h"
#include "report/report_csv.h"
#include "report/report_html.h"
#include "report/report_json.h"
#include "report/report_text.h"

#include <jansson.h>
#include <string.h>

typedef int (*render_fn)(const rep *r, const kf_report_opts *o, kf_buf *out);

static int render_table(const rep *r, const kf_report_opts *o, kf_buf *out)
{
    return kf_rep_render_text(r, 0, o->color, out);
}

static int render_md(const rep *r, const kf_report_opts *o, kf_buf *out)
{
    return kf_rep_render_text(r, 1, o->color, out);
}

static int render_json(const rep *r, const kf_report_opts *o, kf_buf *out)
{
    return kf_rep_render_json(r, !o->omit_samples, out);
}

/* CSV, like HTML, is drawn from the JSON (report_csv.c). */
static int render_csv(const rep *r, const kf_report_opts *o, kf_buf *out)
{
    kf_buf js = KF_BUF_INIT;
    int rc = kf_rep_render_json(r, 0, &js);
    json_t *root = rc ? NULL : json_loadb(js.data, js.len, 0, NULL);
    kf_buf_release(&js);
    if (!rc)
        rc = root ? kf_report_csv(root, r->provenance, out) : KF_ENOMEM;
    json_decref(root);
    return rc;
}

/* The page reads the JSON, not the rows: what it shows is what a script
 * reading the JSON sees. */
static int render_html(const rep *r, const kf_report_opts *o, kf_buf *out)
{
    kf_buf js = KF_BUF_INIT;
    int rc = kf_rep_render_json(r, 0, &js);
    /* Our own JSON fails to load only for want of memory. */
    json_t *root = rc ? NULL : json_loadb(js.data, js.len, 0, NULL);
    kf_buf_release(&js);
    if (!rc)
        rc = root ? kf_report_html(root, out, NULL) : KF_ENOMEM;
    json_decref(root);
    return rc;
}

/* Every format, in the order the help lists them; "markdown" is md's
 * other name. */
static const struct format {
    const char *name, *alias;
    kf_report_format fmt;
    render_fn render;
} formats[] = {
    /* clang-format off */
    {"table", NULL,       KF_REPORT_TABLE, render_table},
    {"md",    "markdown", KF_REPORT_MD,    render_md},
    {"json",  NULL,       KF_REPORT_JSON,  render_json},
    {"html",  NULL,       KF_REPORT_HTML,  render_html},
    {"csv",   NULL,       KF_REPORT_CSV,   render_csv},
    /* clang-format on */
};

static const struct format *format_of(kf_report_format fmt)
{
    for (size_t i = 0; i < sizeof formats / sizeof *formats; i++)
        if (formats[i].fmt == fmt)
            return &formats[i];
    return NULL;
}

int kf_report_parse_format(const char *s)
{
    for (size_t i = 0; s && i < sizeof formats / sizeof *formats; i++)
        if (strcmp(s, formats[i].name) == 0 ||
            (formats[i].alias && strcmp(s, formats[i].alias) == 0))
            return (int)formats[i].fmt;
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
    const struct format *f = format_of(opts->fmt);
    if (!f)
        return kf_err_set(err, KF_EINVAL, "unknown report format %d", (int)opts->fmt);
    rep r;
    int rc = kf_rep_collect(t, sweep_id, opts, &r, err);
    if (rc)
        return rc;
    kf_rep_rank(&r);
    /* Rendered into a scratch buffer so a failure leaves out as it was. */
    kf_buf tmp = KF_BUF_INIT;
    rc = f->render(&r, opts, &tmp);
    if (!rc)
        kf_buf_add(out, tmp.data, tmp.len);
    kf_buf_release(&tmp);
    kf_rep_release(&r);
    if (rc)
        return kf_err_set(err, rc, "sweep %u: failed rendering the report: %s", sweep_id,
                          kf_strerror(rc));
    return KF_OK;
}
