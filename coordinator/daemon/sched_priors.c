/* sched_priors — what earlier sweeps measured, for the order's first rule
 * (sched_order.c): the elapsed time of the same kernel (source hash), kind
 * and parameters in an earlier sweep, the newest.
 *
 * The walk, newest sweep first, is bounded so that a submit stays cheap on
 * a large store: the KF_PRIOR_SWEEPS latest sweeps are looked at, the tasks
 * of at most KF_PRIOR_MATCHES of them that share a kernel with the new
 * sweep are read, and at most KF_PRIOR_TASKS task records in all.
 *
 * A finished sweep no longer changes (its tasks are terminal, a task's
 * result is written once), so what the walk read of it is kept here, in
 * the coordinator's memory: its kernels' hashes, its task count and each
 * passed task's (key, elapsed), taken from memory as it finishes when it
 * ran here (read once from the store when it was loaded after a restart).
 * Reading them from the store at every submit was the coordinator's cost
 * that grew with its history: in
 * `kfbench latency` (1,000 one-task sweeps, one after the other) 8 sweeps
 * unpacked and walked a submit, 190,000 instructions of its 509,000; in
 * `kfbench dispatch` the fifth 10,000-task sweep read the 40,000 tasks and
 * results of the four before it in its submit's turn, while the agents
 * waited. A sweep still open is read from the store each time, as it may
 * still change. What is kept is bounded: KF_PRIOR_SWEEPS sweeps and
 * KF_PRIOR_KEPT pairs, the oldest sweep dropped first (the walk reaches the
 * newest first). A restarted coordinator reads them again, to the same. */
#include "daemon/sched_int.h"
#include "common/taskkind.h"
#include "common/xalloc.h"

#include <stdlib.h>
#include <string.h>

#define KF_PRIOR_SWEEPS 256
#define KF_PRIOR_MATCHES 8
#define KF_PRIOR_TASKS 200000
#define KF_PRIOR_KEPT 1000000

typedef struct pentry {
    uint64_t key;
    double s;
    uint32_t pos;    /* the task's place among its sweep's task records */
    uint32_t kernel; /* its kernel's index in its sweep */
} pentry;

/* One earlier sweep as the walk read it. */
typedef struct psweep {
    uint32_t id;
    char **hashes; /* its kernels' */
    size_t nk;
    int read;        /* v and ntasks hold its tasks (read at its first match) */
    uint32_t ntasks; /* its task records, KF_PRIOR_TASKS + 1 at most */
    pentry *v;       /* its passed tasks with a duration, in task order */
    size_t n, cap;
} psweep;

struct sched_priors {
    psweep *s; /* finished sweeps, by id */
    size_t n, cap;
    size_t kept; /* pairs in all */
};

uint64_t sched_prior_key(const char *hash, const Kfleet__Task *t)
{
    uint64_t h = 1469598103934665603ULL;
#define MIX(p, n)                                                                                  \
    for (size_t b_ = 0; b_ < (n); b_++)                                                            \
        h = (h ^ ((const uint8_t *)(p))[b_]) * 1099511628211ULL;
    MIX(hash, strlen(hash) + 1);
    int32_t kind = t->kind;
    MIX(&kind, sizeof kind);
    for (size_t i = 0; i < t->n_params; i++) {
        const char *name = t->params[i]->name ? t->params[i]->name : "";
        MIX(name, strlen(name) + 1);
        int64_t v = t->params[i]->value;
        MIX(&v, sizeof v);
    }
#undef MIX
    return h;
}

static void psweep_free(psweep *p)
{
    for (size_t k = 0; k < p->nk; k++)
        free(p->hashes[k]);
    free(p->hashes);
    free(p->v);
    memset(p, 0, sizeof *p);
}

void sched_priors_free(sched_priors **self)
{
    sched_priors *c = *self;
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        psweep_free(&c->s[i]);
    free(c->s);
    free(c);
    *self = NULL;
}

