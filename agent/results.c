/* results — a runner's Result, completed and sent; see results.h. */
#include "agent/results.h"

#include "agent/checkers.h"
#include "agent/kout.h"
#include "agent/refstore.h"
#include "agent/verdict.h"
#include "common/log.h"
#include "common/taskkind.h"
#include "common/util.h"

#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* What is read of the kernel's output when its task's Result arrives:
 * everything it wrote before, unless a process of the kernel's goes on
 * writing; then the Result goes without the rest (it is counted with the
 * next task's, or dropped with the runner). */
#define RESULT_DRAIN_MAX (64u << 20)

/* The forms of a seed text may hold it in (decimal, as torch's
 * manual_seed takes it modulo 2^63, in hex either case): each replaced by
 * "<secret seed>" in text[0, n) into out. A problem's seeds are secret
 * (docs/problems.md): a candidate that prints them, a problem whose error
 * names one, reach no report. */
static void scrub(const krunner *r, const char *text, size_t n, kf_buf *out)
{
    char forms[64 * 5][24];
    size_t nf = 0;
    for (size_t i = 0; i < r->nseeds; i++) {
        uint64_t v = r->seeds[i];
        snprintf(forms[nf++], sizeof forms[0], "%llu", (unsigned long long)v);
        snprintf(forms[nf++], sizeof forms[0], "%llu", (unsigned long long)(v % (1ull << 63)));
        snprintf(forms[nf++], sizeof forms[0], "%llx", (unsigned long long)v);
        snprintf(forms[nf++], sizeof forms[0], "%llX", (unsigned long long)v);
    }
    kf_buf_reset(out);
    for (size_t at = 0; at < n;) {
        size_t hit = 0;
        for (size_t f = 0; f < nf && !hit; f++) {
            size_t l = strlen(forms[f]);
            if (l >= 6 && l <= n - at && memcmp(text + at, forms[f], l) == 0)
                hit = l;
        }
        if (hit) {
            kf_buf_adds(out, "<secret seed>");
            at += hit;
        } else {
            kf_buf_addc(out, text[at++]);
        }
    }
}

/* The kernel's output of r's task so far into res (pointing into *keep,
 * which must outlive the frame), and r's record of it started afresh. */
static void attach_output(krunner *r, Kfleet__Result *res, kf_buf *keep)
{
    if (r->kout_fd >= 0)
        kf_kout_read(r->kout, &r->kout_fd, RESULT_DRAIN_MAX);
    res->kernel_output_bytes = kf_kout_total(r->kout);
    kf_kout_render(r->kout, keep);
    if (r->nseeds) {
        kf_buf clean = KF_BUF_INIT;
        scrub(r, keep->data ? keep->data : "", keep->len, &clean);
        kf_buf_release(keep);
        *keep = clean;
    }
    res->kernel_output.data = (uint8_t *)keep->data;
    res->kernel_output.len = keep->len;
    kf_kout_reset(r->kout);
}

void results_send(kf_agent *a, krunner *r, int state, int infra, const char *error)
{
    Kfleet__Result res = KFLEET__RESULT__INIT;
    res.infra = infra;
    res.task_id = r->task_id;
    res.attempt = r->attempt;
    res.state = (Kfleet__TaskState)state;
    res.error = (char *)error;
    res.agent_id = a->info->agent_id;
    res.elapsed_s = (double)(kf_mono_ns() - r->started_mono) / 1e9;
    res.sample_count = r->nsamples;
    res.finished_ns = kf_now_ns();
    kf_buf output = KF_BUF_INIT, why = KF_BUF_INIT;
    if (r->kout) /* what it wrote says why, as often as not */
        attach_output(r, &res, &output);
    if (r->nseeds && error) {
        scrub(r, error, strlen(error), &why);
        res.error = why.data ? why.data : "";
    }
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    env.body_case = KFLEET__ENVELOPE__BODY_RESULT;
    env.result = &res;
    link_emit(a, &env, r->task_id, r->attempt, 1);
    kf_buf_release(&output);
    kf_buf_release(&why);
    r->got_result = 1;
}

void results_kill(krunner *r, const char *fmt, ...)
{
    if (!r->killed_why[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->killed_why, sizeof r->killed_why, fmt, ap);
        va_end(ap);
    }
    kf_error("runner.killed", "task=0x%llx pid=%d why=\"%s\"", (unsigned long long)r->task_id,
             (int)r->pid, r->killed_why);
    kill(-r->pid, SIGKILL);
}

void results_log_tail(const krunner *r, char *out, size_t len)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/runner.log", r->dir);
    out[0] = '\0';
    kf_buf b = KF_BUF_INIT;
    if (kf_buf_read_file(&b, path) != KF_OK) {
        kf_buf_release(&b);
        return;
    }
    /* The last 10 lines, at most len-1 bytes. */
    size_t start = b.len, lines = 0;
    while (start > 0 && lines <= 10) {
        start--;
        if (b.data[start] == '\n' && start + 1 < b.len)
            lines++;
    }
    if (lines > 10)
        start++;
    if (b.len - start >= len)
        start = b.len - (len - 1);
    snprintf(out, len, "%s", b.data + start);
    kf_buf_release(&b);
}

