/* report_fields — see report_fields.h. */
#include "report/report_fields.h"

#include <math.h>

size_t kf_rep_row_flags(const rrow *w, const char *out[KF_REP_MAX_FLAGS])
{
    size_t n = 0;
    if (w->noisy)
        out[n++] = "noisy";
    if (w->imprecise)
        out[n++] = "imprecise";
    if (w->waits_capped)
        out[n++] = "throttle-waits-capped";
    if (isfinite(w->outlier_pct))
        out[n++] = "outlier";
    if (w->profile && w->profile->nthrottled)
        out[n++] = "throttled";
    if (w->at_power_cap)
        out[n++] = "sustained-at-power-cap";
    if (w->outside_stream_s > 0)
        out[n++] = "outside-stream";
    if (w->impossible_of)
        out[n++] = "impossible";
    if (w->mismatch)
        out[n++] = "samples-mismatch";
    if (w->build && w->build->jit_fallback)
        out[n++] = "jit-fallback";
    if ((w->validate && kf_rep_is_failure(kf_rep_state_of(w->validate))) ||
        (w->profile && kf_rep_is_failure(kf_rep_state_of(w->profile))))
        out[n++] = "failed";
    return n;
}

double kf_rep_max_abs_err(const rtask *vt)
{
    double mx = NAN;
    for (size_t i = 0; vt->res && i < vt->res->n_trials; i++) {
        double e = vt->res->trials[i]->max_abs_err;
        mx = !(e <= mx) ? e : mx;
    }
    return mx;
}

const char *kf_rep_compiler(const rrow *w)
{
    const Kfleet__AgentInfo *a = w->agent;
    if (w->build && w->build->compiler && *w->build->compiler)
        return w->build->compiler;
    if (!a)
        return NULL;
    return w->kref && w->kref->cuda ? a->nvcc_version : a->cc_version;
}
