/* report_json — the report as JSON, schema kfleet.report/2
 * (docs/report-json.md), from the rows report_rows.c collected. Every value
 * that does not apply is null, never 0; numbers that are not finite are
 * null too. */
#include "report/report_json.h"
#include "report/report_fields.h"
#include "common/json.h"
#include "report/report_launches.h"
#include "report/report_rank.h"
#include "common/taskkind.h"
#include "common/text.h"
#include "common/xalloc.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Text from a node, a kernel or a sweep file (names, notes, versions):
 * made valid UTF-8 by kf_json_str; NULL is null. */
static json_t *jtext(const char *s)
{
    return kf_json_str(s);
}

static json_t *jstr(const char *s)
{
    return jtext(kf_rep_nz(s));
}

/* A number, or null where there is none: JSON has no NaN. */
static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* kfleet's own words (a state or kind name, a time it formatted, a task
 * id, the schema): ASCII, nothing to make valid, unlike the text that
 * comes from a node or a kernel, which goes through jtext. */
static json_t *jword(const char *s)
{
    return json_string(s);
}

static json_t *jstr_or_null(const char *s)
{
    return s && *s ? jtext(s) : json_null();
}

static void set(json_t *o, const char *key, json_t *v)
{
    /* v is NULL only out of memory (kf_json_str writes an agent's odd
     * bytes as "\xff"): null then, never a key dropped silently. */
    json_object_set_new(o, key, v ? v : json_null());
}

/* A task id as every format writes it: "0x" and hex (sweep << 32 | index),
 * a string, since past 2^53 a JSON number loses digits. */
static json_t *jtask(uint64_t id)
{
    char s[24];
    snprintf(s, sizeof s, "0x%llx", (unsigned long long)id);
    return jword(s);
}

static json_t *json_task_common(const rtask *rt)
{
    json_t *o = json_object();
    set(o, "task_id", jtask(rt->task->task_id));
    set(o, "state", jword(kf_rep_state_name(kf_rep_state_of(rt))));
    set(o, "attempt", rt->res ? json_integer(rt->res->attempt) : json_null());
    set(o, "agent_id", jstr_or_null(rt->res ? rt->res->agent_id : rt->task->agent_id));
    set(o, "elapsed_s", rt->res ? jnum(rt->res->elapsed_s) : json_null());
    set(o, "error", jstr_or_null(kf_rep_err_of(rt)));
    /* Where the task's checks ran ("device", or "host: " and why) and where
     * its runner's time went: what a row's checks cost, row by row. */
    set(o, "checks_on",
        rt->res && rt->res->compare && *rt->res->compare ? jtext(rt->res->compare) : json_null());
    /* What the kernel wrote on its stdout and stderr (agent/kout.h): every
     * byte counted, the first and last part kept, made inert (not always
     * UTF-8); null when it wrote nothing. */
    if (rt->res && rt->res->kernel_output_bytes) {
        json_t *out = json_object();
        kf_buf text = KF_BUF_INIT;
        kf_text_inert_n(&text, (const char *)rt->res->kernel_output.data,
                        rt->res->kernel_output.len, KF_TEXT_BLOCK);
        set(out, "bytes", json_integer((json_int_t)rt->res->kernel_output_bytes));
        set(out, "kept", jtext(text.data ? text.data : ""));
        kf_buf_release(&text);
        set(o, "output", out);
    } else {
        set(o, "output", json_null());
    }
    /* A candidate's agent that lacked the stored references computed them
     * first (agent/checkers.h); differ: not bitwise the stored ones. */
    if (rt->res && rt->res->references_recomputed) {
        json_t *rc = json_object();
        set(rc, "count", json_integer(rt->res->references_recomputed));
        set(rc, "differ", json_integer(rt->res->references_differ));
        set(o, "references_computed_here", rc);
    } else {
        set(o, "references_computed_here", json_null());
    }
    json_t *ph = json_object();
    for (size_t i = 0; rt->res && i < rt->res->n_phases; i++)
        set(ph, rt->res->phases[i]->name, jnum(rt->res->phases[i]->seconds));
    set(o, "phases_s", ph);
    return o;
}

static json_t *jtol(double x)
{
    return isfinite(x) ? json_real(x) : jword(isnan(x) ? "nan" : x > 0 ? "inf" : "-inf");
}

/* secret: a problem sweep's trial, whose seed came from the problem's
 * secret pool: its seed is not written (docs/problems.md). */
