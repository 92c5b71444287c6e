/* report_text — the report for people: the aligned table (with colour on a
 * terminal) and Markdown, drawn from the rows report_rows.c collects. Both go
 * through one grid renderer, so the two cannot show different cells.
 *
 * Sections: the header (sweep, task counts, schedule, nodes, baseline), the
 * results grid, --provenance, the builds grid and the failures with their
 * whole errors (up to ERR_LINES lines each, then where the rest is). Columns
 * that would be all dashes (speedup without a baseline, %ceiling without a
 * measured ceiling) are left out.
 *
 * Every string that a kernel, an agent or a sweep file wrote goes through
 * kf_text_inert (common/text.h) on its way out: escaped for the terminal in
 * the table, for Markdown in md, so an error full of ESC sequences, `|` or
 * `<script>` shows as text and cannot rewrite the screen or the page. */
#include "report/report_text.h"
#include "report/report_problem.h"
#include "report/report_page.h"
#include "common/text.h"
#include "common/xalloc.h"
#include "report/report_launches.h"
#include "report/report_output.h"
#include "report/report_rowtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* How much of each error the failures section shows: a Python traceback of
 * a few frames and a compiler's first errors fit; a runaway recursion does
 * not need to. */
enum { ERR_LINES = 40, ERR_LINE_BYTES = 400 };

/* The escaper of one rendering: E(e, s) is s made inert for this format,
 * valid until the ring comes round (8 calls), enough for one line's
 * arguments. */
typedef struct esc {
    int md;
    kf_buf ring[8];
    unsigned next;
} esc;

static const char *E_n(esc *e, const char *s, size_t n)
{
    kf_buf *b = &e->ring[e->next++ % 8];
    kf_buf_reset(b);
    kf_text_inert_n(b, s ? s : "", s ? n : 0, e->md ? KF_TEXT_MD : KF_TEXT_LINE);
    return b->data;
}

static const char *E(esc *e, const char *s)
{
    return E_n(e, s, s ? strlen(s) : 0);
}

/* "  profile triad [n=1024]": a task's line in the failures and attempts. */
static void task_head(const rep *r, const rtask *rt, esc *e, kf_buf *out)
{
    char params[256];
    kf_rep_task_params(rt->task, params, sizeof params);
    kf_buf_addf(out, "%s%s %s%s%s%s", e->md ? "\n- " : "  ", rt->kind->name,
                E(e, kf_rep_kernel_name(r, rt->task->kernel_index)), *params ? " [" : "",
                E(e, params), *params ? "]" : "");
}

static const char *state_text(int st)
{
    return st == KFLEET__TASK_STATE__TIMED_OUT ? "timed out" : kf_rep_state_name(st);
}

/* Copies the first line of s, cut to at most max bytes on a UTF-8 boundary
 * with "..." when cut, so one long compiler message cannot widen a column
 * past the screen. */
static void first_line(const char *s, char *out, size_t len, size_t max)
{
    s = kf_rep_nz(s);
    if (max + 4 > len)
        max = len - 4;
    size_t n = strcspn(s, "\r\n"); /* a lone \r ends the cell's line too */
    kf_text_first_lines(s, 1, out, (n < max ? n : max) + 1);
    if (n > max)
        strcat(out, "...");
}

/* The line of an error that says what it is, for a table cell: its first
 * line, and when that line only announces what follows ("the kernel does
 * not compile in Python 3.11.2:"), the line that names the error: the
 * first one saying "error" (a compiler's "x.cu:3: error: ...", Python's
 * "SyntaxError: '{' was never closed"), else the last one. */
static void headline(const char *s, char *out, size_t len, size_t max)
{
    s = kf_rep_nz(s);
    size_t n = strcspn(s, "\r\n");
    while (n > 0 && s[n - 1] == ' ')
        n--;
    if (n == 0 || s[n - 1] != ':' || !s[strcspn(s, "\r\n")]) {
        first_line(s, out, len, max);
        return;
    }
    const char *last = NULL, *named = NULL;
    for (const char *p = s + strcspn(s, "\r\n"); *p && !named;) {
        p += strspn(p, "\r\n");
        const char *t = p + strspn(p, " \t");
        size_t l = strcspn(t, "\r\n");
        for (size_t i = 0; i + 5 <= l && !named; i++)
            if (strncasecmp(t + i, "error", 5) == 0)
                named = t;
        if (l)
            last = t;
        p = t + l;
    }
    const char *pick = named ? named : last;
    if (!pick) {
        first_line(s, out, len, max);
        return;
    }
    char joined[1024];
    snprintf(joined, sizeof joined, "%.*s %.*s", (int)n, s, (int)strcspn(pick, "\r\n"), pick);
    first_line(joined, out, len, max);
}

