/* sched_baseline — the baseline on every node (issue 41): which agents a
 * `nodes: any` sweep's baseline must be measured on, so that every
 * candidate's row has a speedup.
 *
 * A speedup compares two medians measured on one node, and a node is an
 * agent: one machine, its GPUs (one model: the report names a row's device
 * by the agent's first GPU), driver and toolchain; `kfleet run` starts one
 * per GPU. With `nodes: any` each configuration runs once, wherever a slot
 * is free, so the baseline's row of a configuration was on one agent and
 * the candidates' on others: 196 of 392 passing rows of a 200-candidate
 * problem sweep had no speedup. The rule now: when a profile of a
 * configuration is placed on an agent where that configuration's baseline
 * has no profile (pinned there, or placed there: done, running or queued),
 * the agent gets one:
 *  - the submitted baseline profile of the configuration, when it is still
 *    pending and pinned nowhere, is pinned to that agent (its validation
 *    stays where it is, or runs on any agent, as `nodes: any` lets it);
 *  - else a new validate (when the sweep validates) and profile of the
 *    baseline, pinned to that agent, as `nodes: all` would have made them:
 *    the validate gates the profile, and both wait for its build there;
 *    on an agent that cannot run the baseline (an import its Python lacks,
 *    no GPU for a CUDA baseline) both are skipped at once, saying why, so
 *    that the rows there say why they have no speedup.
 * Nothing else changes: no task is made for an agent that runs no
 * candidate of the configuration, and `nodes: all` sweeps already measure
 * every configuration on every agent. The agents that ran a candidate's
 * profile of a configuration are remembered (`want`): an agent lost with a
 * baseline task pinned to it has that task cancelled (the sweep can end
 * without it, as a build pinned to a lost agent is), and gets it again when
 * it comes back.
 *
 * This file is the index and the decisions; the dispatcher makes, pins and
 * ends the tasks (sched_dispatch.c), so this file calls nothing of
 * sched.c's and sched.c frees it with the sweep. The index is built on
 * first use from the sweep's tasks (at the first profile placed, or an
 * agent registering) and catches up with the tasks added since at every
 * use, so a restarted coordinator rebuilds it from the store's tasks, pins
 * included, to the same state: the tasks it made are stored in the same
 * turn as the placement that asked for them, so none is lost or made
 * twice. A placement costs a hash of its parameters and a walk of its
 * configuration's baseline tasks (one per agent at most), never a walk of
 * the sweep. */
#include "daemon/sched_int.h"
#include "common/taskkind.h"
#include "common/xalloc.h"
#include "core/sweep.h"

#include <stdlib.h>
#include <string.h>

/* One configuration of one baseline kernel: every validate and profile
 * task of it in the sweep, and the agents that ran a profile of a
 * candidate of it. */
typedef struct bconf {
    uint32_t kernel;  /* the baseline kernel */
    uint32_t first;   /* its first task: its parameters are the configuration */
    int32_t validate; /* the submitted validate and profile (the first of each), -1: none */
    int32_t profile;
    uint32_t *tasks;
    uint32_t ntasks, captasks;
    int32_t *want; /* agent indices */
    uint32_t nwant, capwant;
} bconf;

struct sched_base {
    uint32_t indexed;  /* the sweep's tasks indexed so far */
    uint32_t *kernels; /* the baseline kernels */
    int32_t *axes;     /* per baseline kernel: a task of it, whose parameters name its axes */
    size_t nkernels;
    bconf *confs;
    size_t nconfs, capconfs;
    uint32_t *slots; /* open addressing: conf index + 1, 0 empty */
    size_t nslots;
};

void sched_baseline_free(sched_base **self)
{
    sched_base *b = *self;
    if (!b)
        return;
    for (size_t i = 0; i < b->nconfs; i++) {
        free(b->confs[i].tasks);
        free(b->confs[i].want);
    }
    free(b->confs);
    free(b->slots);
    free(b->kernels);
    free(b->axes);
    free(b);
    *self = NULL;
}

