/* control_problem — a problem sweep at submit and at dispatch
 * (docs/problems.md): whether the request is shaped as
 * kf_client_build_submit makes one, which of the problem's configurations
 * need a reference task, from its secret seed pool and the references
 * already stored, and the seeds a reference task is sent. Apart from
 * control.c, which makes the tasks, to keep that file to the control
 * requests. */
#include "daemon/coord_int.h"
#include "common/log.h"
#include "common/taskkind.h"
#include "common/xalloc.h"
#include "core/problem.h"
#include "core/sweep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A problem sweep's configurations that need a reference task
 * (docs/problems.md): the problem's seed pool as it stands now (drawn or
 * renewed under this transaction), and each configuration of g whose
 * references the store lacks for some seed of the pool, into *cis (the
 * caller frees it), in configuration order. A configuration whose
 * references are all stored needs no task: that is the reuse across
 * candidates and sweeps. The seeds are not put in the task: dispatch sends
 * those still missing then. */
int control_plan_references(kf_txn *txn, Kfleet__Sweep *in, const Kfleet__TaskGroup *g, uint64_t n,
                            uint64_t now_ns, uint32_t **cis, size_t *ncis, char *why, size_t whylen)
{
    const Kfleet__KernelRef *pk = in->kernels[in->n_kernels - 1];
    Kfleet__SeedPool *pool = NULL;
    int renewed = 0;
    int rc = kf_problem_seed_pool(txn, pk->hash, kf_problem_pool_size(in->seed_pool),
                                  in->seed_renew_s, now_ns, &pool, &renewed);
    if (rc != KF_OK) {
        snprintf(why, whylen, "submit: the store refused problem %s's seed pool (%d)", pk->name,
                 rc);
        return rc;
    }
    in->seed_generation = pool->generation;
    if (renewed)
        kf_info("problem.seeds", "problem=%s hash=%.16s generation=%u seeds=%zu", pk->name,
                pk->hash, pool->generation, pool->n_seeds);
    Kfleet__Param pv[KF_SWEEP_MAX_AXES], *pp[KF_SWEEP_MAX_AXES];
    uint64_t *missing = kf_xcalloc(pool->n_seeds ? pool->n_seeds : 1, sizeof *missing);
    *cis = kf_xcalloc(n ? n : 1, sizeof **cis);
    *ncis = 0;
    for (size_t a = 0; a < g->n_axes; a++) {
        kfleet__param__init(&pv[a]);
        pv[a].name = g->axes[a]->name;
        pp[a] = &pv[a];
    }
    for (uint64_t ci = 0; ci < n && rc == KF_OK; ci++) {
        uint64_t rest = ci;
        for (size_t a = g->n_axes; a-- > 0;) {
            pv[a].value = g->axes[a]->values[rest % g->axes[a]->n_values];
            rest /= g->axes[a]->n_values;
        }
        uint8_t key[KF_STORE_CONFIG_KEY];
        kf_problem_config_key(pp, g->n_axes, key);
        size_t nmissing = 0;
        rc = kf_problem_missing_refs(txn, pool, key, missing, &nmissing);
        if (rc == KF_OK && nmissing)
            (*cis)[(*ncis)++] = (uint32_t)ci;
    }
    free(missing);
    kfleet__seed_pool__free_unpacked(pool, NULL);
    if (rc != KF_OK) {
        free(*cis);
        *cis = NULL;
        snprintf(why, whylen, "submit: the store could not list problem %s's references (%d)",
                 pk->name, rc);
    }
    return rc;
}

/* A problem sweep as kf_client_build_submit makes it: the problem last
 * and only there, the seed policy in range, no task of the problem's own,
 * and every candidate's group over the same configurations (the
 * problem's). NULL when well formed, else why not. */
const char *control_problem_wrong(const Kfleet__SubmitRequest *req)
{
    const Kfleet__Sweep *in = req->sweep;
    size_t last = in->n_kernels - 1;
    for (size_t i = 0; i < last; i++)
        if (in->kernels[i]->problem || !in->kernels[i]->candidate)
            return "submit: a problem sweep's kernels are candidates, the problem last";
    if (!in->kernels[last]->problem || !in->kernels[last]->hash || !*in->kernels[last]->hash)
        return "submit: a problem sweep's problem is its last kernel, with its hash";
    if (in->seed_pool < 1 || in->seed_pool > KF_SWEEP_MAX_SEED_POOL || !(in->seed_renew_s > 0))
        return "submit: a problem sweep's seed pool is 1 to 64 seeds renewed after some time";
    if (req->n_groups == 0)
        return "submit: a problem sweep's candidates have no validate or profile";
    const Kfleet__TaskGroup *g0 = req->groups[0];
    for (size_t i = 0; i < req->n_groups; i++) {
        const Kfleet__TaskGroup *g = req->groups[i];
        int same = g->kernel_index < last && g->n_axes == g0->n_axes;
        for (size_t a = 0; same && a < g->n_axes; a++)
            same = strcmp(g->axes[a]->name, g0->axes[a]->name) == 0 &&
                   g->axes[a]->n_values == g0->axes[a]->n_values &&
                   memcmp(g->axes[a]->values, g0->axes[a]->values,
                          g->axes[a]->n_values * sizeof *g->axes[a]->values) == 0;
        if (!same)
            return "submit: every candidate of a problem runs the problem's configurations";
    }
    for (size_t i = 0; i < req->n_tasks; i++)
        if (req->tasks[i]->kernel_index >= last)
            return "submit: the problem has no tasks of its own (the coordinator makes them)";
    return NULL;
}