static int display_width(const char *s)
{
    int w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

enum { CELL = 192 };

/* A grid of cells rendered either aligned (with colour) or as a GitHub
 * table; `color_of` picks a cell's ANSI colour, NULL for none. */
typedef struct grid {
    int ncols;
    const char *const *names;
    const int *right;
    char (*cells)[CELL]; /* nrows * ncols */
    size_t nrows;
    const char *(*color_of)(int col, const char *text);
    unsigned hide; /* bit c set: column c is left out */
} grid;

static void md_cell(kf_buf *out, const char *s)
{
    kf_buf_addc(out, ' ');
    kf_buf_adds(out, s);
    kf_buf_adds(out, " |");
}

/* Cells are escaped here, the one place they are written: what a kernel
 * put in one (an error, a name) cannot end the row or move the cursor. */
static void grid_render(const grid *g, esc *e, int color, kf_buf *out)
{
    int md = e->md;
    if (md) {
        kf_buf_addc(out, '|');
        for (int c = 0; c < g->ncols; c++)
            if (!(g->hide >> c & 1))
                md_cell(out, g->names[c]);
        kf_buf_adds(out, "\n|");
        for (int c = 0; c < g->ncols; c++)
            if (!(g->hide >> c & 1))
                kf_buf_adds(out, g->right[c] ? " ---: |" : " --- |");
        kf_buf_addc(out, '\n');
        for (size_t i = 0; i < g->nrows; i++) {
            kf_buf_addc(out, '|');
            for (int c = 0; c < g->ncols; c++)
                if (!(g->hide >> c & 1))
                    md_cell(out, E(e, g->cells[i * (size_t)g->ncols + (size_t)c]));
            kf_buf_addc(out, '\n');
        }
        return;
    }
    int width[16] = {0};
    for (int c = 0; c < g->ncols; c++) {
        width[c] = display_width(g->names[c]);
        for (size_t i = 0; i < g->nrows; i++) {
            int w = display_width(E(e, g->cells[i * (size_t)g->ncols + (size_t)c]));
            width[c] = w > width[c] ? w : width[c];
        }
    }
    for (int c = 0; c < g->ncols; c++) {
        if (g->hide >> c & 1)
            continue;
        kf_buf_adds(out, "  ");
        kf_buf_addpad(out, g->names[c], c + 1 < g->ncols ? width[c] : 0, g->right[c]);
    }
    kf_buf_addc(out, '\n');
    for (size_t i = 0; i < g->nrows; i++) {
        for (int c = 0; c < g->ncols; c++) {
            if (g->hide >> c & 1)
                continue;
            const char *s = E(e, g->cells[i * (size_t)g->ncols + (size_t)c]);
            const char *col = color && g->color_of ? g->color_of(c, s) : NULL;
            kf_buf_adds(out, "  ");
            if (col)
                kf_buf_adds(out, col);
            /* The last column is not padded: no trailing blanks. */
            kf_buf_addpad(out, s, c + 1 < g->ncols ? width[c] : 0, g->right[c]);
            if (col)
                kf_buf_adds(out, "\033[0m");
        }
        /* An empty last cell would leave the separator dangling. */
        while (out->len && out->data[out->len - 1] == ' ')
            out->data[--out->len] = '\0';
        kf_buf_addc(out, '\n');
    }
}

#define GREEN "\033[32m"
#define RED "\033[31m"
#define YELLOW "\033[33m"

enum {
    R_KERNEL,
    R_PARAMS,
    R_NODE,
    R_DEVICE,
    R_VALID,
    R_SAMPLES,
    R_MEDIAN,
    R_SPREAD,
    R_NOISE,
    R_GBPS,
    R_GFLOPS,
    R_CEIL,
    R_SPEEDUP,
    R_FLAGS,
    R_N
};
static const char *const row_names[R_N] = {"kernel",  "params",   "node",    "device", "validation",
                                           "samples", "median",   "min-max", "noise",  "GB/s",
                                           "GFLOP/s", "%ceiling", "speedup", "flags"};
static const int row_right[R_N] = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0};

static const char *row_color(int col, const char *s)
{
    if (col == R_VALID)
        return strncmp(s, "pass", 4) == 0 ? GREEN : strncmp(s, "FAIL", 4) == 0 ? RED : NULL;
    if (col == R_FLAGS && *s)
        return strstr(s, "failed") || strstr(s, "timed out") ? RED : YELLOW;
    return NULL;
}

