/* reference — a reference task (docs/problems.md): the problem's reference
 * outputs for the seeds of its secret pool, computed in a runner that loads
 * only the problem, so no candidate's code is ever in the process that
 * computes them. For each seed of TaskSpec.seeds: setup(params, seed), the
 * output view (for the element count), reference() into doubles, teardown;
 * one Result.references entry each, in the seeds' order. A reference with a
 * non-finite element, or of all zeros (which an output of zeros would meet),
 * fails the task: a stored reference must be able to judge. The coordinator
 * stores the values once per (problem hash, configuration, seed). */
#include "runner/hctx.h"

#include "common/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One seed's reference into r (values malloc'd: the caller frees them).
 * 0, or -1 with the task failed. */
static int one_seed(hctx *h, const loaded *L, uint64_t seed, Kfleet__Reference *r)
{
    void *state = NULL;
    uint64_t t0 = kf_mono_ns();
    if (hctx_setup(h, L, seed, &state) != 0) {
        L->k->teardown(state);
        return -1;
    }
    hctx_phase_add(h, HCTX_PH_SETUP, t0);
    kf_view v = {0};
    if (L->k->output(state, &v) != 0 || !v.data || v.count == 0) {
        L->k->teardown(state);
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "problem %s has no output view",
                         h->spec->kernel);
    }
    double *ref = malloc(v.count * sizeof *ref);
    if (!ref) {
        L->k->teardown(state);
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "out of memory for a reference of %zu elements", v.count);
    }
    /* NaN where the reference writes nothing. */
    memset(ref, 0xFF, v.count * sizeof *ref);
    char kerr[HCTX_KERR_LEN] = "";
    t0 = kf_mono_ns();
    int rc = L->k->reference(state, ref, kerr, sizeof kerr);
    hctx_phase_add(h, HCTX_PH_REFERENCE, t0);
    L->k->teardown(state);
    if (rc != 0) {
        free(ref);
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "problem %s reference failed: %s",
                         h->spec->kernel, kerr);
    }
    size_t nonfinite = 0, nonzero = 0;
    for (size_t i = 0; i < v.count; i++) {
        nonfinite += !isfinite(ref[i]);
        nonzero += ref[i] != 0;
    }
    if (nonfinite || nonzero == 0) {
        free(ref);
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         nonfinite ? "problem %s: its reference for a seed has %zu non-finite or "
                                     "unwritten elements of %zu; it cannot judge a candidate"
                                   : "problem %s: its reference for a seed is all zeros (%zu "
                                     "nonzero of %zu), which an output of zeros would meet; "
                                     "make setup's inputs give a nonzero reference",
                         h->spec->kernel, nonfinite, v.count);
    }
    kfleet__reference__init(r);
    r->seed = seed;
    r->values.data = (uint8_t *)ref;
    r->values.len = v.count * sizeof *ref;
    r->count = v.count;
    return 0;
}

int hctx_reference(hctx *h, const loaded *L)
{
    const Kfleet__TaskSpec *spec = h->spec;
    if (spec->n_seeds == 0)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "internal: a reference task for %s without seeds", spec->kernel);
    Kfleet__Reference **refs = calloc(spec->n_seeds, sizeof *refs);
    if (!refs)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "out of memory");
    h->res->references = refs;
    for (size_t i = 0; i < spec->n_seeds; i++) {
        Kfleet__Reference *r = malloc(sizeof *r);
        if (!r)
            return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "out of memory");
        if (one_seed(h, L, spec->seeds[i], r) != 0) {
            free(r);
            return -1;
        }
        refs[h->res->n_references++] = r;
    }
    return 0;
}

void hctx_reference_free(Kfleet__Result *res)
{
    for (size_t i = 0; i < res->n_references; i++) {
        free(res->references[i]->values.data);
        free(res->references[i]);
    }
    free(res->references);
    res->references = NULL;
    res->n_references = 0;
}