static json_t *json_validation(const rtask *vt, int secret)
{
    json_t *v = json_task_common(vt);
    const Kfleet__Result *res = vt->res;
    json_t *trials = json_array();
    for (size_t i = 0; res && i < res->n_trials; i++) {
        const Kfleet__ValidateTrial *t = res->trials[i];
        json_t *jt = json_object();
        char seed[24]; /* uint64: past 2^63 a JSON integer reads as negative */
        snprintf(seed, sizeof seed, "%llu", (unsigned long long)t->seed);
        set(jt, "seed", secret ? json_null() : jword(seed));
        set(jt, "max_abs_err", jnum(t->max_abs_err));
        set(jt, "rel_err", jnum(t->rel_err));
        set(jt, "nonfinite", json_integer((json_int_t)t->nonfinite));
        set(jt, "passed", json_boolean(t->passed));
        /* Where each bound came closest to breaking (a host comparison). */
        if (t->located) {
            json_t *w = json_object();
            set(w, "index", json_integer((json_int_t)t->max_abs_at));
            set(w, "out", jnum(t->max_abs_out));
            set(w, "ref", jnum(t->max_abs_ref));
            set(jt, "worst_abs", w);
        } else {
            set(jt, "worst_abs", json_null());
        }
        if (t->located && res->close) {
            json_t *w = json_object();
            set(w, "not_close", json_integer((json_int_t)t->not_close));
            set(w, "index", json_integer((json_int_t)t->close_at));
            set(w, "out", jnum(t->close_out));
            set(w, "ref", jnum(t->close_ref));
            set(w, "ratio", jnum(t->close_ratio));
            set(jt, "worst_close", w);
        } else {
            set(jt, "worst_close", json_null());
        }
        json_array_append_new(trials, jt);
    }
    set(v, "passed", res ? json_boolean(res->state == KFLEET__TASK_STATE__SUCCEEDED) : json_null());
    set(v, "max_abs_err", jnum(kf_rep_max_abs_err(vt)));
    set(v, "deterministic", res ? json_boolean(res->deterministic) : json_null());
    /* Never null (issue 29): a number, "inf"/"-inf"/"nan" where it is not
     * finite (the runner refuses those, but an older record may hold one),
     * and absent when the task never learned the kernel's. */
    if (res && (res->n_trials || res->tol_abs != 0 || res->tol_rel != 0)) {
        set(v, "tol_abs", jtol(res->tol_abs));
        set(v, "tol_rel", jtol(res->tol_rel));
    }
    /* numpy.isclose's bound where the kernel or problem states it. */
    set(v, "atol", res && res->close ? jtol(res->atol) : json_null());
    set(v, "rtol", res && res->close ? jtol(res->rtol) : json_null());
    set(v, "sanitizer",
        res && res->sanitizer && *res->sanitizer ? jtext(res->sanitizer) : json_null());
    set(v, "trials", trials);
    return v;
}

