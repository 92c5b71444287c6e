/* report_problem — the reference's provenance in a problem sweep; see
 * report_problem.h.
 *
 * The problem is the sweep's KernelRef marked `problem` (the last one, with
 * no tasks of its own); its pool is looked up under its hash, and the
 * stored references are counted by walking the refs table under that hash
 * (ordered by configuration key, then seed, so configurations are counted
 * where the key changes). */
#include "report/report_problem.h"
#include "core/problem.h"

#include <stdio.h>
#include <string.h>

typedef struct ref_count {
    rproblem *p;
    uint8_t last[KF_STORE_CONFIG_KEY];
    int have_last;
} ref_count;

static int count_ref(void *ctx, const Kfleet__Reference *ref)
{
    ref_count *c = ctx;
    rproblem *p = c->p;
    p->nrefs++;
    int same = c->have_last && ref->config_key.len == KF_STORE_CONFIG_KEY &&
               memcmp(c->last, ref->config_key.data, KF_STORE_CONFIG_KEY) == 0;
    if (!same) {
        p->nconfigs++;
        if (ref->config_key.len == KF_STORE_CONFIG_KEY) {
            memcpy(c->last, ref->config_key.data, KF_STORE_CONFIG_KEY);
            c->have_last = 1;
        }
    }
    if (!p->ref_gen_lo || ref->generation < p->ref_gen_lo)
        p->ref_gen_lo = ref->generation;
    if (ref->generation > p->ref_gen_hi)
        p->ref_gen_hi = ref->generation;
    return 0;
}

int kf_rep_is_problem_row(const rep *r, const rrow *w)
{
    return r->problem.k && w->kernel == r->problem.kernel;
}

int kf_rep_problem_collect(rep *r, kf_err *err)
{
    rproblem *p = &r->problem;
    memset(p, 0, sizeof *p);
    for (size_t i = 0; i < r->sw->n_kernels; i++)
        if (r->sw->kernels[i]->problem) {
            p->k = r->sw->kernels[i];
            p->kernel = (uint32_t)i;
        }
    if (!p->k)
        return KF_OK;
    p->seed_pool = r->sw->seed_pool;
    p->seed_renew_s = r->sw->seed_renew_s;
    const char *hash = kf_rep_nz(p->k->hash);
    Kfleet__SeedPool *pool = NULL;
    int rc = *hash ? kf_store_get_seedpool(r->t, hash, &pool) : KF_ENOTFOUND;
    if (rc == KF_OK) {
        /* The generation and its age; the seeds go with the message. */
        p->generation = pool->generation;
        p->drawn_ns = pool->drawn_ns;
        kfleet__seed_pool__free_unpacked(pool, NULL);
    } else if (rc != KF_ENOTFOUND) {
        return kf_err_set(err, rc, "sweep %u: cannot read the seed pool of problem %s: %s",
                          r->sw->sweep_id, kf_rep_nz(p->k->name), kf_strerror(rc));
    }
    ref_count c = {.p = p};
    rc = *hash ? kf_store_foreach_reference(r->t, hash, count_ref, &c) : KF_OK;
    if (rc != KF_OK)
        return kf_err_set(err, rc, "sweep %u: cannot read the references of problem %s: %s",
                          r->sw->sweep_id, kf_rep_nz(p->k->name), kf_strerror(rc));
    /* The problem's own validate or profile, had one been stored, would
     * rank against its candidates: it is the judge, not one of them. */
    size_t kept = 0;
    for (size_t i = 0; i < r->nrows; i++)
        if (!kf_rep_is_problem_row(r, &r->rows[i]))
            r->rows[kept++] = r->rows[i];
    r->nrows = kept;
    return KF_OK;
}

void kf_rep_problem_refs(const rep *r, char *out, size_t len)
{
    const rproblem *p = &r->problem;
    int n = snprintf(out, len, "%zu reference%s stored for %zu configuration%s", p->nrefs,
                     p->nrefs == 1 ? "" : "s", p->nconfigs, p->nconfigs == 1 ? "" : "s");
    if (r->sw->tol_override && n > 0 && (size_t)n < len)
        snprintf(out + n, len - (size_t)n,
                 "; tolerances: the sweep's atol %g, rtol %g for the problem's", r->sw->tol_atol,
                 r->sw->tol_rtol);
}

void kf_rep_seed_policy(const rproblem *p, char *out, size_t len)
{
    char renew[48], gen[48];
    if (p->seed_renew_s > 0)
        snprintf(renew, sizeof renew, "renewed every %g s", p->seed_renew_s);
    else
        snprintf(renew, sizeof renew, "never renewed");
    if (p->generation)
        snprintf(gen, sizeof gen, "generation %u", p->generation);
    else
        snprintf(gen, sizeof gen, "no pool stored yet");
    snprintf(out, len, "pool of %u seed%s, %s, %s; %u more the profiles audit on", p->seed_pool,
             p->seed_pool == 1 ? "" : "s", renew, gen, (unsigned)KF_PROBLEM_AUDIT_SEEDS);
}
