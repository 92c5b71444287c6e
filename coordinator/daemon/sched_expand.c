/* sched_expand — a submitted sweep made into its tasks, the scheduler's
 * side of `kfleet submit` (control.c checks the request and answers it):
 * how many tasks a request makes, the agents of `nodes: all`, and the
 * tasks themselves, put in the store and kept by the scheduler. A client
 * sends a task group as axes and kinds, not as tasks, so a request stays
 * small at a million configurations; the expansion happens here, in the
 * order sched_add_task's gating expects: a problem's reference tasks
 * first, then per configuration each kind of the group in the task-kind
 * table's order (a kind's gated_by comes before it), agent by agent. */
#include "daemon/coord_int.h"
#include "daemon/sched_int.h"
#include "common/taskkind.h"
#include "common/util.h"
#include "common/xalloc.h"
#include "core/sweep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The configurations of a task group (the product of its axes' lengths),
 * or 0 when the group is not one a client makes (why says what). Bounded
 * as the sweep parser bounds a sweep: a request cannot ask the
 * coordinator for more than KF_SWEEP_MAX_CONFIGS configurations. */
uint64_t sched_group_configs(const Kfleet__TaskGroup *g, size_t nkernels, char *why, size_t len)
{
    if (g->kernel_index >= nkernels) {
        snprintf(why, len, "a task group names kernel %u of %zu", g->kernel_index, nkernels);
        return 0;
    }
    int seen = 0;
    for (size_t i = 0; i < g->n_kinds; i++) {
        /* A group holds the per-configuration kinds a sweep asks for,
         * each once, in the table's order (their sweep bits ascend). */
        const kf_task_kind *tk = kf_task_kind_at(g->kinds[i]);
        int bit = tk->per_config ? (int)tk->sweep_bit : 0;
        if (!bit || seen >= bit) {
            snprintf(why, len, "a task group's kinds are not validate and/or profile, in order");
            return 0;
        }
        seen |= bit;
    }
    if (!seen || g->n_axes > KF_SWEEP_MAX_AXES) {
        snprintf(why, len, "a task group has %zu kinds and %zu axes (1-2, at most %d)", g->n_kinds,
                 g->n_axes, KF_SWEEP_MAX_AXES);
        return 0;
    }
    uint64_t n = 1;
    for (size_t a = 0; a < g->n_axes; a++) {
        const Kfleet__Axis *ax = g->axes[a];
        if (!ax->name || !*ax->name || ax->n_values == 0) {
            snprintf(why, len, "a task group has an unnamed or empty axis");
            return 0;
        }
        for (size_t b = 0; b < a; b++)
            if (strcmp(g->axes[b]->name, ax->name) == 0) {
                snprintf(why, len, "a task group names axis '%.64s' twice", ax->name);
                return 0;
            }
        if (ax->n_values > KF_SWEEP_MAX_CONFIGS || (n *= ax->n_values) > KF_SWEEP_MAX_CONFIGS) {
            snprintf(why, len, "a task group has more than %d configurations",
                     KF_SWEEP_MAX_CONFIGS);
            return 0;
        }
    }
    return n;
}

/* A new pending task of sweep `id`, kept by the scheduler and put in txn. */
static void add_task(kf_coord *c, ksweep *sw, kf_txn *txn, const Kfleet__Sweep *rec, uint32_t *idx,
                     Kfleet__TaskKind kind, uint32_t kernel, uint32_t config,
                     const char *const *names, const int64_t *values, size_t np, const char *pin)
{
    Kfleet__Task *t = kf_xmalloc(sizeof *t);
    kfleet__task__init(t);
    t->task_id = kf_task_id(rec->sweep_id, (*idx)++);
    t->sweep_id = rec->sweep_id;
    t->kind = kind;
    t->kernel_index = kernel;
    t->config_index = config;
    t->n_params = np;
    t->params = kf_xcalloc(np ? np : 1, sizeof *t->params);
    for (size_t p = 0; p < np; p++) {
        Kfleet__Param *pp = kf_xmalloc(sizeof *pp);
        kfleet__param__init(pp);
        pp->name = kf_xstrdup(names[p]);
        pp->value = values[p];
        t->params[p] = pp;
    }
    t->pin_agent = kf_xstrdup(pin);
    t->agent_id = kf_xstrdup("");
    t->error = kf_xstrdup("");
    t->state = KFLEET__TASK_STATE__PENDING;
    t->created_ns = t->updated_ns = rec->created_ns;
    sched_add_task(c, sw, t);
    kf_store_put_task(txn, t);
}

uint64_t sched_expand_count(const Kfleet__SubmitRequest *req, char *why, size_t len)
{
    size_t nkernels = req->sweep ? req->sweep->n_kernels : 0;
    uint64_t ntasks = req->n_tasks, nconfigs = 0;
    for (size_t i = 0; i < req->n_groups; i++) {
        char gwhy[160];
        uint64_t n = sched_group_configs(req->groups[i], nkernels, gwhy, sizeof gwhy);
        if (n == 0 || (nconfigs += n) > KF_SWEEP_MAX_CONFIGS) {
            snprintf(why, len, "submit: %s",
                     n ? "the sweep has more than 1000000 configurations" : gwhy);
            return 0;
        }
        ntasks += n * req->groups[i]->n_kinds;
    }
    return ntasks;
}