static json_t *json_profile(const rrow *w, int with_samples)
{
    const rtask *pt = w->profile;
    const Kfleet__ProfileStats *ps = pt->res ? pt->res->profile : NULL;
    json_t *p = json_task_common(pt);
    set(p, "samples", json_integer((json_int_t)pt->nsamples));
    set(p, "samples_reported", pt->res ? json_integer(pt->res->sample_count) : json_null());
    set(p, "throttled_samples", json_integer((json_int_t)pt->nthrottled));
    set(p, "discarded_samples", json_integer((json_int_t)pt->ndiscarded));
    set(p, "audit_samples", json_integer((json_int_t)pt->naudit));
    set(p, "fresh_samples",
        pt->res && pt->res->profile ? json_integer(pt->res->profile->fresh_samples) : json_null());
    set(p, "throttle_policy", ps ? jword(ps->throttle_keep ? "keep" : "discard") : json_null());
    set(p, "clock_threshold_mhz",
        ps && ps->clock_threshold_mhz ? json_integer(ps->clock_threshold_mhz) : json_null());
    set(p, "default_sm_clock_mhz",
        ps && ps->default_sm_clock_mhz ? json_integer(ps->default_sm_clock_mhz) : json_null());
    set(p, "sm_clock_median_mhz", w->sm_clock_mhz ? json_integer(w->sm_clock_mhz) : json_null());
    set(p, "power_median_w", w->power_mw ? jnum(w->power_mw / 1e3) : json_null());
    set(p, "sustained_at_power_cap", json_boolean(w->at_power_cap));
    set(p, "outside_stream_s", w->outside_stream_s > 0 ? jnum(w->outside_stream_s) : json_null());
    set(p, "timer", ps && ps->timer && *ps->timer ? jtext(ps->timer) : json_null());
    set(p, "event_median_s", ps && ps->event_median_s > 0 ? jnum(ps->event_median_s) : json_null());
    set(p, "host_call_s", ps && ps->host_call_s > 0 ? jnum(ps->host_call_s) : json_null());
    /* A host profile measured beside another one on its machine. */
    set(p, "host_shared", json_boolean(ps && ps->host_shared));
    set(p, "host_wait_s", ps && ps->host_wait_s > 0 ? jnum(ps->host_wait_s) : json_null());
    set(p, "median_s", jnum(w->st.median));
    set(p, "mean_s", jnum(w->st.mean));
    set(p, "min_s", jnum(w->st.min));
    set(p, "max_s", jnum(w->st.max));
    set(p, "stddev_s", jnum(w->st.stddev));
    set(p, "p10_s", jnum(w->st.p10));
    set(p, "p90_s", jnum(w->st.p90));
    json_t *ci = json_array();
    json_array_append_new(ci, jnum(w->st.ci_lo));
    json_array_append_new(ci, jnum(w->st.ci_hi));
    set(p, "median_ci95_s", isfinite(w->st.ci_lo) ? ci : (json_decref(ci), json_null()));
    set(p, "noise_pct", jnum(w->st.noise_pct));
    set(p, "rsd_pct", jnum(w->st.rsd_pct));
    set(p, "converged", ps ? json_boolean(ps->converged) : json_null());
    /* The stopping rule: the median's 95 % half-width, achieved (from the
     * stored samples, as every figure) and asked for. */
    set(p, "precision_pct",
        isfinite(kf_stats_precision_pct(&w->st)) ? jnum(kf_stats_precision_pct(&w->st))
                                                 : json_null());
    set(p, "precision_target_pct",
        ps && ps->precision_target_pct > 0 ? jnum(ps->precision_target_pct) : json_null());
    set(p, "timer_tick_s", ps && ps->timer_tick_s > 0 ? jnum(ps->timer_tick_s) : json_null());
    set(p, "imprecise", json_boolean(w->imprecise));
    if (ps && ps->thermal && *ps->thermal) {
        json_t *th = json_object();
        set(th, "protocol", jtext(ps->thermal));
        set(th, "warmup_s", jnum(ps->warmup_s));
        set(th, "warmup_samples", json_integer(ps->warmup_samples));
        set(th, "warmup_slot_warm", json_boolean(ps->warmup_slot_warm));
        set(th, "warmup_at_default", json_boolean(ps->warmup_at_default));
        set(th, "steady_sm_clock_mhz",
            ps->steady_sm_clock_mhz ? json_integer(ps->steady_sm_clock_mhz) : json_null());
        set(th, "clock_steady", json_boolean(ps->clock_steady));
        set(th, "measured_s", jnum(ps->measured_s));
        set(th, "throttle_wait_s", jnum(ps->throttle_wait_s));
        set(th, "waits_skipped", json_integer(ps->waits_skipped));
        set(th, "rest_s", jnum(ps->rest_s));
        set(th, "span_s", jnum(ps->span_s));
        set(p, "thermal", th);
    } else {
        set(p, "thermal", json_null());
    }
    set(p, "bytes", ps ? jnum(ps->bytes) : json_null());
    set(p, "flops", ps ? jnum(ps->flops) : json_null());
    set(p, "output_dtype",
        ps && ps->output_dtype && *ps->output_dtype ? json_string(ps->output_dtype) : json_null());
    set(p, "launches", kf_rep_launches_json(ps));
    set(p, "gbps", jnum(w->gbps));
    set(p, "gflops", jnum(w->gflops));
    set(p, "pct_copy_ceiling", jnum(w->pct_bw));
    set(p, "pct_bf16_ceiling", jnum(w->pct_mma));
    set(p, "hot", ps ? json_boolean(ps->hot) : json_null());
    set(p, "batch", ps ? json_integer(ps->batch) : json_null());
    set(p, "input_sets", ps && ps->input_sets ? json_integer(ps->input_sets) : json_null());
    /* How many sets the median is over (1: the plain median of the samples;
     * K: the mean of K sets' medians, common/stats.h). */
    set(p, "median_over_sets", w->st.sets ? json_integer(w->st.sets) : json_null());
    const Kfleet__TelemetrySummary *ts = pt->res ? pt->res->telemetry : NULL;
    if (ts) {
        json_t *t = json_object();
        set(t, "gpu_uuid", jstr_or_null(ts->gpu_uuid));
        set(t, "readings", json_integer(ts->readings));
        set(t, "period_s", jnum(ts->period_s));
        set(t, "sm_clock_mhz_min", json_integer(ts->sm_clock_min_mhz));
        set(t, "sm_clock_mhz_max", json_integer(ts->sm_clock_max_mhz));
        set(t, "mem_clock_mhz_min", json_integer(ts->mem_clock_min_mhz));
        set(t, "mem_clock_mhz_max", json_integer(ts->mem_clock_max_mhz));
        set(t, "power_w_max", jnum(ts->power_max_mw / 1e3));
        set(t, "temp_c_max", json_integer(ts->temp_max_c));
        set(t, "clock_event_reasons", json_integer((json_int_t)ts->reasons_seen));
        set(t, "throttled_readings", json_integer(ts->throttled_readings));
        set(p, "telemetry", t);
    } else {
        set(p, "telemetry", json_null());
    }
    json_t *ncu = json_array();
    for (size_t i = 0; pt->res && i < pt->res->n_ncu; i++) {
        const Kfleet__Metric *m = pt->res->ncu[i];
        json_t *jm = json_object();
        set(jm, "name", jstr_or_null(m->name));
        set(jm, "kernel", jstr_or_null(m->kernel));
        set(jm, "value", jnum(m->value));
        set(jm, "unit", jstr_or_null(m->unit));
        set(jm, "launches", json_integer(m->launches));
        json_array_append_new(ncu, jm);
    }
    set(p, "ncu", ncu);
    /* The evidence, unless the caller renders for its own reading (HTML,
     * CSV, compare): millions of numbers it would only parse and drop. */
    if (with_samples) {
        json_t *times = json_array();
        for (size_t i = 0; i < pt->nsamples; i++)
            json_array_append_new(times, jnum(pt->samples[i]));
        set(p, "sample_seconds", times);
        /* Each sample's input set, beside its time, where the median is
         * over sets: a replay of the stopping rule needs both. */
        if (w->st.sets > 1) {
            json_t *sets = json_array();
            for (size_t i = 0; i < pt->nsamples; i++)
                json_array_append_new(sets, json_integer(pt->set[i]));
            set(p, "sample_sets", sets);
        }
    }
    return p;
}

