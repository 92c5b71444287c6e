/* sched_order — the order in which the dispatcher offers a sweep's pending
 * tasks: longest expected first (LPT). A sweep whose longest task starts
 * last ends with one GPU running it while the others idle (4 x H200,
 * examples/gpu.yaml: +15 % over ideal, issue 32); offering the longest
 * first leaves the short ones to fill the gaps at the end.
 *
 * Expected seconds of a task (pred), the first that applies:
 *  (a) the elapsed time of the same kernel (source hash), kind and
 *      parameters in an earlier sweep (sched_priors.c, the newest);
 *  (b) a profile whose validation passed: 1.2 x that validation's elapsed
 *      time. On one H200 (examples/gpu.yaml, 62 rows) profile/validate
 *      elapsed has median 1.17 and sum ratio 1.29; Spearman 0.76;
 *  (c) KF_SCHED_GUESS_S scaled within its kernel by the product of its
 *      numeric parameters over the geometric mean of that product across
 *      the kernel's tasks in the sweep (a bigger configuration runs
 *      longer; across kernels nothing is known, so each kernel's middle
 *      configuration counts as KF_SCHED_GUESS_S).
 * The priority is the expected time of the chain a task starts (a
 * validation's own plus that of the profile it gates, a profile's own)
 * for a long chain (3 x the median chain or more); the rest go by kernel,
 * the kernel with the most expected time first, and within it by chain:
 * long chains must start early for the GPUs to end together, and a GPU
 * that stays on one kernel keeps its runner (plan_groups).
 * Builds and reference tasks, which others wait for, come first. Ties keep
 * submission order (the task index breaks them), and the order is only a
 * priority: a task the dispatcher cannot start on an agent (gated, pinned,
 * wrong agent, no build) is passed over and keeps its place, so no rule of
 * sched_dispatch.c changes and nothing starves that could run.
 *
 * Nothing is persisted: after a restart sched_load plans the sweep again
 * from the same store (priors, and the stored results of passed
 * validations), which gives the same order.
 *
 * A binary heap of (priority, index) per sweep, with lazy deletion: an
 * entry is live while its task is pending with that priority. pick() pops
 * entries in order and sched_order_rewind pushes back those it passed
 * over, so a dispatch costs O(k log n) for k tasks looked at, where the
 * index walk it replaces cost O(k). */
#include "daemon/sched_int.h"
#include "common/taskkind.h"
#include "common/log.h"
#include "common/stats.h"
#include "common/xalloc.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* What a kernel's middle configuration is expected to take, with no
 * measurement of it: "most rows are 0.5-2 s" on one H200 (issue 32). */
#define KF_SCHED_GUESS_S 1.0
/* A profile's expected time per second of its passed validation (above). */
#define KF_SCHED_PROFILE_PER_VALIDATE 1.2
/* Builds and references: before any task that waits for them. */
#define KF_SCHED_FIRST 1e12
/* Long chains (KF_SCHED_LONG_PER_MEDIAN times the median chain or more):
 * after those, before the grouped rest (a kernel's rank times
 * KF_SCHED_GROUP plus its chain: no chain is a million seconds). */
#define KF_SCHED_LONG 1e10
#define KF_SCHED_LONG_PER_MEDIAN 3.0
#define KF_SCHED_GROUP 1e6

typedef struct oent {
    double prio;
    uint32_t idx;
} oent;

struct sched_order {
    double *prio, *pred; /* by task index */
    uint8_t *prior;      /* pred came from an earlier sweep */
    uint32_t ntasks;
    /* A chain expected to take long_s or more goes first, longest first;
     * the rest by kernel, heaviest kernel first (group[kernel index]: its
     * rank from the lightest, 1 up), each kernel's longest first. */
    double long_s;
    double *group;
    size_t ngroup;
    oent *heap, *skip;
    size_t n, cap, nskip, capskip;
};

/* a goes before b: higher priority, then lower index. */
static int before(oent a, oent b)
{
    return a.prio > b.prio || (a.prio == b.prio && a.idx < b.idx);
}

