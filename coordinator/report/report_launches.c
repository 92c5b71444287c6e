/* report_launches — a profile's launches by kernel name; see
 * report_launches.h. */
#include "report/report_launches.h"
#include "report/report_output.h"

#include "common/text.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { SHOWN = 3 };

static double total_s(const Kfleet__ProfileStats *ps)
{
    double t = 0;
    for (size_t i = 0; i < ps->n_launches; i++)
        t += ps->launches[i]->seconds;
    return t;
}

/* Launches per run, NAN when not every sample was traced by CUPTI. */
static double per_run(const Kfleet__ProfileStats *ps, const Kfleet__Launch *l)
{
    double runs =
        (double)(ps->samples + ps->discarded + ps->audit_samples) * (ps->batch ? ps->batch : 1);
    return ps->timer && strcmp(ps->timer, "cupti") == 0 && runs > 0 ? (double)l->count / runs : NAN;
}

json_t *kf_rep_launches_json(const Kfleet__ProfileStats *ps)
{
    if (!ps || !ps->n_launches)
        return json_null();
    double t = total_s(ps);
    json_t *a = json_array();
    for (size_t i = 0; i < ps->n_launches; i++) {
        const Kfleet__Launch *l = ps->launches[i];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(l->name ? l->name : ""));
        json_object_set_new(o, "count", json_integer((json_int_t)l->count));
        double pr = per_run(ps, l);
        json_object_set_new(o, "per_run", isfinite(pr) ? json_real(pr) : json_null());
        json_object_set_new(o, "seconds", json_real(l->seconds));
        json_object_set_new(o, "share", t > 0 ? json_real(l->seconds / t) : json_null());
        json_array_append_new(a, o);
    }
    return a;
}

void kf_rep_render_launches(const rep *r, int md, kf_buf *out)
{
    int any = 0;
    kf_text_mode mode = md ? KF_TEXT_MD : KF_TEXT_LINE;
    for (size_t i = 0; i < r->nrows; i++) {
        const rrow *w = &r->rows[i];
        const Kfleet__ProfileStats *ps =
            w->profile && w->profile->res ? w->profile->res->profile : NULL;
        if (!ps || !ps->n_launches)
            continue;
        if (!any)
            kf_buf_adds(out, md ? "\n## Kernels launched\n"
                                : "\nkernels launched (CUPTI, in the timed samples; share of the "
                                  "kernels' time):\n");
        any = 1;
        char params[256];
        kf_rep_task_params(w->profile->task, params, sizeof params);
        kf_buf_adds(out, md ? "- " : "  ");
        kf_text_inert(out, w->kernel_name ? w->kernel_name : "?", mode);
        if (*params) {
            kf_buf_adds(out, " [");
            kf_text_inert(out, params, mode);
            kf_buf_addc(out, ']');
        }
        kf_buf_adds(out, " on ");
        kf_text_inert(out, w->node ? w->node : "?", mode);
        kf_buf_adds(out, ":");
        double t = total_s(ps);
        for (size_t k = 0; k < ps->n_launches && k < SHOWN; k++) {
            const Kfleet__Launch *l = ps->launches[k];
            kf_buf_addf(out, "%s %.1f%% ", k ? "," : "", t > 0 ? 100 * l->seconds / t : 0);
            kf_text_inert(out, l->name ? l->name : "", mode);
            double pr = per_run(ps, l);
            if (isfinite(pr))
                kf_buf_addf(out, " (%.3g per run)", pr);
            else
                kf_buf_addf(out, " (%llu launches)", (unsigned long long)l->count);
        }
        if (ps->n_launches > SHOWN)
            kf_buf_addf(out, ", and %zu more (--format json)", ps->n_launches - SHOWN);
        kf_buf_addc(out, '\n');
    }
}