static json_t *json_row(const rep *r, const rrow *w, int with_samples)
{
    json_t *o = json_object();
    const rtask *any = w->profile ? w->profile : w->validate;
    const Kfleet__KernelRef *k = w->kref;
    const Kfleet__AgentInfo *a = w->agent;
    set(o, "kernel", jtext(w->kernel_name));
    /* The name the kernel declares itself, when that is another. */
    set(o, "declared_name", w->declared ? jtext(w->declared) : json_null());
    set(o, "kernel_index", json_integer(w->kernel));
    set(o, "config_index", json_integer(w->config));
    json_t *params = json_object();
    for (size_t i = 0; i < any->task->n_params; i++)
        set(params, kf_rep_nz(any->task->params[i]->name),
            json_integer(any->task->params[i]->value));
    set(o, "params", params);
    set(o, "node", jstr_or_null(w->node));
    set(o, "device", jtext(w->device));

    json_t *prov = json_object();
    set(prov, "agent_id", jstr_or_null(w->node));
    set(prov, "hostname", a ? jstr_or_null(a->hostname) : json_null());
    set(prov, "gpu_name", a && a->n_gpus ? jstr_or_null(a->gpus[0]->name) : json_null());
    set(prov, "gpu_uuid", a && a->n_gpus ? jstr_or_null(a->gpus[0]->uuid) : json_null());
    set(prov, "cpu_model", a ? jstr_or_null(a->cpu_model) : json_null());
    set(prov, "driver_version", a ? jstr_or_null(a->driver_version) : json_null());
    /* The compiler the build reported; the agent's inventory otherwise. */
    set(prov, "compiler", jstr_or_null(kf_rep_compiler(w)));
    set(prov, "kernel_hash", k ? jstr_or_null(k->hash) : json_null());
    set(prov, "build_task_id", w->build ? jtask(w->build_task) : json_null());
    set(prov, "artifact_hash", w->build ? jstr_or_null(w->build->artifact_hash) : json_null());
    set(prov, "agent_version", a ? jstr_or_null(a->version) : json_null());
    const Kfleet__BuildInfo *b = w->build;
    set(prov, "sass_archs",
        b && b->sass_archs && *b->sass_archs ? jtext(b->sass_archs) : json_null());
    set(prov, "has_ptx", b && k && k->cuda ? json_boolean(b->has_ptx) : json_null());
    set(prov, "jit_fallback", b && k && k->cuda ? json_boolean(b->jit_fallback) : json_null());
    set(prov, "registers", b && k && k->cuda ? json_integer(b->registers) : json_null());
    set(prov, "spill_bytes", b && k && k->cuda ? json_integer(b->spill_bytes) : json_null());
    set(prov, "nvcc_cuda", b && b->nvcc_cuda && *b->nvcc_cuda ? jtext(b->nvcc_cuda) : json_null());
    set(prov, "driver_cuda",
        b && b->driver_cuda && *b->driver_cuda ? jtext(b->driver_cuda) : json_null());
    set(prov, "forward_compat",
        b && b->forward_compat && *b->forward_compat ? jtext(b->forward_compat) : json_null());
    set(prov, "torch_extension",
        b && b->torch_extension && *b->torch_extension ? jtext(b->torch_extension) : json_null());
    /* Which task of its runner process each ran as (1: a fresh runner;
     * more: a serving runner that had the kernel and context loaded). */
    set(prov, "validate_runner_task",
        w->validate && w->validate->res && w->validate->res->runner_task
            ? json_integer(w->validate->res->runner_task)
            : json_null());
    set(prov, "profile_runner_task",
        w->profile && w->profile->res && w->profile->res->runner_task
            ? json_integer(w->profile->res->runner_task)
            : json_null());
    set(o, "provenance", prov);

    /* How many tries the row's tasks took, and why each attempt that says
     * something ended (docs/report-json.md). */
    uint32_t tries = 0;
    json_t *atts = json_array();
    const rtask *both[2] = {w->validate, w->profile};
    for (int bi = 0; bi < 2; bi++) {
        const rtask *rt = both[bi];
        if (!rt)
            continue;
        tries = rt->nattempts > tries ? rt->nattempts : tries;
        for (size_t i = 0; i < rt->natt; i++) {
            const rattempt *x = &rt->att[i];
            json_t *e = json_object();
            set(e, "task", jword(rt->kind->name));
            set(e, "attempt", json_integer(x->attempt));
            set(e, "agent", jstr_or_null(x->agent));
            set(e, "state", jword(kf_rep_state_name(x->state)));
            set(e, "note", jtext(x->note ? x->note : ""));
            json_array_append_new(atts, e);
        }
    }
    set(o, "attempt_count", json_integer(tries));
    set(o, "attempts", atts);
    /* Known from the sweep alone, so the row stream (which does not read
     * the problem's provenance) keeps the seeds secret too. */
    int secret = r->problem.k || r->sw->seed_pool > 0 || (k && (k->candidate || k->problem));
    set(o, "validation", w->validate ? json_validation(w->validate, secret) : json_null());
    set(o, "profile", w->profile ? json_profile(w, with_samples) : json_null());
    char verdict[64];
    kf_rep_verdict(w, verdict, sizeof verdict);
    set(o, "verdict", jword(verdict)); /* a kind and a state, or "passed" */
    set(o, "rank", w->rank ? json_integer(w->rank) : json_null());
    set(o, "speedup", jnum(w->speedup));
    set(o, "speedup_err", jnum(w->speedup_err));
    /* The speedup by what a caller pays per call (profile.host_call_s). */
    set(o, "speedup_host", jnum(w->speedup_host));
    set(o, "outlier_pct", jnum(w->outlier_pct));
    set(o, "baseline_median_s", jnum(w->base_median));
    char why[400];
    kf_rep_no_speedup(r, w, why, sizeof why);
    set(o, "no_speedup", *why ? json_string(why) : json_null());
    if (w->impossible_of) {
        json_t *im = json_object();
        set(im, "of", jword(w->impossible_of)); /* a ceiling's name */
        set(im, "times_ceiling", jnum(w->impossible_x));
        set(o, "impossible", im);
    } else {
        set(o, "impossible", json_null());
    }

    json_t *flags = json_array();
    const char *fl[KF_REP_MAX_FLAGS];
    for (size_t i = 0, n = kf_rep_row_flags(w, fl); i < n; i++)
        json_array_append_new(flags, json_string(fl[i]));
    set(o, "flags", flags);
    return o;
}