/* The position of kernel ki among the baselines, or -1. */
static int baseline_at(const sched_base *b, uint32_t ki)
{
    for (size_t i = 0; i < b->nkernels; i++)
        if (b->kernels[i] == ki)
            return (int)i;
    return -1;
}

/* The values of baseline bi's axes in t's parameters, in the order of its
 * axes task; 0 when t lacks one of them (it runs another configuration:
 * gemm_bf16 {m, n, k, impl} has gemm_cublas {m, n, k}'s, copy {bytes} has
 * none) or the baseline has no axes (the report gives no speedup then). */
static size_t values_of(const ksweep *sw, const sched_base *b, size_t bi, const Kfleet__Task *t,
                        int64_t *out, size_t max)
{
    if (b->axes[bi] < 0)
        return 0;
    const Kfleet__Task *ax = sw->tasks[b->axes[bi]].rec;
    if (ax->n_params == 0 || ax->n_params > max)
        return 0;
    for (size_t i = 0; i < ax->n_params; i++) {
        size_t j = 0;
        while (j < t->n_params && strcmp(t->params[j]->name, ax->params[i]->name) != 0)
            j++;
        if (j == t->n_params)
            return 0;
        out[i] = t->params[j]->value;
    }
    return ax->n_params;
}

static uint64_t key_of(uint32_t kernel, const int64_t *v, size_t n)
{
    uint64_t h = 1469598103934665603ULL ^ kernel;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < sizeof v[i]; k++)
            h = (h ^ (uint8_t)((uint64_t)v[i] >> (8 * k))) * 1099511628211ULL;
    return h;
}

/* The configuration of baseline bi that task t runs, or -1; with create,
 * made when missing (t then is its first task). */
static int32_t find(const ksweep *sw, sched_base *b, size_t bi, uint32_t ti, int create)
{
    int64_t v[KF_SWEEP_MAX_AXES], w[KF_SWEEP_MAX_AXES];
    size_t n = values_of(sw, b, bi, sw->tasks[ti].rec, v, KF_SWEEP_MAX_AXES);
    if (!n)
        return -1;
    if (create && 2 * (b->nconfs + 1) > b->nslots) { /* grow at half full, rehash */
        size_t ns = b->nslots ? 2 * b->nslots : 64;
        uint32_t *slots = kf_xcalloc(ns, sizeof *slots);
        for (size_t i = 0; i < b->nconfs; i++) {
            const bconf *f = &b->confs[i];
            size_t fbi = (size_t)baseline_at(b, f->kernel);
            size_t fn = values_of(sw, b, fbi, sw->tasks[f->first].rec, w, KF_SWEEP_MAX_AXES);
            size_t s = key_of(f->kernel, w, fn) & (ns - 1);
            while (slots[s])
                s = (s + 1) & (ns - 1);
            slots[s] = (uint32_t)i + 1;
        }
        free(b->slots);
        b->slots = slots;
        b->nslots = ns;
    }
    if (!b->nslots)
        return -1;
    size_t s = key_of(b->kernels[bi], v, n) & (b->nslots - 1);
    for (; b->slots[s]; s = (s + 1) & (b->nslots - 1)) {
        const bconf *f = &b->confs[b->slots[s] - 1];
        if (f->kernel == b->kernels[bi] &&
            values_of(sw, b, bi, sw->tasks[f->first].rec, w, KF_SWEEP_MAX_AXES) == n &&
            memcmp(v, w, n * sizeof *v) == 0)
            return (int32_t)b->slots[s] - 1;
    }
    if (!create)
        return -1;
    if (b->nconfs == b->capconfs) {
        b->capconfs = b->capconfs ? 2 * b->capconfs : 16;
        b->confs = kf_xrealloc(b->confs, b->capconfs * sizeof *b->confs);
    }
    bconf *f = &b->confs[b->nconfs];
    memset(f, 0, sizeof *f);
    f->kernel = b->kernels[bi];
    f->first = ti;
    f->validate = f->profile = -1;
    b->slots[s] = (uint32_t)++b->nconfs;
    return (int32_t)b->nconfs - 1;
}