static void validation_str(const rrow *w, char *out, size_t len)
{
    const rtask *v = w->validate;
    if (!v) {
        snprintf(out, len, "-");
        return;
    }
    if (!kf_state_terminal(kf_rep_state_of(v))) {
        snprintf(out, len, "%s", kf_rep_state_name(kf_rep_state_of(v)));
        return;
    }
    if (kf_rep_state_of(v) == KFLEET__TASK_STATE__CANCELLED) {
        snprintf(out, len, "cancelled");
        return;
    }
    /* The figures of the trials that failed (or of all when it passed): a
     * validation that failed without a failing trial (the kernel raised,
     * crashed or timed out) measured no error and shows none; outputs left
     * non-finite or unwritten are said as such, not as an error of 0. */
    int ok = kf_rep_state_of(v) == KFLEET__TASK_STATE__SUCCEEDED;
    double mx = 0;
    uint64_t nonfinite = 0;
    size_t n = v->res ? v->res->n_trials : 0, nbad = 0;
    for (size_t i = 0; i < n; i++) {
        const Kfleet__ValidateTrial *t = v->res->trials[i];
        if (!ok && t->passed)
            continue;
        nbad++;
        mx = t->max_abs_err > mx ? t->max_abs_err : mx;
        nonfinite += t->nonfinite;
    }
    if (!ok && !nbad)
        snprintf(out, len, "FAIL: %s",
                 kf_rep_state_of(v) == KFLEET__TASK_STATE__TIMED_OUT ? "timed out"
                 : n ? "error after the seeds that passed"
                     : "error, nothing measured");
    else if (!ok && nonfinite)
        snprintf(out, len, "FAIL %llu non-finite or unwritten, %zu seed%s",
                 (unsigned long long)nonfinite, nbad, nbad == 1 ? "" : "s");
    else if (n)
        snprintf(out, len, "%s max|err| %.1e, %zu seed%s", ok ? "pass" : "FAIL", mx, nbad,
                 nbad == 1 ? "" : "s");
    else
        snprintf(out, len, "%s", ok ? "pass" : "FAIL");
}

/* The flags of a row, for people: "failed: <first line>" names the task that
 * failed and why. */
static void flags_str(const rep *r, const rrow *w, char *out, size_t len)
{
    size_t off = 0;
    out[0] = '\0';
#define ADD(...)                                                                                   \
    do {                                                                                           \
        if (off < len)                                                                             \
            off += (size_t)snprintf(out + off, len - off, "%s", off ? ", " : "");                  \
        if (off < len)                                                                             \
            off += (size_t)snprintf(out + off, len - off, __VA_ARGS__);                            \
    } while (0)
    if (w->noisy)
        ADD("noisy");
    if (w->imprecise && isfinite(kf_stats_precision_pct(&w->st)))
        ADD("imprecise: median to +-%.2g%% at the timeout (asked %.2g%%)",
            kf_stats_precision_pct(&w->st), w->profile->res->profile->precision_target_pct);
    else if (w->imprecise)
        ADD("imprecise: too few samples for the median's interval (asked +-%.2g%%)",
            w->profile->res->profile->precision_target_pct);
    if (w->waits_capped)
        ADD("%u throttle waits skipped: waits had reached the %.3g s measured", w->waits_capped,
            w->profile->res->profile->measured_s);
    if (isfinite(w->outlier_pct))
        ADD("outlier node +%.0f%%", w->outlier_pct);
    if (w->profile && w->profile->nthrottled)
        ADD("throttled");
    if (w->profile && w->profile->ndiscarded)
        ADD("%zu discarded (throttled)", w->profile->ndiscarded);
    if (w->at_power_cap)
        ADD("sustained at the power cap");
    if (w->outside_stream_s > 0)
        ADD("work outside the timed call (+%.0f µs: another stream or thread): timed until it "
            "ended",
            w->outside_stream_s * 1e6);
    if (w->impossible_of)
        ADD("IMPOSSIBLE: %.1fx the node's %s, no speedup", w->impossible_x, w->impossible_of);
    char nobase[400];
    kf_rep_no_speedup(r, w, nobase, sizeof nobase);
    if (*nobase)
        ADD("no speedup: %s", nobase);
    /* Under 50 µs a GPU launch is a caller's cost too (issue 41 item 5). */
    const Kfleet__ProfileStats *ps0 = w->profile && w->profile->res ? w->profile->res->profile : 0;
    int gpu_short = ps0 && ps0->timer && *ps0->timer && w->st.n && w->st.median < 50e-6;
    if (gpu_short && isfinite(w->host_call_s) && isfinite(w->speedup_host))
        ADD("host call %.1f µs, speedup by it %.2fx", w->host_call_s * 1e6, w->speedup_host);
    else if (gpu_short && isfinite(w->host_call_s))
        ADD("host call %.1f µs", w->host_call_s * 1e6);
    if (w->sm_clock_mhz)
        ADD("SM %u MHz %.0f W", w->sm_clock_mhz, w->power_mw / 1e3);
    if (w->mismatch)
        ADD("samples-mismatch");
    if (w->profile && w->profile->res && w->profile->res->profile &&
        w->profile->res->profile->host_shared)
        ADD("measured beside another host profile");
    if (w->build && w->build->jit_fallback)
        ADD("jit-fallback");
    const Kfleet__ProfileStats *hp =
        w->profile && w->profile->res ? w->profile->res->profile : NULL;
    if (hp && hp->hot)
        ADD("hot");
    if (hp && hp->batch > 1)
        ADD("batch %u", hp->batch);
    const rtask *both[2] = {w->validate, w->profile};
    for (int i = 0; i < 2; i++) {
        const rtask *t = both[i];
        if (!t)
            continue;
        int st = kf_rep_state_of(t);
        char line[160];
        headline(kf_rep_err_of(t), line, sizeof line, 120);
        if (kf_rep_is_failure(st))
            ADD("%s failed: %s", t->kind->name, *line ? line : state_text(st));
        else if (st == KFLEET__TASK_STATE__CANCELLED && i == 1)
            ADD("profile cancelled");
        else if (st == KFLEET__TASK_STATE__SKIPPED && i == 1)
            ADD("profile %s", kf_rep_skip_why(kf_rep_err_of(t), line, sizeof line));
        else if (!kf_state_terminal(st) && i == 1)
            ADD("profile %s", kf_rep_state_name(st));
    }
#undef ADD
}