json_t *kf_rep_row_json(const rep *r, const rrow *w, int with_samples)
{
    return json_row(r, w, with_samples);
}

static json_t *json_sweep(const rep *r)
{
    const Kfleet__Sweep *s = r->sw;
    char iso[32];
    json_t *o = json_object();
    set(o, "sweep_id", json_integer(s->sweep_id));
    set(o, "name", jstr(s->name));
    set(o, "file", jstr(s->file));
    set(o, "created_ns", json_integer((json_int_t)s->created_ns));
    kf_rep_fmt_iso(s->created_ns, iso, sizeof iso);
    set(o, "created", s->created_ns ? jword(iso) : json_null());
    set(o, "finished_ns", s->finished_ns ? json_integer((json_int_t)s->finished_ns) : json_null());
    kf_rep_fmt_iso(s->finished_ns, iso, sizeof iso);
    set(o, "finished", s->finished_ns ? jword(iso) : json_null());
    set(o, "cancelled", json_boolean(s->cancelled));
    set(o, "nodes", jword(s->nodes_all ? "all" : "any"));
    set(o, "baseline", jstr_or_null(s->baseline));
    set(o, "max_attempts", json_integer(s->max_attempts));
    json_t *kernels = json_array();
    for (size_t i = 0; i < s->n_kernels; i++) {
        const Kfleet__KernelRef *k = s->kernels[i];
        json_t *jk = json_object(), *flags = json_array();
        set(jk, "index", json_integer((json_int_t)i));
        set(jk, "name", jstr(k->name));
        set(jk, "hash", jstr(k->hash));
        set(jk, "cuda", json_boolean(k->cuda));
        for (size_t f = 0; f < k->n_flags; f++)
            json_array_append_new(flags, jstr(k->flags[f]));
        set(jk, "flags", flags);
        json_array_append_new(kernels, jk);
    }
    set(o, "kernels", kernels);
    return o;
}