static void heap_push(sched_order *o, oent e)
{
    if (o->n == o->cap) {
        o->cap = o->cap ? o->cap * 2 : 64;
        o->heap = kf_xrealloc(o->heap, o->cap * sizeof *o->heap);
    }
    size_t i = o->n++;
    while (i > 0 && before(e, o->heap[(i - 1) / 2])) {
        o->heap[i] = o->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    o->heap[i] = e;
}

static oent heap_pop(sched_order *o)
{
    oent top = o->heap[0], last = o->heap[--o->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, best = l;
        if (l >= o->n)
            break;
        if (l + 1 < o->n && before(o->heap[l + 1], o->heap[l]))
            best = l + 1;
        if (!before(o->heap[best], last))
            break;
        o->heap[i] = o->heap[best];
        i = best;
    }
    if (o->n)
        o->heap[i] = last;
    return top;
}

/* Grows the per-task arrays to the sweep's tasks (builds are added while
 * it runs); a new task's priority is KF_SCHED_FIRST until planned. */
static sched_order *order_of(ksweep *sw)
{
    if (!sw->order)
        sw->order = kf_xcalloc(1, sizeof *sw->order);
    sched_order *o = sw->order;
    if (o->ntasks < sw->ntasks) {
        o->prio = kf_xrealloc(o->prio, sw->ntasks * sizeof *o->prio);
        o->pred = kf_xrealloc(o->pred, sw->ntasks * sizeof *o->pred);
        o->prior = kf_xrealloc(o->prior, sw->ntasks);
        for (uint32_t i = o->ntasks; i < sw->ntasks; i++) {
            o->prio[i] = KF_SCHED_FIRST;
            o->pred[i] = 0;
            o->prior[i] = 0;
        }
        o->ntasks = sw->ntasks;
    }
    return o;
}

void sched_order_free(sched_order **self)
{
    sched_order *o = *self;
    if (!o)
        return;
    free(o->prio);
    free(o->pred);
    free(o->prior);
    free(o->group);
    free(o->heap);
    free(o->skip);
    free(o);
    *self = NULL;
}

/* ---- what each task is expected to take ---- */

typedef struct prior {
    uint64_t key;
    double s;
    uint32_t seq; /* found order: the newest sweep's first */
} prior;

typedef struct priors {
    prior *v;
    size_t n, cap;
} priors;

static int add_prior(void *ctx, uint64_t key, double elapsed_s)
{
    priors *p = ctx;
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 64;
        p->v = kf_xrealloc(p->v, p->cap * sizeof *p->v);
    }
    p->v[p->n] = (prior){key, elapsed_s, (uint32_t)p->n};
    p->n++;
    return 0;
}

