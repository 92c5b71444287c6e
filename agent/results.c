/* results — a runner's Result, completed and sent; see results.h. */
#include "agent/results.h"

#include "agent/checkers.h"
#include "agent/kout.h"
#include "agent/refstore.h"
#include "agent/verdict.h"
#include "common/log.h"
#include "common/taskkind.h"
#include "common/util.h"
#include "common/xalloc.h"

#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* What is read of the kernel's output when its task's Result arrives:
 * everything it wrote before, unless a process of the kernel's goes on
 * writing; then the Result goes without the rest (it is counted with the
 * next task's, or dropped with the runner). */
#define RESULT_DRAIN_MAX (64u << 20)

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int seed_known(const uint64_t *set, size_t n, uint64_t v)
{
    return bsearch(&v, set, n, sizeof *set, cmp_u64) != NULL;
}

/* A seed's form in text at p (at most `left` bytes): its decimal (as torch's
 * manual_seed takes it, modulo 2^63, too) or its hex in either case, read
 * as the number a run of digits there starts with, of each length a form
 * can have; the length matched, or 0. */
static size_t seed_at(const uint64_t *set, size_t n, const char *p, size_t left)
{
    for (size_t len = left < 20 ? left : 20; len >= 6; len--) {
        uint64_t v = 0;
        size_t i = 0;
        while (i < len && p[i] >= '0' && p[i] <= '9' && v <= (UINT64_MAX - 9) / 10)
            v = v * 10 + (uint64_t)(p[i++] - '0');
        if (i == len && p[0] != '0' && seed_known(set, n, v))
            return len;
    }
    for (size_t len = left < 16 ? left : 16; len >= 6; len--) {
        uint64_t v = 0;
        size_t i = 0;
        for (; i < len; i++) {
            char c = p[i];
            int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
            if (d < 0)
                break;
            v = v << 4 | (uint64_t)d;
        }
        if (i == len && p[0] != '0' && seed_known(set, n, v))
            return len;
    }
    return 0;
}

/* Each form of a seed in text[0, n) replaced by "<secret seed>" into out:
 * r's (a problem's pool: secret, docs/problems.md) and `extra` (the fresh
 * inputs' seeds its runner drew: no reference judges by them, but a seed
 * is a seed). A candidate that prints them, a problem whose error names
 * one, reach no report. */
static void scrub(const krunner *r, const uint64_t *extra, size_t nextra, const char *text,
                  size_t n, kf_buf *out)
{
    size_t nset = 2 * (r->nseeds + nextra);
    uint64_t *set = kf_xcalloc(nset ? nset : 1, sizeof *set);
    for (size_t i = 0; i < r->nseeds + nextra; i++) {
        uint64_t v = i < r->nseeds ? r->seeds[i] : extra[i - r->nseeds];
        set[2 * i] = v;
        set[2 * i + 1] = v % (1ull << 63);
    }
    qsort(set, nset, sizeof *set, cmp_u64);
    kf_buf_reset(out);
    for (size_t at = 0; at < n;) {
        size_t hit = nset ? seed_at(set, nset, text + at, n - at) : 0;
        if (hit) {
            kf_buf_adds(out, "<secret seed>");
            at += hit;
        } else {
            kf_buf_addc(out, text[at++]);
        }
    }
    free(set);
}

/* The kernel's output of r's task so far into res (pointing into *keep,
 * which must outlive the frame), and r's record of it started afresh. */
static void attach_output(krunner *r, Kfleet__Result *res, const uint64_t *extra, size_t nextra,
                          kf_buf *keep)
{
    if (r->kout_fd >= 0)
        kf_kout_read(r->kout, &r->kout_fd, RESULT_DRAIN_MAX);
    res->kernel_output_bytes = kf_kout_total(r->kout);
    kf_kout_render(r->kout, keep);
    if (r->nseeds || nextra) {
        kf_buf clean = KF_BUF_INIT;
        scrub(r, extra, nextra, keep->data ? keep->data : "", keep->len, &clean);
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
        attach_output(r, &res, NULL, 0, &output);
    if (r->nseeds && error) {
        scrub(r, NULL, 0, error, strlen(error), &why);
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
    /* The fresh inputs' seeds come for the scrub only: not sent on. */
    const uint64_t *fresh = res->fresh_seeds;
    size_t nfresh = res->n_fresh_seeds;
    res->n_fresh_seeds = 0;
    attach_output(r, res, fresh, nfresh, &output);
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
    if ((r->nseeds || nfresh) && res->error && *res->error) {
        scrub(r, fresh, nfresh, res->error, strlen(res->error), &clean);
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
    res->n_fresh_seeds = nfresh;
    kf_buf_release(&output);
    kf_buf_release(&clean);
}
