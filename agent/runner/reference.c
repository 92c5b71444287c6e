/* reference — a reference task (docs/problems.md): the problem's reference
 * outputs for the seeds of its secret pool, computed in a runner that loads
 * only the problem, so no candidate's code is ever in the process that
 * computes them. For each seed of TaskSpec.seeds: setup(params, seed), the
 * output view (for the element count), reference() into doubles, teardown,
 * and the values written to a file in the runner's scratch dir
 * (reffile.h), which the agent moves into its store; one
 * Result.references entry each, in the seeds' order, with the file's
 * digest and no values: a reference of any size, never in a frame. A
 * reference with a non-finite element, or of all zeros (which an output of
 * zeros would meet), fails the task: a stored reference must be able to
 * judge. The coordinator stores the digest once per (problem hash,
 * configuration, seed). */
#include "runner/hctx.h"

#include "common/util.h"
#include "runner/compare.h"
#include "runner/reffile.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* A reference buffer scanned on the node's cores: at KernelBench's sizes
 * it is 12.8 GB and one core took seconds. */
typedef struct scan {
    double *f64; /* the buffer: doubles, or with f64 NULL floats */
    float *f32;
    size_t nonfinite[KF_PAR_MAX], nonzero[KF_PAR_MAX];
} scan;

static void count_values(void *arg, unsigned part, size_t lo, size_t hi)
{
    scan *sc = arg;
    size_t nonfinite = 0, nonzero = 0;
    for (size_t i = lo; i < hi; i++) {
        double x = sc->f64 ? sc->f64[i] : (double)sc->f32[i];
        nonfinite += !isfinite(x);
        nonzero += x != 0;
    }
    sc->nonfinite[part] = nonfinite;
    sc->nonzero[part] = nonzero;
}

/* One seed's reference into r (values malloc'd: the caller frees them).
 * 0, or -1 with the task failed. */
static int one_seed(hctx *h, const loaded *L, size_t index, uint64_t seed, Kfleet__Reference *r)
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
    /* The bounds its candidates are judged by, for this configuration and
     * the output's dtype: read here, where only the problem is loaded. */
    if (hctx_tolerances(h, L, v.dtype) != 0) {
        L->k->teardown(state);
        return -1;
    }
    /* Too large for the node's disk: said at once, with both sizes. */
    kf_dtype kept = kf_reffile_dtype(v.dtype, v.count);
    double need = (double)v.count * (kept == KF_DTYPE_F64 ? 8 : 4) * (double)h->spec->n_seeds;
    struct statvfs fs;
    if (statvfs(h->tmpdir, &fs) == 0 && need > (double)fs.f_bavail * (double)fs.f_frsize) {
        L->k->teardown(state);
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "problem %s: this configuration's references need %.1f GiB of disk (%zu "
                         "seeds of %zu elements) and the agent's disk has %.1f GiB free; not "
                         "computed (a smaller configuration, or a node with more disk)",
                         h->spec->kernel, need / 1073741824.0, h->spec->n_seeds, v.count,
                         (double)fs.f_bavail * (double)fs.f_frsize / 1073741824.0);
    }
    /* A Python problem's reference kept in f32 is asked for in f32: half
     * the buffer (6.4 GB, not 12.8, for KernelBench's largest outputs) and
     * the same file as its doubles narrowed. */
    int f32 = kept == KF_DTYPE_F32 && L->reference_f32;
    size_t bytes = v.count * (f32 ? sizeof(float) : sizeof(double));
    void *ref = malloc(bytes);
    if (!ref) {
        L->k->teardown(state);
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "out of memory for a reference of %zu elements", v.count);
    }
    char kerr[HCTX_KERR_LEN] = "";
    t0 = kf_mono_ns();
    hctx_nan_fill(ref, bytes);
    int rc = f32 ? L->reference_f32(state, ref, kerr, sizeof kerr)
                 : L->k->reference(state, ref, kerr, sizeof kerr);
    hctx_phase_add(h, HCTX_PH_REFERENCE, t0);
    L->k->teardown(state);
    if (rc != 0) {
        free(ref);
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "problem %s reference failed: %s",
                         h->spec->kernel, kerr);
    }
    size_t nonfinite = 0, nonzero = 0;
    t0 = kf_mono_ns();
    scan sc = {.f64 = f32 ? NULL : ref, .f32 = f32 ? ref : NULL};
    kf_par_ranges(v.count, kf_cpus(), count_values, &sc);
    for (unsigned i = 0; i < kf_par_parts(v.count, kf_cpus()); i++) {
        nonfinite += sc.nonfinite[i];
        nonzero += sc.nonzero[i];
    }
    hctx_phase_add(h, HCTX_PH_REFERENCE, t0);
    if (nonfinite || nonzero == 0) {
        free(ref);
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         nonfinite ? "problem %s: its reference for a seed has %zu non-finite or "
                                     "unwritten elements of %zu; it cannot judge a candidate"
                                   : "problem %s: its reference for a seed is all zeros (%zu "
                                     "nonzero of %zu), which an output of zeros would meet, so "
                                     "it cannot tell a candidate from one that computes "
                                     "nothing; the problem must make a nonzero reference "
                                     "(its inputs: setup(), or get_inputs() in KernelBench's "
                                     "format; or its computation)",
                         h->spec->kernel, nonfinite, v.count);
    }
    char path[PATH_MAX + 64];
    kf_reffile_scratch_path(path, sizeof path, h->tmpdir, h->ta->task_id, h->ta->attempt, index);
    kfleet__reference__init(r);
    r->digest = malloc(KF_REFFILE_DIGEST_HEX);
    kf_err err;
    t0 = kf_mono_ns();
    unlink(path); /* a runner of an earlier attempt's, in a shared tmp */
    int wrc = !r->digest ? kf_err_set(&err, KF_ENOMEM, "out of memory")
              : f32      ? kf_reffile_write_f32(path, ref, v.count, r->digest, &err)
                         : kf_reffile_write(path, ref, v.count, kept, r->digest, &err);
    hctx_phase_add(h, HCTX_PH_REFERENCE, t0);
    free(ref);
    if (wrc != KF_OK) {
        free(r->digest);
        r->digest = NULL;
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "problem %s: %s", h->spec->kernel, err.msg);
    }
    r->seed = seed;
    r->count = v.count;
    r->dtype = (uint32_t)kept;
    /* What its candidates' checker judges by: the problem's own, read here
     * where only the problem is loaded. */
    r->tol_abs = h->tol.abs;
    r->tol_rel = h->tol.rel;
    r->close = h->tol.close;
    r->atol = h->tol.atol;
    r->rtol = h->tol.rtol;
    return 0;
}

int hctx_reference(hctx *h, const loaded *L)
{
    const Kfleet__TaskSpec *spec = h->spec;
    if (spec->n_seeds == 0)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "internal: a reference task for %s without seeds", spec->kernel);
    /* Tolerances that pass anything judge nothing: refused before a
     * reference is stored for them. */
    if (hctx_refuse_vacuous(h, L) != 0)
        return -1;
    Kfleet__Reference **refs = calloc(spec->n_seeds, sizeof *refs);
    if (!refs)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "out of memory");
    h->res->references = refs;
    for (size_t i = 0; i < spec->n_seeds; i++) {
        Kfleet__Reference *r = malloc(sizeof *r);
        if (!r)
            return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "out of memory");
        if (one_seed(h, L, i, spec->seeds[i], r) != 0) {
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
        free(res->references[i]->digest);
        free(res->references[i]);
    }
    free(res->references);
    res->references = NULL;
    res->n_references = 0;
}