static int prior_cmp(const void *a, const void *b)
{
    const prior *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The newest prior of key, or NULL. */
static const prior *find_prior(const priors *p, uint64_t key)
{
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->v[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->n && p->v[lo].key == key ? &p->v[lo] : NULL;
}

/* The product of a task's numeric parameters, at least 1. */
static double params_product(const Kfleet__Task *t)
{
    double x = 1;
    for (size_t i = 0; i < t->n_params; i++)
        if (t->params[i]->value > 1)
            x *= (double)t->params[i]->value;
    return x;
}

/* The stored elapsed time of a passed validation, 0 when none. */
static double validated_s(kf_txn *txn, const ktask *v)
{
    if (!txn || v->rec->state != KFLEET__TASK_STATE__SUCCEEDED)
        return 0;
    Kfleet__Result *r = NULL;
    if (kf_store_get_result(txn, v->rec->task_id, &r) != KF_OK)
        return 0;
    double s = r->state == KFLEET__TASK_STATE__SUCCEEDED && r->elapsed_s > 0 ? r->elapsed_s : 0;
    kfleet__result__free_unpacked(r, NULL);
    return s;
}

/* The expected seconds of the chain task i starts (its own, and the
 * profile it gates). */
static double chain_of(const ksweep *sw, const sched_order *o, uint32_t i)
{
    const ktask *t = &sw->tasks[i];
    double p = o->pred[i];
    if (t->dependent >= 0 && (uint32_t)t->dependent < o->ntasks)
        p += o->pred[t->dependent];
    return p;
}

static int first_kind(const ktask *t)
{
    const kf_task_kind *tk = t->kind;
    return !tk || !tk->needs_build || tk->references;
}

static double prio_of(const ksweep *sw, const sched_order *o, uint32_t i)
{
    const ktask *t = &sw->tasks[i];
    if (first_kind(t))
        return KF_SCHED_FIRST;
    double p = chain_of(sw, o, i);
    if (p >= o->long_s)
        return KF_SCHED_LONG + p;
    uint32_t k = t->rec->kernel_index;
    return (k < o->ngroup ? o->group[k] : 0) * KF_SCHED_GROUP + p;
}

/* long_s and the kernels' ranks (see sched_order). Only long chains need
 * to start early for the GPUs to end together; ordering every task by its
 * length alone interleaved the kernels, and each switch of kernel on a GPU
 * is a new runner and CUDA context: on one H200, examples/gpu.yaml's
 * context time went from 1.0 to 10.6 s, on 4 from 21 to 41 s (2026-11-27). */
static void plan_groups(const ksweep *sw, sched_order *o, size_t nk)
{
    double *chains = kf_xcalloc(sw->ntasks ? sw->ntasks : 1, sizeof *chains);
    double *total = kf_xcalloc(nk ? nk : 1, sizeof *total);
    size_t n = 0;
    for (uint32_t i = 0; i < sw->ntasks; i++)
        if (!first_kind(&sw->tasks[i]))
            chains[n++] = chain_of(sw, o, i);
    kf_stats_sort(chains, n);
    double med = n ? kf_stats_quantile(chains, n, 0.5) : 0;
    o->long_s = med > 0 ? KF_SCHED_LONG_PER_MEDIAN * med : INFINITY;
    /* A kernel's weight: its tasks that are not long (those go first). */
    for (uint32_t i = 0; i < sw->ntasks; i++) {
        const ktask *t = &sw->tasks[i];
        if (!first_kind(t) && t->rec->kernel_index < nk && chain_of(sw, o, i) < o->long_s)
            total[t->rec->kernel_index] += o->pred[i];
    }
    free(o->group);
    o->group = kf_xcalloc(nk ? nk : 1, sizeof *o->group);
    o->ngroup = nk;
    for (size_t k = 0; k < nk; k++) {
        size_t heavier = 0; /* ties: the lower index heavier, as submitted */
        for (size_t j = 0; j < nk; j++)
            heavier += total[j] > total[k] || (total[j] == total[k] && j < k);
        o->group[k] = (double)(nk - heavier);
    }
    free(chains);
    free(total);
}

int sched_order_plan(ksweep *sw, kf_txn *txn, sched_priors **cache)
{
    sched_order *o = order_of(sw);
    size_t nk = sw->rec->n_kernels;
    priors pr = {0};
    int rc = KF_OK;
    if (txn && nk) {
        const char **hashes = kf_xcalloc(nk, sizeof *hashes);
        for (size_t k = 0; k < nk; k++)
            hashes[k] = sw->rec->kernels[k]->hash;
        rc = sched_priors_walk(cache, txn, sw->rec->sweep_id, hashes, nk, add_prior, &pr);
        free(hashes);
        if (rc)
            kf_warn("sched.priors",
                    "sweep=%u the store's earlier durations could not be read (%s): the order "
                    "uses validations and parameters only",
                    sw->rec->sweep_id, kf_strerror(rc));
        if (pr.n)
            qsort(pr.v, pr.n, sizeof *pr.v, prior_cmp);
    }
    /* The geometric mean of the parameter product, per kernel, over the
     * tasks of its configurations: builds (made as the sweep runs, so
     * present after a restart only) and a reload's holes left out, or the
     * same sweep would be planned otherwise after a restart. */
    double *logsum = kf_xcalloc(nk ? nk : 1, sizeof *logsum);
    uint32_t *count = kf_xcalloc(nk ? nk : 1, sizeof *count);
    for (uint32_t i = 0; i < sw->ntasks; i++) {
        const Kfleet__Task *t = sw->tasks[i].rec;
        const kf_task_kind *tk = sw->tasks[i].kind;
        if (t->kernel_index < nk && tk->kind && !tk->builds) {
            logsum[t->kernel_index] += log(params_product(t));
            count[t->kernel_index]++;
        }
    }
    uint32_t known = 0;
    for (uint32_t i = 0; i < sw->ntasks; i++) {
        const ktask *t = &sw->tasks[i];
        uint32_t k = t->rec->kernel_index;
        o->prior[i] = 0;
        if (k >= nk) {
            o->pred[i] = KF_SCHED_GUESS_S;
            continue;
        }
        const prior *p =
            pr.n ? find_prior(&pr, sched_prior_key(sw->rec->kernels[k]->hash, t->rec)) : NULL;
        double v = 0;
        if (p) {
            o->pred[i] = p->s;
            o->prior[i] = 1;
            known++;
        } else if (t->gate >= 0 && (uint32_t)t->gate < sw->ntasks &&
                   (v = validated_s(txn, &sw->tasks[t->gate])) > 0) {
            o->pred[i] = KF_SCHED_PROFILE_PER_VALIDATE * v;
        } else {
            double mean = count[k] ? logsum[k] / count[k] : 0;
            o->pred[i] = KF_SCHED_GUESS_S * exp(log(params_product(t->rec)) - mean);
        }
    }
    free(logsum);
    free(count);
    free(pr.v);
    plan_groups(sw, o, nk);
    o->n = o->nskip = 0;
    for (uint32_t i = 0; i < sw->ntasks; i++) {
        o->prio[i] = prio_of(sw, o, i);
        if (sw->tasks[i].rec->state == KFLEET__TASK_STATE__PENDING)
            heap_push(o, (oent){o->prio[i], i});
    }
    kf_info("sched.order", "sweep=%u tasks=%u with_prior=%u", sw->rec->sweep_id, sw->ntasks, known);
    return rc;
}

void sched_order_added(ksweep *sw, uint32_t idx)
{
    if (!sw->order)
        return; /* planned later, with the rest */
    sched_order *o = order_of(sw);
    if (idx >= o->ntasks)
        return;
    o->pred[idx] = KF_SCHED_GUESS_S;
    o->prio[idx] = prio_of(sw, o, idx);
    if (sw->tasks[idx].rec->state == KFLEET__TASK_STATE__PENDING)
        heap_push(o, (oent){o->prio[idx], idx});
}

void sched_order_push(ksweep *sw, uint32_t idx)
{
    sched_order *o = order_of(sw);
    if (idx < o->ntasks)
        heap_push(o, (oent){o->prio[idx], idx});
}

void sched_order_ended(ksweep *sw, const ktask *t, double elapsed_s)
{
    sched_order *o = order_of(sw);
    int32_t d = t->dependent;
    if (t->rec->state != KFLEET__TASK_STATE__SUCCEEDED || elapsed_s <= 0 || d < 0 ||
        (uint32_t)d >= o->ntasks || o->prior[d])
        return;
    o->pred[d] = KF_SCHED_PROFILE_PER_VALIDATE * elapsed_s;
    o->prio[d] = prio_of(sw, o, (uint32_t)d);
    if (sw->tasks[d].rec->state == KFLEET__TASK_STATE__PENDING)
        heap_push(o, (oent){o->prio[d], (uint32_t)d});
}

int sched_order_next(ksweep *sw, uint32_t *idx)
{
    sched_order *o = order_of(sw);
    while (o->n) {
        oent e = heap_pop(o);
        /* Live: pending, with the priority it was pushed with. */
        if (e.idx >= sw->ntasks || sw->tasks[e.idx].rec->state != KFLEET__TASK_STATE__PENDING ||
            o->prio[e.idx] != e.prio)
            continue;
        if (o->nskip == o->capskip) {
            o->capskip = o->capskip ? o->capskip * 2 : 64;
            o->skip = kf_xrealloc(o->skip, o->capskip * sizeof *o->skip);
        }
        o->skip[o->nskip++] = e;
        *idx = e.idx;
        return 1;
    }
    return 0;
}

void sched_order_rewind(ksweep *sw, uint32_t taken)
{
    sched_order *o = order_of(sw);
    for (size_t i = 0; i < o->nskip; i++)
        if (o->skip[i].idx != taken &&
            sw->tasks[o->skip[i].idx].rec->state == KFLEET__TASK_STATE__PENDING)
            heap_push(o, o->skip[i]);
    o->nskip = 0;
}

int sched_order_long(const ksweep *sw, uint32_t idx)
{
    const sched_order *o = sw->order;
    return o && idx < o->ntasks && o->prio[idx] >= KF_SCHED_LONG && o->prio[idx] < KF_SCHED_FIRST;
}

double sched_order_expected(const ksweep *sw, uint32_t idx)
{
    return sw->order && idx < sw->order->ntasks ? sw->order->pred[idx] : NAN;
}