static void row_cells(const rep *r, const rrow *w, char (*cells)[CELL])
{
    const rtask *any = w->profile ? w->profile : w->validate;
    const char *declared = w->declared;
    /* A leaderboard's rows say their place first: "#1 fused", "- naive". */
    char place[16] = "";
    if (r->group_by == KF_GROUP_CONFIG && w->rank)
        snprintf(place, sizeof place, "#%u ", w->rank);
    else if (r->group_by == KF_GROUP_CONFIG)
        snprintf(place, sizeof place, "- ");
    if (declared)
        snprintf(cells[R_KERNEL], CELL, "%s%s (%s)", place, w->kernel_name, declared);
    else
        snprintf(cells[R_KERNEL], CELL, "%s%s", place, w->kernel_name);
    kf_rep_task_params(any->task, cells[R_PARAMS], CELL);
    snprintf(cells[R_NODE], CELL, "%s", *w->node ? w->node : "-");
    snprintf(cells[R_DEVICE], CELL, "%s", w->device);
    validation_str(w, cells[R_VALID], CELL);
    for (int c = R_SAMPLES; c <= R_SPEEDUP; c++)
        snprintf(cells[c], CELL, "-");
    if (w->st.n) {
        const char *u;
        double k = kf_rep_time_unit(w->st.median, &u);
        snprintf(cells[R_SAMPLES], CELL, "%zu", w->st.n);
        kf_rep_fmt_time(w->st.median, cells[R_MEDIAN], CELL);
        /* Both ends in the median's unit, so the range reads at a glance. */
        char lo[32], hi[32];
        kf_rep_fmt_short(w->st.min * k, lo, sizeof lo);
        kf_rep_fmt_short(w->st.max * k, hi, sizeof hi);
        snprintf(cells[R_SPREAD], CELL, "%s\xE2\x80\x93%s %s", lo, hi, u);
        if (isfinite(w->st.noise_pct))
            snprintf(cells[R_NOISE], CELL, "%.1f%%", w->st.noise_pct);
    } else if (w->profile && w->profile->nsamples) {
        snprintf(cells[R_SAMPLES], CELL, "%zu", w->profile->nsamples);
    }
    if (isfinite(w->gbps))
        snprintf(cells[R_GBPS], CELL, "%.2f", w->gbps);
    if (isfinite(w->gflops))
        snprintf(cells[R_GFLOPS], CELL, "%.2f", w->gflops);
    /* The nearer ceiling says what bounds the kernel: bandwidth or matrix. */
    int bw = isfinite(w->pct_bw) && !(w->pct_mma > w->pct_bw);
    if (bw || isfinite(w->pct_mma))
        snprintf(cells[R_CEIL], CELL, "%.0f%% %s", bw ? w->pct_bw : w->pct_mma, bw ? "bw" : "mma");
    if (isfinite(w->speedup) && isfinite(w->speedup_err))
        snprintf(cells[R_SPEEDUP], CELL, "%.2fx \xC2\xB1%.2f", w->speedup, w->speedup_err);
    else if (isfinite(w->speedup))
        snprintf(cells[R_SPEEDUP], CELL, "%.2fx", w->speedup);
    flags_str(r, w, cells[R_FLAGS], CELL);
}

enum { B_KERNEL, B_NODE, B_STATUS, B_CACHED, B_COMPILE, B_ARTIFACT, B_ERROR, B_N };
static const char *const build_names[B_N] = {"kernel",  "node",     "status", "cached",
                                             "compile", "artifact", "error"};
static const int build_right[B_N] = {0, 0, 0, 0, 1, 0, 0};

static const char *build_color(int col, const char *s)
{
    if (col != B_STATUS)
        return NULL;
    if (strcmp(s, "succeeded") == 0)
        return GREEN;
    return strcmp(s, "failed") == 0 || strcmp(s, "timed out") == 0 ? RED : YELLOW;
}