/* The checker's verdicts on a candidate's Result, and what they say of
 * this agent's references: one hashed whole is marked verified, one found
 * damaged is dropped (the task is tried again: its references are then
 * computed anew here). */
static void apply_verdicts(kf_agent *a, krunner *r, Kfleet__Result *res)
{
    kf_verdict_refs refs;
    memset(&refs, 0, sizeof refs);
    kf_verdict_apply(r->verdict_fd, r->want_checks, res, r->verdict_why, sizeof r->verdict_why,
                     &refs);
    for (size_t i = 0; i < refs.nverified; i++)
        kf_refstore_mark_verified(a->refs, refs.verified[i]);
    for (size_t i = 0; i < refs.ndamaged; i++) {
        kf_warn("refs.damaged", "digest=%s task=0x%llx", refs.damaged[i],
                (unsigned long long)r->task_id);
        kf_refstore_drop(a->refs, refs.damaged[i]);
    }
    if (refs.ndamaged || refs.error)
        res->infra = 1; /* the node's: tried again */
}

void results_relay(kf_agent *a, krunner *r, Kfleet__Envelope *env)
{
    Kfleet__Result *res = env->result;
    char *runner_agent = res->agent_id, *runner_error = res->error;
    ProtobufCBinaryData runner_output = res->kernel_output;
    res->task_id = r->task_id;
    res->attempt = r->attempt;
    res->agent_id = a->info->agent_id;
    res->sample_count = r->nsamples;
    if (r->cancelled)
        res->state = KFLEET__TASK_STATE__CANCELLED;
    kf_buf output = KF_BUF_INIT;
    attach_output(r, res, &output);
    if (r->has_tols) { /* the checker's bounds, not the candidate process's */
        res->tol_abs = r->tol_abs;
        res->tol_rel = r->tol_rel;
        res->close = r->tol_close;
        res->atol = r->atol;
        res->rtol = r->rtol;
    }
    if (r->verdict_fd >= 0)
        apply_verdicts(a, r, res);
    res->references_recomputed = r->refs_recomputed;
    res->references_differ = r->refs_differ;
    kf_err err;
    char why[600];
    if (kf_task_kind_at(r->kind)->references && res->state == KFLEET__TASK_STATE__SUCCEEDED &&
        checkers_keep(a, r, res, &err) != KF_OK) {
        snprintf(why, sizeof why, "the references were computed but not kept: %s", err.msg);
        res->state = KFLEET__TASK_STATE__FAILED;
        res->infra = 1;
        res->error = why;
    }
    kf_buf clean = KF_BUF_INIT;
    if (r->nseeds && res->error && *res->error) {
        scrub(r, res->error, strlen(res->error), &clean);
        res->error = clean.data ? clean.data : "";
    }
    if (res->artifact_stale) /* the runner's log goes with its scratch dir */
        kf_warn("runner.artifact_stale", "task=0x%llx error=\"%.300s\"",
                (unsigned long long)r->task_id, res->error ? res->error : "");
    link_emit(a, env, r->task_id, r->attempt, 1);
    r->got_result = 1;
    res->agent_id = runner_agent; /* ours is not the decoder's to free */
    res->error = runner_error;
    res->kernel_output = runner_output;
    kf_buf_release(&output);
    kf_buf_release(&clean);
}