kagent **sched_all_targets(kf_coord *c, size_t *n)
{
    kagent **targets = kf_xcalloc(c->nagents ? c->nagents : 1, sizeof *targets);
    *n = 0;
    for (size_t i = 0; i < c->nagents; i++)
        if (c->agents[i]->registered && !c->agents[i]->lost)
            targets[(*n)++] = c->agents[i];
    return targets;
}

/* A problem's reference tasks come first, in configuration order:
 * sched.c's ref_gate_of finds a candidate's there. */
static void expand_references(kf_coord *c, ksweep *sw, kf_txn *txn, const Kfleet__TaskGroup *g,
                              uint32_t problem, const uint32_t *ref_cis, size_t nrefs,
                              uint32_t *idx)
{
    const kf_task_kind *ref = NULL;
    for (size_t k = 0; kf_task_kinds[k].name && !ref; k++)
        if (kf_task_kinds[k].references)
            ref = &kf_task_kinds[k];
    for (size_t r = 0; r < nrefs && ref; r++) {
        const char *names[KF_SWEEP_MAX_AXES];
        int64_t values[KF_SWEEP_MAX_AXES];
        uint64_t rest = ref_cis[r];
        for (size_t a = g->n_axes; a-- > 0;) {
            names[a] = g->axes[a]->name;
            values[a] = g->axes[a]->values[rest % g->axes[a]->n_values];
            rest /= g->axes[a]->n_values;
        }
        add_task(c, sw, txn, sw->rec, idx, ref->kind, problem, ref_cis[r], names, values, g->n_axes,
                 "");
    }
}

/* The request's single tasks (a build-only sweep's), each on every target. */
static void expand_tasks(kf_coord *c, ksweep *sw, kf_txn *txn, const Kfleet__SubmitRequest *req,
                         kagent *const *targets, size_t reps, uint32_t *idx)
{
    for (size_t i = 0; i < req->n_tasks; i++) {
        const Kfleet__Task *src = req->tasks[i];
        const char *names[KF_SWEEP_MAX_AXES];
        int64_t values[KF_SWEEP_MAX_AXES];
        size_t np = src->n_params < KF_SWEEP_MAX_AXES ? src->n_params : KF_SWEEP_MAX_AXES;
        for (size_t p = 0; p < np; p++) {
            names[p] = src->params[p]->name;
            values[p] = src->params[p]->value;
        }
        for (size_t r = 0; r < reps; r++)
            add_task(c, sw, txn, sw->rec, idx, src->kind, src->kernel_index, src->config_index,
                     names, values, np, targets ? targets[r]->id : "");
    }
}

/* A task group's configurations, each with the group's kinds, each on
 * every target. */
static void expand_groups(kf_coord *c, ksweep *sw, kf_txn *txn, const Kfleet__SubmitRequest *req,
                          kagent *const *targets, size_t reps, uint32_t *idx)
{
    size_t nkernels = sw->rec->n_kernels;
    for (size_t i = 0; i < req->n_groups; i++) {
        const Kfleet__TaskGroup *g = req->groups[i];
        const char *names[KF_SWEEP_MAX_AXES];
        int64_t values[KF_SWEEP_MAX_AXES];
        uint64_t n = sched_group_configs(g, nkernels, NULL, 0);
        for (size_t a = 0; a < g->n_axes; a++)
            names[a] = g->axes[a]->name;
        for (uint64_t ci = 0; ci < n; ci++) {
            /* Configuration ci in mixed radix, the last axis fastest: the
             * sweep parser's order (kf_sweep_kernel_config). */
            uint64_t rest = ci;
            for (size_t a = g->n_axes; a-- > 0;) {
                values[a] = g->axes[a]->values[rest % g->axes[a]->n_values];
                rest /= g->axes[a]->n_values;
            }
            for (size_t k = 0; k < g->n_kinds; k++)
                for (size_t r = 0; r < reps; r++)
                    add_task(c, sw, txn, sw->rec, idx, g->kinds[k], g->kernel_index, (uint32_t)ci,
                             names, values, g->n_axes, targets ? targets[r]->id : "");
        }
    }
}

void sched_expand(kf_coord *c, ksweep *sw, kf_txn *txn, const Kfleet__SubmitRequest *req,
                  kagent *const *targets, size_t ntargets, const uint32_t *ref_cis, size_t nrefs)
{
    uint32_t idx = 0;
    size_t reps = targets ? ntargets : 1;
    if (nrefs)
        expand_references(c, sw, txn, req->groups[0], (uint32_t)sw->rec->n_kernels - 1, ref_cis,
                          nrefs, &idx);
    expand_tasks(c, sw, txn, req, targets, reps, &idx);
    expand_groups(c, sw, txn, req, targets, reps, &idx);
    /* Longest expected first (sched_order.c); earlier sweeps' durations
     * that cannot be read only leave the order without them. */
    sched_order_plan(sw, txn, &c->priors);
}

void sched_fail_refused(kf_coord *c, ksweep *sw)
{
    /* Backwards, so a profile fails with the refusal before its
     * validation would skip it as "did not pass". */
    for (uint32_t i = sw->ntasks; i-- > 0;) {
        ktask *t = &sw->tasks[i];
        const Kfleet__KernelRef *k = t->rec->kernel_index < sw->rec->n_kernels
                                         ? sw->rec->kernels[t->rec->kernel_index]
                                         : NULL;
        if (!k || !k->refused || !*k->refused || kf_state_terminal(t->rec->state))
            continue;
        char why[1200];
        snprintf(why, sizeof why, "refused at submit: %s", k->refused);
        sched_finish(c, sw, t, KFLEET__TASK_STATE__FAILED, why);
    }
}
