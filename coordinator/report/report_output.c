/* report_output — the kernels' own output in the text and Markdown
 * reports; see report_output.h. Each task shows OUT_LINES lines at most,
 * each cut to OUT_LINE_BYTES: a kernel that prints a line per run must not
 * bury the table above it; the JSON report has the rest. */
#include "report/report_output.h"

#include "common/text.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

enum { OUT_LINES = 6, OUT_LINE_BYTES = 200 };

void kf_rep_task_params(const Kfleet__Task *t, char *out, size_t len)
{
    size_t off = 0;
    out[0] = '\0';
    for (size_t i = 0; i < t->n_params && off < len; i++)
        off += (size_t)snprintf(out + off, len - off, "%s%s=%lld", i ? " " : "",
                                kf_rep_nz(t->params[i]->name), (long long)t->params[i]->value);
}

/* One task's header and first lines. */
static void render_one(const rep *r, const rtask *rt, int md, kf_buf *out)
{
    const Kfleet__Result *res = rt->res;
    kf_text_mode mode = md ? KF_TEXT_MD : KF_TEXT_LINE; /* the header's */
    char params[256];
    kf_rep_task_params(rt->task, params, sizeof params);
    kf_buf_adds(out, md ? "\n- " : "  ");
    kf_buf_adds(out, rt->kind->name);
    kf_buf_addc(out, ' ');
    kf_text_inert(out, kf_rep_kernel_name(r, rt->task->kernel_index), mode);
    if (*params) {
        kf_buf_adds(out, " [");
        kf_text_inert(out, params, mode);
        kf_buf_addc(out, ']');
    }
    kf_buf_adds(out, " on ");
    kf_text_inert(out, *kf_rep_node_of(rt) ? kf_rep_node_of(rt) : "no node", mode);
    kf_buf_addf(out, ", task 0x%llx: %" PRIu64 " bytes%s\n", (unsigned long long)rt->task->task_id,
                res->kernel_output_bytes,
                res->kernel_output_bytes > res->kernel_output.len ? " (first and last part kept)"
                                                                  : "");
    /* The lines as shown, each made inert and cut as shown (a byte that is
     * not text shows as 4), on a character's start; in Markdown inside a
     * fence that nothing in them can close. */
    const char *p = (const char *)res->kernel_output.data, *end = p + res->kernel_output.len;
    kf_buf block = KF_BUF_INIT, line = KF_BUF_INIT;
    for (int lines = 0; p < end && lines < OUT_LINES; lines++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        kf_buf_reset(&line);
        kf_text_inert_n(&line, p, len, KF_TEXT_LINE);
        size_t show = line.len > OUT_LINE_BYTES ? OUT_LINE_BYTES : line.len;
        while (show < line.len && show > 0 && ((unsigned char)line.data[show] & 0xC0) == 0x80)
            show--;
        kf_buf_adds(&block, md ? "  " : "      ");
        kf_buf_add(&block, line.data, show);
        kf_buf_adds(&block, show < line.len ? " ...\n" : "\n");
        p += len + (nl != NULL);
    }
    size_t more = 0;
    for (const char *q = p; q < end; more++) {
        const char *nl = memchr(q, '\n', (size_t)(end - q));
        q = nl ? nl + 1 : end;
    }
    size_t fence = md && block.len ? kf_text_fence_len(block.data) : 0;
    for (int pass = 0; pass < 2 && fence; pass++) {
        if (pass)
            kf_buf_add(out, block.data, block.len);
        kf_buf_adds(out, "  ");
        for (size_t i = 0; i < fence; i++)
            kf_buf_addc(out, '`');
        kf_buf_addc(out, '\n');
    }
    if (!fence && block.len)
        kf_buf_add(out, block.data, block.len);
    if (more)
        kf_buf_addf(out, "%s... %zu more line%s: kfleet report %u --format json\n",
                    md ? "  " : "      ", more, more == 1 ? "" : "s", r->sw->sweep_id);
    kf_buf_release(&line);
    kf_buf_release(&block);
}

void kf_rep_render_output(const rep *r, int md, kf_buf *out)
{
    int any = 0;
    for (size_t i = 0; i < r->ntasks; i++) {
        const rtask *rt = &r->tasks[i];
        if (!rt->res || rt->res->kernel_output_bytes == 0)
            continue;
        if (!any)
            kf_buf_adds(out,
                        md ? "\n## Kernel output\n" : "\nkernel output (stdout and stderr):\n");
        any = 1;
        render_one(r, rt, md, out);
    }
}