static void build_cells(const rep *r, const rtask *rt, char (*cells)[CELL])
{
    const Kfleet__BuildInfo *b = rt->res ? rt->res->build : NULL;
    int ok = kf_rep_state_of(rt) == KFLEET__TASK_STATE__SUCCEEDED;
    snprintf(cells[B_KERNEL], CELL, "%s", kf_rep_kernel_name(r, rt->task->kernel_index));
    snprintf(cells[B_NODE], CELL, "%s", *kf_rep_node_of(rt) ? kf_rep_node_of(rt) : "-");
    snprintf(cells[B_STATUS], CELL, "%s", state_text(kf_rep_state_of(rt)));
    /* An artifact another agent compiled and this one installed
     * (sched_share.c) says whose it is. */
    if (b && ok && b->built_by && *b->built_by)
        snprintf(cells[B_CACHED], CELL, "from %.60s", b->built_by);
    else
        snprintf(cells[B_CACHED], CELL, "%s", b && ok ? (b->cached ? "yes" : "no") : "-");
    if (b && ok && !(b->built_by && *b->built_by))
        kf_rep_fmt_time(b->compile_s, cells[B_COMPILE], CELL);
    else
        snprintf(cells[B_COMPILE], CELL, "-");
    snprintf(cells[B_ARTIFACT], CELL, "%.12s",
             b && b->artifact_hash && *b->artifact_hash ? b->artifact_hash : "-");
    if (kf_rep_is_failure(kf_rep_state_of(rt)) ||
        kf_rep_state_of(rt) == KFLEET__TASK_STATE__CANCELLED)
        headline(kf_rep_err_of(rt), cells[B_ERROR], CELL, 120);
    else
        cells[B_ERROR][0] = '\0';
}

/* One line of what the sweep (c->node NULL) or a node cost. */
static void render_cost_one(const kf_rep_cost *c, const char *unit, esc *e, kf_buf *out)
{
    int md = e->md;
    kf_buf_addf(out, "%s%s%s: %u evaluations in %.3g %s-hours = %.0f per %s-hour", md ? "- " : "  ",
                c->node ? "cost on " : "cost", c->node ? E(e, c->node) : "", c->evaluations,
                c->slot_hours, unit, c->per_slot_hour, unit);
    if (isfinite(c->cost))
        kf_buf_addf(out, "; %.4g at %.4g per %s-hour, %.3g per evaluation", c->cost, c->price, unit,
                    c->per_evaluation);
    else
        kf_buf_addf(out, "; no price (inventory `price`, or `kfleet run --price`)");
    kf_buf_addc(out, '\n');
}

/* Evaluations per GPU-hour and, with a price, the cost, in total and per
 * node when there are several; and the thermal protocol. */
static void render_cost(const rep *r, esc *e, kf_buf *out)
{
    int md = e->md;
    kf_rep_cost *c = kf_xcalloc(r->nagents + 1, sizeof *c);
    size_t n = kf_rep_costs(r, c, r->nagents + 1);
    const char *unit = r->sched.gpu_attempts > 0 ? "GPU" : "CPU-slot";
    if (n && isfinite(c[0].per_slot_hour)) {
        render_cost_one(&c[0], unit, e, out);
        for (size_t i = 1; n > 2 && i < n; i++)
            render_cost_one(&c[i], unit, e, out);
    }
    char th[48], why[320];
    kf_rep_thermal(r, th, sizeof th);
    if (*th) {
        kf_rep_thermal_why(th, why, sizeof why);
        kf_buf_addf(out, "%sthermal protocol: %s (%s)\n", md ? "- " : "  ", th, why);
    }
    free(c);
}

/* Idle slot time by cause and the slots' (report_schedule.c). */
static void render_idle(const rep *r, esc *e, kf_buf *out)
{
    kf_rep_slot sum, sl[64];
    size_t n = kf_rep_slot_idle(r, sl, 64, &sum);
    if (!n)
        return;
    kf_buf_addf(out, "%sidle: start-up %.1f s, between tasks %.1f s, tail %.1f s; by slot %s:",
                e->md ? "- " : "  ", sum.startup_s, sum.gaps_s, sum.tail_s,
                "(start-up+gaps+tail s)");
    for (size_t i = 0; i < n && i < 64; i++)
        kf_buf_addf(out, "%s %s/%u %.1f+%.1f+%.1f", i ? "," : "", E(e, sl[i].agent), sl[i].slot,
                    sl[i].startup_s, sl[i].gaps_s, sl[i].tail_s);
    kf_buf_addf(out, "%s\n", n > 64 ? ", ..." : "");
}