static void want(bconf *f, int ai)
{
    for (uint32_t i = 0; i < f->nwant; i++)
        if (f->want[i] == ai)
            return;
    if (f->nwant == f->capwant) {
        f->capwant = f->capwant ? 2 * f->capwant : 4;
        f->want = kf_xrealloc(f->want, f->capwant * sizeof *f->want);
    }
    f->want[f->nwant++] = ai;
}

/* The index of the agent of that id, or -1. */
static int agent_named(const kf_coord *c, const char *id)
{
    for (size_t i = 0; id && *id && i < c->nagents; i++)
        if (strcmp(c->agents[i]->id, id) == 0)
            return (int)i;
    return -1;
}

/* A baseline's validate or profile task ti enters its configuration. */
static void index_baseline(const ksweep *sw, sched_base *b, uint32_t ti, size_t bi)
{
    const ktask *t = &sw->tasks[ti];
    if (b->axes[bi] < 0)
        b->axes[bi] = (int32_t)ti;
    int32_t fi = find(sw, b, bi, ti, 1);
    if (fi < 0)
        return;
    bconf *f = &b->confs[fi];
    if (f->ntasks == f->captasks) {
        f->captasks = f->captasks ? 2 * f->captasks : 2;
        f->tasks = kf_xrealloc(f->tasks, f->captasks * sizeof *f->tasks);
    }
    f->tasks[f->ntasks++] = ti;
    int32_t *first = t->kind->report == KF_REPORT_TIMING ? &f->profile : &f->validate;
    if (*first < 0)
        *first = (int32_t)ti;
}

/* The index of sw, caught up with its tasks; NULL for a sweep whose
 * baseline needs no placing (none, or `nodes: all`). */
static sched_base *index_of(const kf_coord *c, ksweep *sw)
{
    if (sw->rec->nodes_all || !sw->rec->baseline || !*sw->rec->baseline)
        return NULL;
    sched_base *b = sw->base;
    int fresh = !b;
    if (fresh) {
        b = sw->base = kf_xcalloc(1, sizeof *b);
        b->kernels = kf_xcalloc(sw->rec->n_kernels ? sw->rec->n_kernels : 1, sizeof *b->kernels);
        b->axes = kf_xcalloc(sw->rec->n_kernels ? sw->rec->n_kernels : 1, sizeof *b->axes);
        for (size_t k = 0; k < sw->rec->n_kernels; k++)
            if (kf_sweep_is_baseline(sw->rec->baseline, sw->rec->kernels[k]->name)) {
                b->axes[b->nkernels] = -1;
                b->kernels[b->nkernels++] = (uint32_t)k;
            }
    }
    for (; b->indexed < sw->ntasks; b->indexed++) {
        const Kfleet__Task *t = sw->tasks[b->indexed].rec;
        const kf_task_kind *tk = sw->tasks[b->indexed].kind;
        int bi = baseline_at(b, t->kernel_index);
        if (bi >= 0 && tk->per_config &&
            (tk->report == KF_REPORT_TIMING || tk->report == KF_REPORT_VALIDATION))
            index_baseline(sw, b, b->indexed, (size_t)bi);
    }
    /* A restarted coordinator: the candidates' profiles placed before
     * (each since its attempt's agent) want their baseline there. */
    for (uint32_t i = 0; fresh && i < sw->ntasks; i++) {
        const Kfleet__Task *t = sw->tasks[i].rec;
        int ai = agent_named(c, t->agent_id);
        if (ai < 0 || !t->attempts || baseline_at(b, t->kernel_index) >= 0 ||
            sw->tasks[i].kind->report != KF_REPORT_TIMING)
            continue;
        for (size_t bi = 0; bi < b->nkernels; bi++) {
            int32_t fi = find(sw, b, bi, i, 0);
            if (fi >= 0)
                want(&b->confs[fi], ai);
        }
    }
    return b;
}