/* The kept sweep of id, or NULL. */
static psweep *find(sched_priors *c, uint32_t id)
{
    size_t lo = 0, hi = c ? c->n : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->s[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return c && lo < c->n && c->s[lo].id == id ? &c->s[lo] : NULL;
}

/* Drops the oldest kept sweeps but the one of id `spare` while more are
 * kept than the bounds allow. */
static void trim(sched_priors *c, uint32_t spare)
{
    size_t i = 0;
    while (i < c->n && (c->n > KF_PRIOR_SWEEPS || c->kept > KF_PRIOR_KEPT)) {
        if (c->s[i].id == spare) {
            i++;
            continue;
        }
        c->kept -= c->s[i].n;
        psweep_free(&c->s[i]);
        memmove(&c->s[i], &c->s[i + 1], (c->n - i - 1) * sizeof *c->s);
        c->n--;
    }
}

/* Keeps p (moved in; p is left empty). Returns where it is kept. */
static psweep *keep(sched_priors *c, psweep *p)
{
    uint32_t id = p->id;
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        c->s = kf_xrealloc(c->s, c->cap * sizeof *c->s);
    }
    size_t at = 0;
    while (at < c->n && c->s[at].id < id)
        at++;
    memmove(&c->s[at + 1], &c->s[at], (c->n - at) * sizeof *c->s);
    c->s[at] = *p;
    memset(p, 0, sizeof *p);
    c->n++;
    c->kept += c->s[at].n;
    trim(c, id);
    return find(c, id);
}

typedef struct read_ctx {
    kf_txn *txn;
    psweep *p;
} read_ctx;

static int read_task(void *ctx, const Kfleet__Task *task)
{
    read_ctx *x = ctx;
    psweep *p = x->p;
    if (++p->ntasks > KF_PRIOR_TASKS)
        return 1; /* no walk reads further: stop (not an error) */
    if (task->state != KFLEET__TASK_STATE__SUCCEEDED || task->kernel_index >= p->nk ||
        kf_task_kind_at(task->kind)->builds)
        return 0;
    Kfleet__Result *r = NULL;
    int rc = kf_store_get_result(x->txn, task->task_id, &r);
    if (rc == KF_ENOTFOUND)
        return 0;
    if (rc)
        return rc;
    if (r->state == KFLEET__TASK_STATE__SUCCEEDED && r->elapsed_s > 0) {
        if (p->n == p->cap) {
            p->cap = p->cap ? p->cap * 2 : 64;
            p->v = kf_xrealloc(p->v, p->cap * sizeof *p->v);
        }
        p->v[p->n++] = (pentry){sched_prior_key(p->hashes[task->kernel_index], task), r->elapsed_s,
                                p->ntasks - 1, task->kernel_index};
    }
    kfleet__result__free_unpacked(r, NULL);
    return 0;
}

/* Reads p's tasks (up to the walk's bound) and their durations. */
static int read_sweep(kf_txn *txn, psweep *p)
{
    read_ctx x = {txn, p};
    p->ntasks = 0;
    p->n = 0;
    int rc = kf_store_foreach_task(txn, p->id, read_task, &x);
    if (rc == 1 && p->ntasks > KF_PRIOR_TASKS)
        rc = KF_OK;
    p->read = rc == KF_OK;
    return rc;
}