static json_t *json_cost_one(const kf_rep_cost *c, int gpu)
{
    json_t *o = json_object();
    if (c->node)
        set(o, "node", jtext(c->node));
    set(o, "evaluations", json_integer(c->evaluations));
    set(o, "slot_hours", jnum(c->slot_hours));
    set(o, "evaluations_per_slot_hour", jnum(c->per_slot_hour));
    set(o, "evaluations_per_gpu_hour", gpu ? jnum(c->per_slot_hour) : json_null());
    set(o, "price_per_slot_hour", jnum(c->price));
    set(o, "cost", jnum(c->cost));
    set(o, "cost_per_evaluation", jnum(c->per_evaluation));
    return o;
}

/* What the sweep cost (report_cost.c): the total's figures, then "nodes". */
static json_t *json_cost(const rep *r)
{
    kf_rep_cost *c = kf_xcalloc(r->nagents + 1, sizeof *c);
    size_t n = kf_rep_costs(r, c, r->nagents + 1);
    int gpu = r->sched.gpu_attempts > 0;
    json_t *o = json_cost_one(&c[0], gpu);
    set(o, "slots", jword(gpu ? "gpu" : "cpu"));
    json_t *nodes = json_array();
    for (size_t i = 1; i < n; i++)
        json_array_append_new(nodes, json_cost_one(&c[i], gpu));
    set(o, "nodes", nodes);
    free(c);
    return o;
}

static json_t *json_slot(const kf_rep_slot *s)
{
    json_t *o = json_object();
    if (s->agent) {
        set(o, "agent_id", jstr(s->agent));
        set(o, "slot", json_integer(s->slot));
    }
    set(o, "tasks", json_integer(s->tasks));
    set(o, "busy_s", json_real(s->busy_s));
    set(o, "startup_s", json_real(s->startup_s));
    set(o, "gaps_s", json_real(s->gaps_s));
    set(o, "tail_s", json_real(s->tail_s));
    return o;
}

/* Idle slot time by cause, in total and slot by slot (report_schedule.c);
 * null while the sweep runs. */
static json_t *json_idle(const rep *r)
{
    kf_rep_slot sum;
    size_t n = kf_rep_slot_idle(r, NULL, 0, &sum);
    if (!n)
        return json_null();
    kf_rep_slot *sl = kf_xcalloc(n, sizeof *sl);
    kf_rep_slot_idle(r, sl, n, &sum);
    json_t *o = json_slot(&sum), *slots = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(slots, json_slot(&sl[i]));
    set(o, "slots", slots);
    free(sl);
    return o;
}

/* slot_time.by_row: the rows' runner time (kf_rep_row_time), each phase
 * keyed by its task's kind and its name ("profile warm-up"). */
static json_t *phases_json(const kf_rep_rphase *ph, size_t n)
{
    json_t *o = json_object();
    char key[192];
    for (size_t i = 0; i < n; i++) {
        snprintf(key, sizeof key, "%s %s", ph[i].task, ph[i].name);
        set(o, key, json_real(ph[i].s));
    }
    return o;
}

static json_t *json_row_time(const rep *r)
{
    kf_rep_rowtime t;
    size_t rows = kf_rep_row_time(r, &t);
    if (!rows)
        return json_null();
    json_t *o = json_object(), *c = json_object();
    set(o, "rows", json_integer((json_int_t)rows));
    set(o, "median_s", json_real(t.median_s));
    set(o, "mean_s", json_real(t.mean_s));
    set(o, "mean_phases_s", phases_json(t.mean, t.nmean));
    set(c, "kernel", jtext(t.costliest->kernel_name));
    set(c, "kernel_index", json_integer(t.costliest->kernel));
    set(c, "config_index", json_integer(t.costliest->config));
    set(c, "seconds", json_real(t.costliest_s));
    set(c, "phases_s", phases_json(t.worst, t.nworst));
    set(o, "costliest", c);
    return o;
}

static json_t *json_schedule(const rep *r)
{
    double makespan, startup, ideal, over;
    kf_rep_schedule_figures(r, &makespan, &startup, &ideal, &over);
    json_t *o = json_object();
    set(o, "makespan_s", jnum(makespan));
    set(o, "cpu_busy_s", json_real(r->sched.cpu_busy_s));
    set(o, "cpu_attempts", json_integer(r->sched.cpu_attempts));
    set(o, "gpu_busy_s", json_real(r->sched.gpu_busy_s));
    set(o, "gpu_attempts", json_integer(r->sched.gpu_attempts));
    set(o, "startup_s", jnum(startup));
    set(o, "ideal_s", jnum(ideal));
    set(o, "over_ideal_pct", jnum(over));
    double timed, pct;
    kf_rep_measured(r, NULL, &timed, &pct);
    set(o, "timed_samples_s", json_real(timed));
    set(o, "measured_pct", jnum(pct));
    json_t *per = json_object();
    for (size_t k = 0; k < r->nagents; k++) {
        kf_rep_measured(r, r->agents[k], &timed, &pct);
        set(per, r->agents[k]->agent_id, jnum(pct));
    }
    set(o, "measured_pct_by_agent", per);
    kf_rep_phase ph[KF_REP_MAX_PHASES];
    double total, outside, idle;
    size_t n = kf_rep_slot_time(r, ph, &total, &outside, &idle);
    json_t *st = json_null();
    if (n) {
        json_t *phases = json_object();
        for (size_t i = 0; i < n; i++)
            set(phases, ph[i].name, json_real(ph[i].s));
        st = json_object();
        set(st, "total_s", json_real(total));
        set(st, "phases_s", phases);
        set(st, "outside_runners_s", json_real(outside));
        set(st, "idle_s", json_real(idle));
        set(st, "by_row", json_row_time(r));
    }
    set(o, "slot_time", st);
    set(o, "idle", json_idle(r));
    return o;
}