/* Whether configuration f has a baseline profile on agent ai: pinned
 * there, or placed there (assigned, running or ended) while pinned
 * nowhere. A cancelled one does not count: its agent was lost. */
static int covered(const kf_coord *c, const ksweep *sw, const bconf *f, int ai)
{
    for (uint32_t i = 0; i < f->ntasks; i++) {
        const ktask *t = &sw->tasks[f->tasks[i]];
        if (t->kind->report != KF_REPORT_TIMING || t->rec->state == KFLEET__TASK_STATE__CANCELLED)
            continue;
        if (t->pin == ai)
            return 1;
        if (t->pin < 0 && t->rec->attempts > 0 && t->rec->state != KFLEET__TASK_STATE__PENDING &&
            strcmp(t->rec->agent_id ? t->rec->agent_id : "", c->agents[ai]->id) == 0)
            return 1;
    }
    return 0;
}

/* What agent ai lacks of configuration f: 1 with *need filled, else 0. */
static int need_of(const kf_coord *c, const ksweep *sw, const bconf *f, int ai, sched_bneed *need)
{
    if (f->profile < 0 || covered(c, sw, f, ai))
        return 0;
    const ktask *p = &sw->tasks[f->profile];
    need->unplaced = p->pin < 0 && p->rec->state == KFLEET__TASK_STATE__PENDING ? f->profile : -1;
    need->validate = f->validate;
    need->profile = (uint32_t)f->profile;
    return 1;
}

size_t sched_baseline_placed(kf_coord *c, ksweep *sw, uint32_t idx, int ai, sched_bneed *out,
                             size_t max)
{
    const Kfleet__Task *t = idx < sw->ntasks ? sw->tasks[idx].rec : NULL;
    if (!t || ai < 0 || sw->tasks[idx].kind->report != KF_REPORT_TIMING)
        return 0;
    sched_base *b = index_of(c, sw);
    if (!b || baseline_at(b, t->kernel_index) >= 0)
        return 0; /* a baseline's own profile is its own baseline */
    size_t n = 0;
    for (size_t bi = 0; bi < b->nkernels && n < max; bi++) {
        int32_t fi = find(sw, b, bi, idx, 0);
        if (fi < 0)
            continue;
        want(&b->confs[fi], ai);
        n += (size_t)need_of(c, sw, &b->confs[fi], ai, &out[n]);
    }
    return n;
}

size_t sched_baseline_wanted(kf_coord *c, ksweep *sw, int ai, sched_bneed **out)
{
    *out = NULL;
    sched_base *b = index_of(c, sw);
    size_t n = 0, cap = 0;
    for (size_t i = 0; b && i < b->nconfs; i++) {
        const bconf *f = &b->confs[i];
        for (uint32_t k = 0; k < f->nwant; k++) {
            if (f->want[k] != ai)
                continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 8;
                *out = kf_xrealloc(*out, cap * sizeof **out);
            }
            n += (size_t)need_of(c, sw, f, ai, &(*out)[n]);
        }
    }
    return n;
}

size_t sched_baseline_pinned(kf_coord *c, ksweep *sw, int ai, uint32_t **out)
{
    *out = NULL;
    sched_base *b = index_of(c, sw);
    size_t n = 0, cap = 0;
    /* Profiles first: ended by the dispatcher with its reason, before the
     * validation that gates them would skip them with another. */
    for (int profiles = 1; profiles >= 0; profiles--)
        for (size_t i = 0; b && i < b->nconfs; i++) {
            const bconf *f = &b->confs[i];
            for (uint32_t k = 0; k < f->ntasks; k++) {
                const ktask *t = &sw->tasks[f->tasks[k]];
                if (t->pin != ai || kf_state_terminal(t->rec->state) ||
                    (t->kind->report == KF_REPORT_TIMING) != profiles)
                    continue;
                if (n == cap) {
                    cap = cap ? 2 * cap : 8;
                    *out = kf_xrealloc(*out, cap * sizeof **out);
                }
                (*out)[n++] = f->tasks[k];
            }
        }
    return n;
}
