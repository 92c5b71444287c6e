/* report_speedup — each row's speedup against the baseline measured on its
 * own node, or why it has none; see report_rows.h.
 *
 * A speedup divides the baseline kernel's median of the same configuration
 * by the row's, both measured on one node: an agent (one machine, its GPUs,
 * driver and toolchain), where the two medians share the hardware's speed
 * and the node's state; across nodes of one GPU model a few percent of
 * node-to-node difference would count as the kernel's. "Same
 * configuration": every axis of the baseline is an axis of the row with
 * the same value, and they share one (gemm_bf16 {m, n, k, impl} against
 * gemm_cublas {m, n, k}; a kernel with other axes, copy {bytes}, has no
 * baseline rather than a meaningless one). Of the sweep's baselines, the
 * first that runs the configuration and passed on the node counts; a
 * baseline's own row is 1, exactly, against itself. A row faster than its
 * node can be (impossible) has no speedup, nor has one against an
 * impossible baseline.
 *
 * The scheduler measures a `nodes: any` baseline on every agent that runs
 * a profile of its configuration (sched_baseline.c, issue 41), so a row
 * with a timed profile and no speedup, where a baseline runs its
 * configuration, is a row whose node's baseline failed, was skipped or
 * cancelled, is impossible, or was never measured there (a sweep stored
 * before, a `--baseline` the sweep did not name): it says which
 * (kf_rep_no_speedup), never a blank. The leaderboard ranks by these
 * speedups (report_rank.c), so rank and speedup compare the same medians.
 *
 * How: the baselines' rows are gathered first, then each row walks them:
 * rows x baseline rows, not rows^2. */
#include "report/report_rows.h"
#include "common/xalloc.h"
#include "core/sweep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The parameters of a row's task (profile, else validation). */
static const Kfleet__Task *task_of(const rrow *w)
{
    return (w->profile ? w->profile : w->validate)->task;
}

/* Whether baseline row b runs the configuration row w runs (above). */
static int same_config(const rrow *b, const rrow *w)
{
    const Kfleet__Task *tb = task_of(b), *tw = task_of(w);
    if (tb->n_params == 0)
        return 0;
    for (size_t i = 0; i < tb->n_params; i++) {
        size_t j = 0;
        while (j < tw->n_params && strcmp(tw->params[j]->name, tb->params[i]->name) != 0)
            j++;
        if (j == tw->n_params || tw->params[j]->value != tb->params[i]->value)
            return 0;
    }
    return 1;
}

/* A row with a median a speedup may divide. */
static int timed(const rrow *w)
{
    return w->st.n && w->st.median > 0 && !w->impossible_of;
}

static int is_baseline(const rep *r, const rrow *w)
{
    return kf_sweep_is_baseline(r->sw->baseline, kf_rep_kernel_name(r, w->kernel));
}

/* Row w's speedup against b, with the uncertainty of the ratio, and by the
 * host time per call (issue 41 item 5). */
static void divide(rrow *w, const rrow *b)
{
    w->base_median = b->st.median;
    w->speedup = b->st.median / w->st.median;
    double eb = kf_rep_median_rel_se(&b->st), ew = kf_rep_median_rel_se(&w->st);
    /* The baseline against itself is the same samples: exactly 1. */
    w->speedup_err = b == w ? 0 : w->speedup * sqrt(eb * eb + ew * ew);
    /* By what a caller pays per call, where both have it. */
    if (w->host_call_s > 0 && b->host_call_s > 0)
        w->speedup_host = b->host_call_s / w->host_call_s;
}

/* Why w has none: its node's baseline row `there` (NULL: none) of the
 * baselines that run its configuration, the first of them `any`. */
static void say_why(rrow *w, const rrow *there, const rrow *any)
{
    rnobase *nb = &w->nobase;
    nb->kernel = (there ? there : any)->kernel;
    if (!there) {
        nb->why = KF_REP_NOBASE_MISSING;
    } else if (there->impossible_of) {
        nb->why = KF_REP_NOBASE_IMPOSSIBLE;
        nb->x = there->impossible_x;
        nb->of = there->impossible_of;
    } else {
        nb->why = KF_REP_NOBASE_FAILED;
        nb->v = there->validate;
        nb->p = there->profile;
    }
}

void kf_rep_speedups(rep *r)
{
    if (!r->sw->baseline || !*r->sw->baseline)
        return;
    const rrow **base = kf_xcalloc(r->nrows ? r->nrows : 1, sizeof *base);
    size_t nb = 0;
    for (size_t j = 0; j < r->nrows; j++)
        if (is_baseline(r, &r->rows[j]))
            base[nb++] = &r->rows[j];
    for (size_t i = 0; i < r->nrows; i++) {
        rrow *w = &r->rows[i];
        if (!timed(w))
            continue;
        int own = is_baseline(r, w);
        const rrow *there = NULL, *any = NULL;
        size_t j = 0;
        for (; j < nb; j++) {
            const rrow *b = base[j];
            /* A baseline's row is compared with itself only. */
            if ((own && b != w) || !same_config(b, w))
                continue;
            any = any ? any : b;
            if (strcmp(b->node, w->node) != 0)
                continue;
            if (timed(b))
                break;
            there = there ? there : b;
        }
        if (j < nb)
            divide(w, base[j]);
        else if (any)
            say_why(w, there, any);
    }
    free(base);
}

void kf_rep_no_speedup(const rep *r, const rrow *w, char *out, size_t len)
{
    const rnobase *nb = &w->nobase;
    const char *name = kf_rep_kernel_name(r, nb->kernel), *node = *w->node ? w->node : "-";
    if (len)
        out[0] = 0;
    if (nb->why == KF_REP_NOBASE_MISSING) {
        snprintf(out, len, "baseline %s not measured on %s", name, node);
    } else if (nb->why == KF_REP_NOBASE_IMPOSSIBLE) {
        snprintf(out, len, "baseline %s on %s is impossible (%.1fx the node's %s)", name, node,
                 nb->x, nb->of);
    } else if (nb->why == KF_REP_NOBASE_FAILED) {
        /* Its first task that did not succeed, as the row's verdict says. */
        const rtask *t =
            nb->v && kf_rep_state_of(nb->v) != KFLEET__TASK_STATE__SUCCEEDED ? nb->v : nb->p;
        if (!t || kf_rep_state_of(t) == KFLEET__TASK_STATE__SUCCEEDED) {
            snprintf(out, len, "baseline %s on %s has no timed profile", name, node);
            return;
        }
        const char *err = kf_rep_err_of(t);
        int n = (int)strcspn(err, "\n");
        snprintf(out, len, "baseline %s on %s: %s %s%s%.*s", name, node, t->kind->name,
                 kf_rep_state_name(kf_rep_state_of(t)), n ? ": " : "", n < 200 ? n : 200, err);
    }
}