static json_t *json_agent(const Kfleet__AgentInfo *a)
{
    json_t *o = json_object(), *gpus = json_array();
    set(o, "agent_id", jstr(a->agent_id));
    set(o, "hostname", jstr(a->hostname));
    set(o, "version", jstr(a->version));
    set(o, "arch", jstr(a->arch));
    set(o, "cpu_model", jstr(a->cpu_model));
    set(o, "cpu_count", json_integer(a->cpu_count));
    set(o, "memory_bytes", json_integer((json_int_t)a->memory_bytes));
    set(o, "driver_version", jstr_or_null(a->driver_version));
    set(o, "cuda_driver_version",
        a->cuda_driver_version ? json_integer(a->cuda_driver_version) : json_null());
    set(o, "nvcc_version", jstr_or_null(a->nvcc_version));
    set(o, "cc_version", jstr_or_null(a->cc_version));
    set(o, "lost", json_boolean(a->lost));
    set(o, "ceiling_copy_gbps",
        a->ceiling_copy_gbps > 0 ? jnum(a->ceiling_copy_gbps) : json_null());
    set(o, "ceiling_host_copy_gbps",
        a->ceiling_host_copy_gbps > 0 ? jnum(a->ceiling_host_copy_gbps) : json_null());
    set(o, "ceiling_bf16_tflops",
        a->ceiling_bf16_tflops > 0 ? jnum(a->ceiling_bf16_tflops) : json_null());
    set(o, "ceiling_f32_tflops",
        a->ceiling_f32_tflops > 0 ? jnum(a->ceiling_f32_tflops) : json_null());
    set(o, "ceiling_tf32_tflops",
        a->ceiling_tf32_tflops > 0 ? jnum(a->ceiling_tf32_tflops) : json_null());
    set(o, "ceiling_f64_tflops",
        a->ceiling_f64_tflops > 0 ? jnum(a->ceiling_f64_tflops) : json_null());
    set(o, "ceiling_host_gflops",
        a->ceiling_host_gflops > 0 ? jnum(a->ceiling_host_gflops) : json_null());
    set(o, "doctor_error", jstr_or_null(a->doctor_error));
    for (size_t g = 0; g < a->n_gpus; g++) {
        const Kfleet__GpuInfo *gi = a->gpus[g];
        json_t *jg = json_object();
        set(jg, "index", json_integer(gi->index));
        set(jg, "name", jstr(gi->name));
        set(jg, "uuid", jstr(gi->uuid));
        set(jg, "cc_major", json_integer(gi->cc_major));
        set(jg, "cc_minor", json_integer(gi->cc_minor));
        set(jg, "memory_bytes", json_integer((json_int_t)gi->memory_bytes));
        set(jg, "sm_count", json_integer(gi->sm_count));
        json_array_append_new(gpus, jg);
    }
    set(o, "gpus", gpus);
    return o;
}

static json_t *json_build(const rep *r, const rtask *rt)
{
    const Kfleet__BuildInfo *bi = rt->res ? rt->res->build : NULL;
    const Kfleet__KernelRef *k = kf_rep_kref(r, rt->task->kernel_index);
    json_t *b = json_task_common(rt);
    set(b, "kind", json_string("build"));
    set(b, "kernel", jtext(kf_rep_kernel_name(r, rt->task->kernel_index)));
    set(b, "kernel_hash", k ? jstr_or_null(k->hash) : json_null());
    set(b, "node", jstr_or_null(kf_rep_node_of(rt)));
    set(b, "cached", bi ? json_boolean(bi->cached) : json_null());
    set(b, "compile_s", bi ? jnum(bi->compile_s) : json_null());
    set(b, "built_by", bi && bi->built_by && *bi->built_by ? jtext(bi->built_by) : json_null());
    set(b, "compiler", bi ? jstr_or_null(bi->compiler) : json_null());
    set(b, "artifact_hash", bi ? jstr_or_null(bi->artifact_hash) : json_null());
    set(b, "registers", bi ? json_integer(bi->registers) : json_null());
    set(b, "shared_bytes", bi ? json_integer(bi->shared_bytes) : json_null());
    set(b, "stack_bytes", bi ? json_integer(bi->stack_bytes) : json_null());
    set(b, "spill_bytes", bi ? json_integer(bi->spill_bytes) : json_null());
    set(b, "warnings", bi ? jstr_or_null(bi->warnings) : json_null());
    set(b, "torch_extension",
        bi && bi->torch_extension && *bi->torch_extension ? jtext(bi->torch_extension)
                                                          : json_null());
    return b;
}