void sched_priors_finished(sched_priors **cache, const ksweep *sw)
{
    if (!*cache)
        *cache = kf_xcalloc(1, sizeof **cache);
    if (find(*cache, sw->rec->sweep_id))
        return;
    psweep p = {0};
    p.id = sw->rec->sweep_id;
    p.nk = sw->rec->n_kernels;
    p.hashes = kf_xcalloc(p.nk ? p.nk : 1, sizeof *p.hashes);
    for (size_t k = 0; k < p.nk; k++)
        p.hashes[k] = kf_xstrdup(sw->rec->kernels[k]->hash);
    /* What read_task finds in the store: its task records in index order,
     * those past the walk's bound not read. */
    p.ntasks = sw->ntasks > KF_PRIOR_TASKS ? KF_PRIOR_TASKS + 1 : sw->ntasks;
    for (uint32_t i = 0; i < sw->ntasks && i < KF_PRIOR_TASKS; i++) {
        const ktask *t = &sw->tasks[i];
        if (t->rec->state != KFLEET__TASK_STATE__SUCCEEDED || t->elapsed_s <= 0 ||
            t->rec->kernel_index >= p.nk || t->kind->builds)
            continue;
        if (p.n == p.cap) {
            p.cap = p.cap ? p.cap * 2 : 64;
            p.v = kf_xrealloc(p.v, p.cap * sizeof *p.v);
        }
        p.v[p.n++] = (pentry){sched_prior_key(p.hashes[t->rec->kernel_index], t->rec), t->elapsed_s,
                              i, t->rec->kernel_index};
    }
    p.read = 1;
    keep(*cache, &p);
}

static int has_hash(const char *const *hashes, size_t n, const char *hash)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(hashes[i], hash) == 0)
            return 1;
    return 0;
}

int sched_priors_walk(sched_priors **cache, kf_txn *txn, uint32_t before, const char *const *hashes,
                      size_t nhashes, sched_prior_cb cb, void *ctx)
{
    uint32_t looked = 0, matched = 0;
    uint64_t read = 0; /* task records the walk has read */
    int rc = KF_OK;
    for (uint32_t id = before; id-- > 1 && looked < KF_PRIOR_SWEEPS && matched < KF_PRIOR_MATCHES &&
                               read <= KF_PRIOR_TASKS && !rc;) {
        psweep tmp = {0};
        psweep *p = cache ? find(*cache, id) : NULL;
        if (!p) {
            Kfleet__Sweep *sw = NULL;
            rc = kf_store_get_sweep(txn, id, &sw);
            if (rc == KF_ENOTFOUND) {
                rc = KF_OK;
                continue;
            }
            if (rc)
                break;
            tmp.id = id;
            tmp.nk = sw->n_kernels;
            tmp.hashes = kf_xcalloc(tmp.nk ? tmp.nk : 1, sizeof *tmp.hashes);
            for (size_t k = 0; k < tmp.nk; k++)
                tmp.hashes[k] = kf_xstrdup(sw->kernels[k]->hash);
            int finished = sw->finished_ns != 0;
            kfleet__sweep__free_unpacked(sw, NULL);
            p = &tmp;
            if (finished && cache) {
                if (!*cache)
                    *cache = kf_xcalloc(1, sizeof **cache);
                p = keep(*cache, &tmp);
            }
        }
        looked++;
        uint8_t *match = kf_xcalloc(p->nk ? p->nk : 1, 1);
        int any = 0;
        for (size_t k = 0; k < p->nk; k++)
            any |= match[k] = (uint8_t)has_hash(hashes, nhashes, p->hashes[k]);
        if (any) {
            matched++;
            if (!p->read && p != &tmp) {
                /* Kept: its pairs count once read, and may push older
                 * sweeps out. */
                (*cache)->kept -= p->n;
                rc = read_sweep(txn, p);
                (*cache)->kept += p->n;
                trim(*cache, id);
                p = find(*cache, id);
            } else if (!p->read) {
                rc = read_sweep(txn, p);
            }
            for (size_t i = 0; i < p->n && !rc; i++) {
                const pentry *e = &p->v[i];
                if (read + e->pos + 1 > KF_PRIOR_TASKS)
                    break; /* past what the walk may read */
                if (match[e->kernel])
                    rc = cb(ctx, e->key, e->s);
            }
            read += p->ntasks;
        }
        free(match);
        psweep_free(&tmp);
    }
    return rc;
}