static void render_schedule(const rep *r, esc *e, kf_buf *out)
{
    int md = e->md;
    double makespan, startup, ideal, over;
    kf_rep_schedule_figures(r, &makespan, &startup, &ideal, &over);
    if (isnan(makespan))
        return;
    const rschedule *s = &r->sched;
    kf_buf_addf(out, "%sschedule: makespan %.2f s; CPU tasks %.2f s (%u attempts)",
                md ? "- " : "  ", makespan, s->cpu_busy_s, s->cpu_attempts);
    if (s->gpu_attempts)
        kf_buf_addf(out, ", GPU tasks %.2f s (%u attempts)", s->gpu_busy_s, s->gpu_attempts);
    if (!isnan(ideal))
        kf_buf_addf(out, "; ideal %.2f s = start-up %.2f s + %s task time / %s slots: %+.1f%%",
                    ideal, startup, s->gpu_attempts ? "GPU" : "CPU",
                    s->gpu_attempts ? "GPU" : "CPU", over);
    kf_buf_addc(out, '\n');
    double timed, pct;
    kf_rep_measured(r, NULL, &timed, &pct);
    if (isnan(pct) || timed <= 0)
        return;
    kf_buf_addf(out, "%smeasured: %.3g s of timed samples, %.1f%% of the makespan on %s slots",
                md ? "- " : "  ", timed, pct, s->gpu_attempts ? "GPU" : "CPU");
    for (size_t k = 0; r->nagents > 1 && k < r->nagents; k++) {
        kf_rep_measured(r, r->agents[k], &timed, &pct);
        kf_buf_addf(out, "%s %s %.1f%%", k ? "," : ";", E(e, r->agents[k]->agent_id), pct);
    }
    kf_buf_addc(out, '\n');
    kf_rep_phase ph[KF_REP_MAX_PHASES];
    double total, outside, idle;
    size_t n = kf_rep_slot_time(r, ph, &total, &outside, &idle);
    if (!n)
        return;
    /* Largest first: where the time went, in the order it matters. */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && ph[j].s > ph[j - 1].s; j--) {
            kf_rep_phase tmp = ph[j];
            ph[j] = ph[j - 1];
            ph[j - 1] = tmp;
        }
    kf_buf_addf(out, "%sslot time: %.1f s:", md ? "- " : "  ", total);
    for (size_t i = 0; i < n; i++)
        kf_buf_addf(out, " %s %.1f s (%.0f%%),", ph[i].name, ph[i].s, ph[i].s / total * 100);
    kf_buf_addf(out, " outside runners %.1f s (%.0f%%), idle %.1f s (%.0f%%)\n", outside,
                outside / total * 100, idle, idle / total * 100);
    kf_rep_row_time_text(r, md, out);
    render_idle(r, e, out);
}

static void render_header(const rep *r, esc *e, kf_buf *out)
{
    int md = e->md;
    char created[32], finished[32];
    kf_rep_fmt_iso(r->sw->created_ns, created, sizeof created);
    kf_rep_fmt_iso(r->sw->finished_ns, finished, sizeof finished);
    if (md)
        kf_buf_addf(out, "# Sweep %u: %s\n\n- file: `%s`\n- created %s, finished %s\n- tasks: ",
                    r->sw->sweep_id, E(e, r->sw->name), E(e, r->sw->file), created,
                    r->sw->finished_ns ? finished : "not yet");
    else
        kf_buf_addf(out, "sweep %u: %s (%s)\n  created %s, finished %s\n  tasks: ", r->sw->sweep_id,
                    E(e, r->sw->name), E(e, r->sw->file), created,
                    r->sw->finished_ns ? finished : "not yet");
    kf_buf_addf(out, "%zu", r->ntasks);
    const char *sep = " (";
    for (int st = KFLEET__TASK_STATE__SUCCEEDED; st <= KFLEET__TASK_STATE__CANCELLED; st++) {
        kf_buf_addf(out, "%s%u %s", sep, r->counts[st], state_text(st));
        sep = ", ";
    }
    if (r->counts[KFLEET__TASK_STATE__SKIPPED]) /* profiles whose validation failed */
        kf_buf_addf(out, ", %u skipped", r->counts[KFLEET__TASK_STATE__SKIPPED]);
    for (int st = KFLEET__TASK_STATE__PENDING; st <= KFLEET__TASK_STATE__RUNNING; st++)
        if (r->counts[st])
            kf_buf_addf(out, ", %u %s", r->counts[st], state_text(st));
    kf_buf_adds(out, ")\n");
    /* A cancelled or abandoned sweep says why (its first cancelled task's
     * reason: "cancelled by the user", "abandoned by kfleet run: ..."). */
    for (size_t i = 0; r->sw->cancelled && i < r->ntasks; i++)
        if (kf_rep_state_of(&r->tasks[i]) == KFLEET__TASK_STATE__CANCELLED) {
            const char *why = kf_rep_err_of(&r->tasks[i]);
            kf_buf_addf(out, "%sended before it finished: %s\n", md ? "- " : "  ",
                        E_n(e, why, strcspn(why, "\n")));
            break;
        }
    render_schedule(r, e, out);
    render_cost(r, e, out);
    for (size_t k = 0; k < r->nagents; k++) {
        const Kfleet__AgentInfo *a = r->agents[k];
        kf_buf_addf(out, "%snode %s: %s, %s", md ? "- " : "  ", E(e, a->agent_id),
                    E(e, a->hostname), E(e, a->n_gpus ? a->gpus[0]->name : a->cpu_model));
        if (a->n_gpus > 1)
            kf_buf_addf(out, " (x%zu)", a->n_gpus);
        if (a->driver_version && *a->driver_version)
            kf_buf_addf(out, ", driver %s", E(e, a->driver_version));
        kf_buf_addc(out, '\n');
    }
    if (r->sw->baseline && *r->sw->baseline)
        kf_buf_addf(out,
                    "%sspeedup: against %s in the same configuration on the same node, by the "
                    "median GPU span (\xC2\xB1 one standard error); under 50 \xC2\xB5s also by "
                    "what a caller pays per call (flags: host call)\n",
                    md ? "- " : "  ", E(e, r->sw->baseline));
    if (r->problem.k) {
        char pol[160], refs[200];
        kf_rep_seed_policy(&r->problem, pol, sizeof pol);
        kf_rep_problem_refs(r, refs, sizeof refs);
        kf_buf_addf(out, "%sproblem: %s (hash %s) judges every row; seeds: %s; %s\n",
                    md ? "- " : "  ", E(e, r->problem.k->name), E(e, kf_rep_nz(r->problem.k->hash)),
                    pol, refs);
    }
}

