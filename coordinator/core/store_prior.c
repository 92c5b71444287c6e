/* store_prior — what a kernel's tasks took in earlier sweeps, for the
 * scheduler's longest-first order (kf_store_foreach_prior, store.h): the
 * newest sweeps first, read through the store's own functions and bounded
 * by KF_STORE_PRIOR_SWEEPS, _MATCHES and _TASKS so that a large store
 * costs a submit no more than a few sweeps' reading. */
#include "core/store.h"

#include <string.h>

struct prior_ctx {
    kf_txn *t;
    const Kfleet__Sweep *sw;
    const char *const *hashes;
    size_t nhashes;
    kf_store_prior_cb cb;
    void *ctx;
    uint32_t read;
};

static int has_hash(const struct prior_ctx *x, const char *hash)
{
    for (size_t i = 0; i < x->nhashes; i++)
        if (strcmp(x->hashes[i], hash) == 0)
            return 1;
    return 0;
}

static int prior_task(void *c, const Kfleet__Task *task)
{
    struct prior_ctx *x = c;
    if (++x->read > KF_STORE_PRIOR_TASKS)
        return 1; /* enough read: stop the walk (not an error) */
    if (task->state != KFLEET__TASK_STATE__SUCCEEDED || task->kernel_index >= x->sw->n_kernels ||
        !has_hash(x, x->sw->kernels[task->kernel_index]->hash))
        return 0;
    Kfleet__Result *r = NULL;
    int rc = kf_store_get_result(x->t, task->task_id, &r);
    if (rc == KF_ENOTFOUND)
        return 0;
    if (rc)
        return rc;
    if (r->state == KFLEET__TASK_STATE__SUCCEEDED && r->elapsed_s > 0)
        rc = x->cb(x->ctx, x->sw->kernels[task->kernel_index]->hash, task, r->elapsed_s);
    kfleet__result__free_unpacked(r, NULL);
    return rc;
}

int kf_store_foreach_prior(kf_txn *t, uint32_t before, const char *const *hashes, size_t nhashes,
                           kf_store_prior_cb cb, void *ctx)
{
    struct prior_ctx x = {t, NULL, hashes, nhashes, cb, ctx, 0};
    uint32_t looked = 0, matched = 0;
    for (uint32_t id = before; id-- > 1 && looked < KF_STORE_PRIOR_SWEEPS &&
                               matched < KF_STORE_PRIOR_MATCHES &&
                               x.read <= KF_STORE_PRIOR_TASKS;) {
        Kfleet__Sweep *sw = NULL;
        int rc = kf_store_get_sweep(t, id, &sw);
        if (rc == KF_ENOTFOUND)
            continue;
        if (rc)
            return rc;
        looked++;
        int any = 0;
        for (size_t k = 0; k < sw->n_kernels && !any; k++)
            any = has_hash(&x, sw->kernels[k]->hash);
        if (any) {
            matched++;
            x.sw = sw;
            rc = kf_store_foreach_task(t, id, prior_task, &x);
        }
        kfleet__sweep__free_unpacked(sw, NULL);
        if (rc && !(rc == 1 && x.read > KF_STORE_PRIOR_TASKS))
            return rc;
    }
    return KF_OK;
}