int control_reference_seeds(kf_txn *txn, const Kfleet__Sweep *sw, const Kfleet__Task *t,
                            uint64_t now_ns, uint64_t **seeds, size_t *n)
{
    *seeds = NULL;
    *n = 0;
    if (t->kernel_index >= sw->n_kernels || !sw->kernels[t->kernel_index]->problem)
        return KF_EINVAL;
    Kfleet__SeedPool *pool = NULL;
    int renewed = 0;
    int rc = kf_problem_seed_pool(txn, sw->kernels[t->kernel_index]->hash,
                                  kf_problem_pool_size(sw->seed_pool), sw->seed_renew_s, now_ns,
                                  &pool, &renewed);
    if (rc != KF_OK)
        return rc;
    uint8_t key[KF_STORE_CONFIG_KEY];
    kf_problem_config_key(t->params, t->n_params, key);
    *seeds = kf_xcalloc(pool->n_seeds ? pool->n_seeds : 1, sizeof **seeds);
    rc = kf_problem_missing_refs(txn, pool, key, *seeds, n);
    if (rc == KF_OK && *n == 0) {
        /* Stored meanwhile (another sweep's task): computed again, and the
         * store keeps the first computation. */
        memcpy(*seeds, pool->seeds, pool->n_seeds * sizeof **seeds);
        *n = pool->n_seeds;
    }
    kfleet__seed_pool__free_unpacked(pool, NULL);
    if (rc != KF_OK) {
        free(*seeds);
        *seeds = NULL;
        *n = 0;
    }
    return rc;
}

int control_candidate_refs(kf_txn *txn, const Kfleet__Sweep *sw, const Kfleet__Task *t,
                           uint64_t now_ns, uint64_t **seeds, Kfleet__Reference ***refs, size_t *n)
{
    *seeds = NULL;
    *refs = NULL;
    *n = 0;
    const Kfleet__KernelRef *pk = sw->kernels[sw->n_kernels - 1];
    if (!pk->problem)
        return KF_EINVAL;
    Kfleet__SeedPool *pool = NULL;
    int renewed = 0;
    int rc = kf_problem_seed_pool(txn, pk->hash, kf_problem_pool_size(sw->seed_pool),
                                  sw->seed_renew_s, now_ns, &pool, &renewed);
    if (rc != KF_OK)
        return rc;
    uint8_t key[KF_STORE_CONFIG_KEY];
    kf_problem_config_key(t->params, t->n_params, key);
    size_t cap = pool->n_seeds ? pool->n_seeds : 1;
    *seeds = kf_xcalloc(cap, sizeof **seeds);
    *refs = kf_xcalloc(cap, sizeof **refs);
    /* A validation gets the pool's first sw->seed_pool seeds, a profile
     * the rest, held out for it (core/problem.h); another kind all. */
    size_t from = 0, to = pool->n_seeds;
    int report = kf_task_kind_at(t->kind)->report;
    size_t split = sw->seed_pool < pool->n_seeds ? sw->seed_pool : pool->n_seeds;
    if (report == KF_REPORT_VALIDATION)
        to = split;
    else if (report == KF_REPORT_TIMING)
        from = split;
    for (size_t i = from; i < to && rc == KF_OK; i++) {
        Kfleet__Reference *r = NULL;
        rc = kf_store_get_reference(txn, pk->hash, key, pool->seeds[i], &r);
        if (rc == KF_ENOTFOUND) { /* not computed yet, or renewed meanwhile */
            rc = KF_OK;
            continue;
        }
        if (rc == KF_OK) {
            (*seeds)[*n] = pool->seeds[i];
            (*refs)[(*n)++] = r;
        }
    }
    kfleet__seed_pool__free_unpacked(pool, NULL);
    if (rc != KF_OK) {
        control_candidate_refs_free(*seeds, *refs, *n);
        *seeds = NULL;
        *refs = NULL;
        *n = 0;
    }
    return rc;
}

void control_candidate_refs_free(uint64_t *seeds, Kfleet__Reference **refs, size_t n)
{
    for (size_t i = 0; refs && i < n; i++)
        kfleet__reference__free_unpacked(refs[i], NULL);
    free(refs);
    free(seeds);
}