/* --provenance: where each row's numbers come from, one line each. */
static void render_provenance(const rep *r, esc *e, kf_buf *out)
{
    int md = e->md;
    kf_buf_adds(out, md ? "\n## Provenance\n\n" : "\nprovenance:\n");
    for (size_t i = 0; i < r->nrows; i++) {
        const rrow *w = &r->rows[i];
        const rtask *any = w->profile ? w->profile : w->validate;
        const Kfleet__AgentInfo *a = w->agent;
        const Kfleet__KernelRef *k = w->kref;
        const Kfleet__TelemetrySummary *ts =
            w->profile && w->profile->res ? w->profile->res->telemetry : NULL;
        char params[256];
        kf_rep_task_params(any->task, params, sizeof params);
        kf_buf_addf(out, "%s%s %s on %s:", md ? "- " : "  ", E(e, w->kernel_name), E(e, params),
                    E(e, *w->node ? w->node : "-"));
        if (a && a->n_gpus)
            kf_buf_addf(out, " %s %s,", E(e, a->gpus[0]->name), E(e, a->gpus[0]->uuid));
        else if (a)
            kf_buf_addf(out, " %s,", E(e, a->cpu_model));
        if (a && a->driver_version && *a->driver_version)
            kf_buf_addf(out, " driver %s,", E(e, a->driver_version));
        if (ts && ts->readings)
            kf_buf_addf(out, " SM %u-%u MHz, mem %u-%u MHz over %u readings,", ts->sm_clock_min_mhz,
                        ts->sm_clock_max_mhz, ts->mem_clock_min_mhz, ts->mem_clock_max_mhz,
                        ts->readings);
        if (w->sm_clock_mhz)
            kf_buf_addf(out,
                        " kept samples at median SM %u MHz and %.0f W, %zu discarded by the "
                        "throttle policy,",
                        w->sm_clock_mhz, w->power_mw / 1e3, w->profile->ndiscarded);
        if (w->build && w->build->compiler && *w->build->compiler)
            kf_buf_addf(out, " %s,", E(e, w->build->compiler));
        if (w->build && w->build->torch_extension && *w->build->torch_extension)
            kf_buf_addf(out, " extension %s,", E(e, w->build->torch_extension));
        kf_buf_addf(out, " source %.12s, binary %.12s, kfleet %s\n", k ? E(e, k->hash) : "-",
                    w->build ? E(e, w->build->artifact_hash) : "-",
                    a && a->version && *a->version ? E(e, a->version) : KF_VERSION);
    }
}

/* A failure's error, whole up to ERR_LINES lines of ERR_LINE_BYTES, then
 * how many lines are left and where they are; in Markdown inside a fence
 * that no backtick run of the error can close. */
static void render_error(const rep *r, esc *e, const char *err, kf_buf *out)
{
    if (!*err)
        return;
    size_t fence = kf_text_fence_len(err);
    if (e->md) {
        kf_buf_adds(out, "\n  ");
        for (size_t i = 0; i < fence; i++)
            kf_buf_addc(out, '`');
        kf_buf_addc(out, '\n');
    }
    int lines = 0;
    const char *p = err;
    while (*p && lines < ERR_LINES) {
        size_t len = strcspn(p, "\n");
        size_t show = len > ERR_LINE_BYTES ? ERR_LINE_BYTES : len;
        while (show < len && show > 0 && ((unsigned char)p[show] & 0xC0) == 0x80)
            show--;
        kf_buf_adds(out, e->md ? "  " : "      ");
        kf_text_inert_n(out, p, show, KF_TEXT_LINE);
        if (show < len)
            kf_buf_addf(out, "... (%zu more bytes)", len - show);
        kf_buf_addc(out, '\n');
        p += len + (p[len] == '\n');
        lines++;
    }
    size_t more = 0;
    for (const char *q = p; *q; q += strcspn(q, "\n"), q += *q == '\n')
        more++;
    if (more)
        kf_buf_addf(out, "%s... %zu more line%s: kfleet report %u --format json\n",
                    e->md ? "  " : "      ", more, more == 1 ? "" : "s", r->sw->sweep_id);
    if (e->md) {
        kf_buf_adds(out, "  ");
        for (size_t i = 0; i < fence; i++)
            kf_buf_addc(out, '`');
        kf_buf_addc(out, '\n');
    }
}

