/* report_rowtime — a finished sweep's runner time row by row (issue 45;
 * kf_rep_row_time, contract in report_rows.h). The sweep's slot time says
 * where all the slots went; a kernel-generation loop pays per candidate,
 * and a phase that is small in the sum can be most of a cheap candidate's
 * cost (a 2 us Triton kernel's warm-up, seconds of launches) while one
 * costly row hides the rest. */
#include "report/report_rowtime.h"

#include "common/stats.h"
#include "common/text.h"
#include "report/report_output.h"

#include <stdlib.h>
#include <string.h>

/* Adds s to phase (task, name) of list ph, in first-seen order. */
static void add(kf_rep_rphase *ph, size_t *n, const char *task, const char *name, double s)
{
    size_t j = 0;
    while (j < *n && !(strcmp(ph[j].task, task) == 0 && strcmp(ph[j].name, name) == 0))
        j++;
    if (j == *n) {
        if (*n == KF_REP_MAX_RPHASES)
            return;
        ph[(*n)++] = (kf_rep_rphase){task, name, 0};
    }
    ph[j].s += s;
}

/* Row w's runner time into ph; its seconds. */
static double row_phases(const rrow *w, kf_rep_rphase *ph, size_t *n)
{
    const rtask *ts[2] = {w->validate, w->profile};
    const char *kinds[2] = {"validate", "profile"};
    double total = 0;
    for (int k = 0; k < 2; k++) {
        const Kfleet__Result *res = ts[k] ? ts[k]->res : NULL;
        if (!res || !(res->elapsed_s > 0))
            continue;
        double phased = 0;
        for (size_t i = 0; i < res->n_phases; i++) {
            add(ph, n, kinds[k], res->phases[i]->name, res->phases[i]->seconds);
            phased += res->phases[i]->seconds;
        }
        double runner = kf_rep_runner_s(res);
        if (runner > phased)
            add(ph, n, kinds[k], "other", runner - phased);
        total += runner;
    }
    return total;
}

static int by_size(const void *a, const void *b)
{
    double x = ((const kf_rep_rphase *)a)->s, y = ((const kf_rep_rphase *)b)->s;
    return x < y ? 1 : x > y ? -1 : 0;
}

size_t kf_rep_row_time(const rep *r, kf_rep_rowtime *out)
{
    memset(out, 0, sizeof *out);
    if (!r->sw->finished_ns || !r->nrows)
        return 0;
    double *secs = malloc(r->nrows * sizeof *secs);
    if (!secs)
        return 0;
    size_t rows = 0;
    for (size_t i = 0; i < r->nrows; i++) {
        kf_rep_rphase own[KF_REP_MAX_RPHASES];
        size_t nown = 0;
        double s = row_phases(&r->rows[i], own, &nown);
        if (!nown)
            continue;
        secs[rows++] = s;
        for (size_t j = 0; j < nown; j++)
            add(out->mean, &out->nmean, own[j].task, own[j].name, own[j].s);
        if (!out->costliest || s > out->costliest_s) {
            out->costliest = &r->rows[i];
            out->costliest_s = s;
            memcpy(out->worst, own, nown * sizeof *own);
            out->nworst = nown;
        }
    }
    kf_stats st;
    if (rows && kf_stats_compute(secs, rows, &st) == KF_OK) {
        out->median_s = st.median;
        out->mean_s = st.mean;
        for (size_t j = 0; j < out->nmean; j++)
            out->mean[j].s /= (double)rows;
        qsort(out->mean, out->nmean, sizeof *out->mean, by_size);
        qsort(out->worst, out->nworst, sizeof *out->worst, by_size);
    }
    free(secs);
    return rows;
}

/* Up to max phases of ph as " validate run 1.19 s (16%)," of total. */
static void phase_list(kf_buf *out, const kf_rep_rphase *ph, size_t n, size_t max, double total,
                       kf_text_mode mode)
{
    for (size_t i = 0; i < n && i < max; i++) {
        kf_buf_addf(out, "%s %s ", i ? "," : "", ph[i].task);
        kf_text_inert_n(out, ph[i].name, strlen(ph[i].name), mode);
        kf_buf_addf(out, " %.2f s (%.0f%%)", ph[i].s, total > 0 ? ph[i].s / total * 100 : 0);
    }
}

void kf_rep_row_time_text(const rep *r, int md, kf_buf *out)
{
    kf_rep_rowtime t;
    size_t rows = kf_rep_row_time(r, &t);
    if (rows < 2) /* one row: the slot time line is its own */
        return;
    kf_text_mode mode = md ? KF_TEXT_MD : KF_TEXT_LINE;
    kf_buf_addf(out, "%sslot time a row (%zu rows that ran): median %.2f s, mean %.2f s:",
                md ? "- " : "  ", rows, t.median_s, t.mean_s);
    phase_list(out, t.mean, t.nmean, 8, t.mean_s, mode);
    const rrow *w = t.costliest;
    const rtask *rt = w->validate ? w->validate : w->profile;
    char params[256];
    kf_rep_task_params(rt->task, params, sizeof params);
    kf_buf_adds(out, "; costliest ");
    kf_text_inert_n(out, w->kernel_name, strlen(w->kernel_name), mode);
    if (*params) {
        kf_buf_adds(out, " [");
        kf_text_inert_n(out, params, strlen(params), mode);
        kf_buf_adds(out, "]");
    }
    kf_buf_addf(out, " %.2f s:", t.costliest_s);
    phase_list(out, t.worst, t.nworst, 4, t.costliest_s, mode);
    kf_buf_addc(out, '\n');
}