static json_t *json_failure(const rep *r, const rtask *rt)
{
    json_t *f = json_task_common(rt), *params = json_object();
    set(f, "kind", jword(rt->kind->name));
    set(f, "kernel", jtext(kf_rep_kernel_name(r, rt->task->kernel_index)));
    for (size_t i = 0; i < rt->task->n_params; i++)
        set(params, kf_rep_nz(rt->task->params[i]->name), json_integer(rt->task->params[i]->value));
    set(f, "params", params);
    set(f, "config_index", json_integer(rt->task->config_index));
    set(f, "node", jstr_or_null(kf_rep_node_of(rt)));
    return f;
}

/* The reference's provenance in a problem sweep (report_problem.h): its
 * hash and seed policy, never a seed; null for a sweep of plain kernels. */
static json_t *json_problem(const rep *r)
{
    const rproblem *p = &r->problem;
    if (!p->k)
        return json_null();
    char iso[32];
    json_t *o = json_object(), *pol = json_object(), *refs = json_object();
    set(o, "name", jstr(p->k->name));
    set(o, "hash", jstr_or_null(p->k->hash));
    set(pol, "pool_size", json_integer(p->seed_pool));
    set(pol, "renew_s", p->seed_renew_s > 0 ? jnum(p->seed_renew_s) : json_null());
    set(pol, "generation", p->generation ? json_integer(p->generation) : json_null());
    kf_rep_fmt_iso(p->drawn_ns, iso, sizeof iso);
    set(pol, "pool_drawn", p->generation && p->drawn_ns ? jword(iso) : json_null());
    set(o, "seed_policy", pol);
    set(refs, "stored", json_integer((json_int_t)p->nrefs));
    set(refs, "configurations", json_integer((json_int_t)p->nconfigs));
    set(refs, "generation_min", p->nrefs ? json_integer(p->ref_gen_lo) : json_null());
    set(refs, "generation_max", p->nrefs ? json_integer(p->ref_gen_hi) : json_null());
    set(o, "references", refs);
    json_t *tol = json_null();
    if (r->sw->tol_override) {
        tol = json_object();
        set(tol, "atol", jnum(r->sw->tol_atol));
        set(tol, "rtol", jnum(r->sw->tol_rtol));
    }
    set(o, "tolerances", tol);
    return o;
}

json_t *kf_rep_json_doc(const rep *r, int with_samples)
{
    json_t *root = json_object();
    set(root, "schema", jword(KF_REPORT_SCHEMA));
    set(root, "kfleet_version", jword(KF_VERSION));
    set(root, "sweep", json_sweep(r));
    set(root, "schedule", json_schedule(r));
    set(root, "cost", json_cost(r));
    char th[48];
    kf_rep_thermal(r, th, sizeof th);
    set(root, "thermal_protocol", *th ? jword(th) : json_null()); /* kf_rep_thermal's names */
    set(root, "problem", json_problem(r));
    json_t *tot = json_object();
    set(tot, "tasks", json_integer((json_int_t)r->ntasks));
    for (int st = KFLEET__TASK_STATE__PENDING; st <= KFLEET__TASK_STATE__SKIPPED; st++)
        if (st <= KFLEET__TASK_STATE__RUNNING || st >= KFLEET__TASK_STATE__SUCCEEDED)
            set(tot, kf_rep_state_name(st), json_integer(r->counts[st]));
    set(root, "totals", tot);
    json_t *agents = json_array();
    for (size_t k = 0; k < r->nagents; k++)
        json_array_append_new(agents, json_agent(r->agents[k]));
    set(root, "agents", agents);
    json_t *rows = json_array();
    for (size_t i = 0; i < r->nrows; i++)
        json_array_append_new(rows, json_row(r, &r->rows[i], with_samples));
    set(root, "rows", rows);
    json_t *builds = json_array(), *failures = json_array();
    for (size_t i = 0; i < r->ntasks; i++) {
        const rtask *rt = &r->tasks[i];
        if (rt->kind->report == KF_REPORT_BUILD)
            json_array_append_new(builds, json_build(r, rt));
        if (kf_rep_is_failure(kf_rep_state_of(rt)))
            json_array_append_new(failures, json_failure(r, rt));
    }
    set(root, "builds", builds);
    set(root, "failures", failures);
    return root;
}

int kf_rep_json_write(const json_t *doc, kf_buf *out)
{
    /* Default real precision (17 digits): sample times round-trip exactly. */
    char *s = kf_json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (!s)
        return KF_ENOMEM;
    kf_buf_adds(out, s);
    kf_buf_addc(out, '\n');
    free(s);
    return 0;
}