int kf_rep_render_text(const rep *r, int md, int color, kf_buf *out)
{
    esc e = {.md = md};
    for (size_t i = 0; i < 8; i++)
        kf_buf_init(&e.ring[i]);
    render_header(r, &e, out);
    size_t nb = 0;
    for (size_t i = 0; i < r->ntasks; i++)
        nb += r->tasks[i].kind->report == KF_REPORT_BUILD;
    size_t n = (r->nrows > nb ? r->nrows : nb) + 1;
    char(*cells)[CELL] = kf_xcalloc(n * R_N, sizeof *cells);

    kf_buf_adds(out, md ? "\n## Results\n\n" : "\nresults:\n");
    for (size_t i = 0; i < r->nrows; i++)
        row_cells(r, &r->rows[i], &cells[i * R_N]);
    /* Without a baseline the speedup column would be all dashes. */
    unsigned hide = r->sw->baseline && *r->sw->baseline ? 0 : 1u << R_SPEEDUP;
    /* Likewise %ceiling on a sweep of host kernels (see the ceilings above). */
    int any_ceil = 0;
    for (size_t i = 0; i < r->nrows; i++)
        any_ceil |= isfinite(r->rows[i].pct_bw) || isfinite(r->rows[i].pct_mma);
    if (!any_ceil)
        hide |= 1u << R_CEIL;
    grid g = {R_N, row_names, row_right, cells, r->nrows, row_color, hide};
    if (r->nrows)
        grid_render(&g, &e, color, out);
    else
        kf_buf_adds(out,
                    md ? "No validate or profile tasks.\n" : "  (no validate or profile tasks)\n");

    if (r->provenance)
        render_provenance(r, &e, out);

    if (nb) {
        kf_buf_adds(out, md ? "\n## Builds\n\n" : "\nbuilds:\n");
        size_t k = 0;
        for (size_t i = 0; i < r->ntasks; i++)
            if (r->tasks[i].kind->report == KF_REPORT_BUILD)
                build_cells(r, &r->tasks[i], &cells[k++ * B_N]);
        grid gb = {B_N, build_names, build_right, cells, nb, build_color, 0};
        grid_render(&gb, &e, color, out);
    }
    free(cells);

    int any = 0;
    for (size_t i = 0; i < r->ntasks; i++) {
        const rtask *rt = &r->tasks[i];
        int st = kf_rep_state_of(rt);
        if (!kf_rep_is_failure(st))
            continue;
        if (!any)
            kf_buf_adds(out, md ? "\n## Failures\n" : "\nfailures:\n");
        any = 1;
        task_head(r, rt, &e, out);
        kf_buf_addf(out, " on %s, task 0x%llx: %s\n",
                    E(&e, *kf_rep_node_of(rt) ? kf_rep_node_of(rt) : "no node"),
                    (unsigned long long)rt->task->task_id, state_text(st));
        render_error(r, &e, kf_rep_err_of(rt), out);
    }
    /* Tasks that took more than one attempt: why each ended. */
    int tried = 0;
    for (size_t i = 0; i < r->ntasks; i++) {
        const rtask *rt = &r->tasks[i];
        if (rt->natt < 2)
            continue;
        if (!tried)
            kf_buf_adds(out, md ? "\n## Attempts\n" : "\nattempts:\n");
        tried = 1;
        task_head(r, rt, &e, out);
        kf_buf_addf(out, ", task 0x%llx:\n", (unsigned long long)rt->task->task_id);
        for (size_t k = 0; k < rt->natt; k++) {
            const rattempt *x = &rt->att[k];
            const char *note = x->note ? x->note : "";
            size_t nl = strcspn(note, "\n");
            kf_buf_addf(out, "%sattempt %u on %s: %s%s%s\n", md ? "  - " : "      ", x->attempt,
                        E(&e, x->agent ? x->agent : "?"), state_text(x->state), nl ? " — " : "",
                        E_n(&e, note, nl));
        }
    }
    kf_rep_render_launches(r, md, out);
    kf_rep_render_output(r, md, out);
    for (size_t i = 0; i < 8; i++)
        kf_buf_release(&e.ring[i]);
    return 0;
}
