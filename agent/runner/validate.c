/* validate — a validate task: fresh inputs per seed (seeds differ per trial
 * and per task), the output poisoned before each run, every element checked
 * finite, max-abs and relative-L2 error against the kernel's own reference,
 * and bitwise determinism across two runs of the first seed. A check that
 * cannot fail is refused (issue 29): tolerances that pass anything before
 * any run (kf_tol_vacuous, also before a profile), and a reference of all
 * zeros, against which the relative error measures nothing.
 *
 * Where the checks run (issue 32 item 4): a device output of a kernel that
 * defines kf_reference_device is checked on the GPU (devcmp.h: the
 * reference computed into device memory, our kernel reduces the same
 * measures, determinism compared bitwise there), so neither the output nor
 * the reference crosses to the host; every other output, and every output
 * with KF_COMPARE=host, is fetched and compared on host threads. */
#include "runner/hctx.h"
#include "common/tolerance.h"
#include "runner/compare.h"
#include "runner/devcmp.h"
#include "runner/harness.h"
#include "common/buf.h"
#include "common/log.h"
#include "common/util.h"
#include "common/xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The verdict rule, the same wherever the comparison ran (a check with
 * atol and rtol runs on the host, hctx_compare_on_device). */
static void judge_check(hctx_check *c, const hctx *h)
{
    const kf_tols *t = &h->tol;
    c->passed = c->nonfinite == 0 && c->ref_nonzero > 0 && c->max_abs <= t->abs &&
                c->rel <= t->rel && (!t->close || (c->located && c->m.not_close == 0));
}

void hctx_compare(const void *out, kf_dtype dtype, const double *ref, size_t n, unsigned threads,
                  const kf_tols *t, hctx_check *c)
{
    kf_tols none = {.abs = INFINITY, .rel = INFINITY};
    kf_cmp_run(out, dtype, ref, KF_DTYPE_F64, n, t ? t : &none, threads, &c->m);
    c->nonfinite = c->m.nonfinite;
    c->ref_nonzero = c->m.ref_nonzero;
    c->max_abs = c->m.max_abs;
    c->rel = c->m.rel;
    c->located = 1;
}

int hctx_tolerances(hctx *h, const loaded *L, kf_dtype out)
{
    if (h->tol_set)
        return 0;
    kf_tol t = {L->k->tol_abs, L->k->tol_rel, 0, 0, 0};
    char err[HCTX_KERR_LEN] = "", why[512];
    if (L->tolfn && L->tolfn(&L->params, out, &t, err, sizeof err) != 0)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "%s %s: its tolerances for this configuration: %s", hctx_who(h),
                         h->spec->kernel, err);
    h->res->tol_abs = t.tol_abs;
    h->res->tol_rel = t.tol_rel;
    h->res->close = t.close != 0;
    h->res->atol = t.close ? t.atol : 0;
    h->res->rtol = t.close ? t.rtol : 0;
    int bad = t.close ? kf_tol_close_vacuous(t.atol, t.rtol, t.tol_abs, t.tol_rel, why, sizeof why)
                      : kf_tol_vacuous(t.tol_abs, t.tol_rel, why, sizeof why);
    if (bad)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "%s %s declares tolerances that cannot fail, refused before its "
                         "output is judged: %s",
                         hctx_who(h), h->spec->kernel, why);
    h->tol = (kf_tols){t.tol_abs, t.tol_rel, t.close != 0, t.atol, t.rtol};
    h->tol_set = 1;
    return 0;
}

/* All ones: a NaN in every element the reference leaves unwritten. Split
 * over threads: on a fresh buffer the fill is its first touch, and a 2 GiB
 * reference (a 1 GiB copy's) took longer to fill than to compare. */
static void fill_range(void *arg, unsigned part, size_t lo, size_t hi)
{
    (void)part;
    memset((unsigned char *)arg + lo, 0xFF, hi - lo);
}

/* Exchanges the task's output and reference host buffers. */
static void swap_host_buffers(hctx *h)
{
    void *b = h->host_out;
    size_t c = h->host_out_cap;
    h->host_out = h->host_ref;
    h->host_out_cap = h->host_ref_cap;
    h->host_ref = b;
    h->host_ref_cap = c;
}

void hctx_nan_fill(void *ref, size_t bytes)
{
    kf_par_ranges(bytes, kf_cpus(), fill_range, ref);
}

int hctx_compare_on_device(hctx *h, const loaded *L, const kf_view *v)
{
    const char *mode = getenv("KF_COMPARE");
    int host = mode && strcmp(mode, "host") == 0;
    if (mode && *mode && !host && strcmp(mode, "device") != 0)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "KF_COMPARE=%s in the agent's environment: use host (every check on the "
                         "host, for an A/B run) or device (the default: on the GPU where the "
                         "kernel defines %s)",
                         mode, KF_REFERENCE_DEVICE_SYMBOL);
    int dev =
        !host && L->refdev && v->location == KF_LOC_DEVICE && h->cu && !h->judge && !h->tol.close;
    if (!h->compare[0]) {
        const char *why = h->judge       ? "a candidate: the checker compares"
                          : h->tol.close ? "atol and rtol: compared element by element"
                          : !L->refdev   ? "no " KF_REFERENCE_DEVICE_SYMBOL
                          : host         ? "KF_COMPARE=host"
                          : v->location != KF_LOC_DEVICE ? "a host output"
                                                         : "no CUDA driver";
        snprintf(h->compare, sizeof h->compare, "%s%s", dev ? "device" : "host: ", dev ? "" : why);
        h->res->compare = h->compare;
        kf_info("runner.compare", "task=0x%llx kernel=%s compare=\"%s\"",
                (unsigned long long)h->ta->task_id, h->spec->kernel, h->compare);
    }
    return dev;
}

struct kf_devcmp *hctx_devcmp(hctx *h)
{
    kf_err err;
    if (!h->devcmp && kf_devcmp_new(h->cu, &h->devcmp, &err) != KF_OK)
        hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                  "the harness's comparison on the GPU could not load: %s (KF_COMPARE=host "
                  "checks on the host instead)",
                  err.msg);
    return h->devcmp;
}

int hctx_device_reference(hctx *h, const loaded *L, void *state, size_t n, double **dref)
{
    *dref = NULL;
    void *p = NULL;
    kf_err err;
    char kerr[HCTX_KERR_LEN] = "";
    uint64_t t0 = kf_mono_ns();
    int rc = 0;
    if (kf_cudrv_alloc(h->cu, &p, n * sizeof(double), &err) != KF_OK)
        rc = hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                       "%s %s: no device memory for its reference (%zu doubles): %s "
                       "(KF_COMPARE=host checks on the host)",
                       hctx_who(h), h->spec->kernel, n, err.msg);
    /* NaN where the reference writes nothing, as on the host. */
    else if (kf_cudrv_memset(h->cu, p, 0xFF, n * sizeof(double), &err) != KF_OK)
        rc = hctx_fail(h, KFLEET__TASK_STATE__FAILED, "filling the device reference: %s", err.msg);
    else if (L->refdev(state, p, kerr, sizeof kerr) != 0)
        rc = hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s %s failed: %s", hctx_who(h),
                       h->spec->kernel, KF_REFERENCE_DEVICE_SYMBOL, kerr);
    /* The whole context: work the reference left on any stream is done
     * before the output is poisoned and the run it checks starts. */
    else if (kf_cudrv_sync(h->cu, &err) != KF_OK)
        rc = hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s %s: %s", hctx_who(h), h->spec->kernel,
                       KF_REFERENCE_DEVICE_SYMBOL, err.msg);
    hctx_phase_add(h, HCTX_PH_REFERENCE, t0);
    if (rc != 0) {
        kf_cudrv_free(h->cu, p);
        return -1;
    }
    *dref = p;
    return 0;
}

/* hctx_run_and_check on the GPU: reference (unless known) before the
 * poison and the run, then our comparison; nothing fetched. */
static int check_on_device(hctx *h, const loaded *L, void *state, const kf_view *v,
                           const double *known, hctx_check *c)
{
    double *dref = (double *)known;
    if (!known && hctx_device_reference(h, L, state, v->count, &dref) != 0)
        return -1;
    uint64_t t0 = kf_mono_ns();
    int rc = hctx_poison(h, v);
    if (rc == 0)
        rc = hctx_run_once(h, L, state);
    hctx_phase_add(h, HCTX_PH_RUN, t0);
    t0 = kf_mono_ns();
    if (rc == 0)
        rc = hctx_output_same(h, L, state, v);
    struct kf_devcmp *dc = rc == 0 ? hctx_devcmp(h) : NULL;
    kf_devcmp_part sum;
    kf_err err;
    if (!dc)
        rc = -1;
    else if (kf_devcmp_compare(dc, v->data, v->dtype, dref, v->count, &sum, &err) != KF_OK)
        rc = hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s: the comparison on the GPU: %s",
                       hctx_who(h), h->spec->kernel, err.msg);
    hctx_phase_add(h, HCTX_PH_COMPARE, t0);
    if (!known)
        kf_cudrv_free(h->cu, dref);
    if (rc != 0)
        return -1;
    c->nonfinite = sum.nonfinite;
    c->ref_nonzero = sum.ref_nonzero;
    c->max_abs = sum.max_abs;
    /* As the host's comparison (compare.c): a reference of zeros fails anyway. */
    c->rel = sum.ref2 > 0 ? sqrt(sum.diff2 / sum.ref2) : sqrt(sum.diff2);
    judge_check(c, h);
    return 0;
}

int hctx_run_and_check(hctx *h, const loaded *L, void *state, const kf_view *v, const double *known,
                       hctx_check *c, void **out, int *owned)
{
    memset(c, 0, sizeof *c);
    *out = NULL;
    *owned = 0;
    /* A candidate's bounds are its checker's; a kernel's its own. */
    if (!h->judge && hctx_tolerances(h, L, v->dtype) != 0)
        return -1;
    int dev = hctx_compare_on_device(h, L, v);
    if (dev != 0)
        return dev < 0 ? -1 : check_on_device(h, L, state, v, known, c);
    size_t rbytes = v->count * sizeof(double);
    /* A candidate's process has no reference (candidate.c): the checker's
     * answer is the check. */
    int judged = h->judge != NULL;
    double *ref = known || judged ? NULL : hctx_host_buffer(&h->host_ref, &h->host_ref_cap, rbytes);
    char kerr[HCTX_KERR_LEN] = "";
    uint64_t t0 = kf_mono_ns();
    /* NaN where the reference writes nothing: never the last seed's values
     * left in the reused buffer. */
    if (ref)
        hctx_nan_fill(ref, v->count * sizeof *ref);
    hctx_phase_add(h, HCTX_PH_REFERENCE, t0);
    t0 = kf_mono_ns();
    int rc = ref || known || judged ? hctx_poison(h, v)
                                    : hctx_fail(h, KFLEET__TASK_STATE__FAILED, "out of memory");
    if (rc == 0)
        rc = hctx_run_once(h, L, state);
    hctx_phase_add(h, HCTX_PH_RUN, t0);
    t0 = kf_mono_ns();
    if (rc == 0)
        rc = hctx_fetch_output(h, L, state, v, out, owned);
    hctx_phase_add(h, HCTX_PH_COMPARE, t0);
    t0 = kf_mono_ns();
    if (rc == 0 && ref && L->k->reference(state, ref, kerr, sizeof kerr) != 0)
        rc = hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s reference failed: %s", hctx_who(h),
                       h->spec->kernel, kerr);
    hctx_phase_add(h, HCTX_PH_REFERENCE, t0);
    if (rc != 0) {
        if (*owned)
            free(*out);
        *out = NULL;
        *owned = 0;
        return -1;
    }
    t0 = kf_mono_ns();
    /* A candidate's output goes to the checker, whose verdict the agent
     * takes (candidate.c) and whose answer is this process's check too. */
    if (judged) {
        rc = h->judge(h, state, *out, v, c);
        hctx_phase_add(h, HCTX_PH_COMPARE, t0);
        if (rc != 0) {
            if (*owned)
                free(*out);
            *out = NULL;
            *owned = 0;
            return -1;
        }
        return 0;
    }
    hctx_compare(*out, v->dtype, known ? known : ref, v->count, kf_cpus(), &h->tol, c);
    judge_check(c, h);
    hctx_phase_add(h, HCTX_PH_COMPARE, t0);
    return 0;
}

int hctx_refuse_vacuous(hctx *h, const loaded *L)
{
    char why[512];
    /* A kernel whose tolerances depend on its configuration and dtype is
     * refused at its first check (hctx_tolerances) instead; a candidate's
     * are its checker's, vetted where its references were computed. */
    if (h->judge || L->tolfn || kf_tol_vacuous(L->k->tol_abs, L->k->tol_rel, why, sizeof why) == 0)
        return 0;
    h->res->tol_abs = L->k->tol_abs;
    h->res->tol_rel = L->k->tol_rel;
    return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                     "%s %s declares tolerances that cannot fail, refused before any run: %s",
                     hctx_who(h), h->spec->kernel, why);
}

/* The first output kept on the device, a second run on the same inputs,
 * both compared bitwise there: h->res->deterministic. 0, or -1 with the
 * task failed. */
static int determinism_on_device(hctx *h, const loaded *L, void *state, const kf_view *v)
{
    size_t bytes = v->count * hctx_dtype_size(v->dtype);
    void *first = NULL;
    kf_err err;
    int equal = 0, rc = 0;
    struct kf_devcmp *dc = hctx_devcmp(h);
    if (!dc)
        return -1;
    if (kf_cudrv_alloc(h->cu, &first, bytes, &err) != KF_OK ||
        kf_cudrv_copy_device(h->cu, first, v->data, bytes, &err) != KF_OK)
        rc = hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                       "%s %s: keeping the first output on the device (%zu bytes): %s", hctx_who(h),
                       h->spec->kernel, bytes, err.msg);
    if (rc == 0)
        rc = hctx_poison(h, v);
    if (rc == 0)
        rc = hctx_run_once(h, L, state);
    if (rc == 0)
        rc = hctx_output_same(h, L, state, v);
    if (rc == 0 && kf_devcmp_equal(dc, first, v->data, bytes, &equal, &err) != KF_OK)
        rc = hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s: the bitwise comparison: %s",
                       hctx_who(h), h->spec->kernel, err.msg);
    kf_cudrv_free(h->cu, first);
    if (rc == 0)
        h->res->deterministic = equal;
    return rc;
}

int hctx_validate(hctx *h, const loaded *L)
{
    const Kfleet__MeasureSettings *m = h->spec->measure;
    uint32_t seeds = m && m->validate_seeds ? m->validate_seeds : KF_DEFAULT_SEEDS;
    /* A candidate is validated on every seed of its problem's pool, against
     * the stored references; the Result names a seed by its index only. */
    int cand = h->judge != NULL;
    if (cand)
        seeds = (uint32_t)h->spec->n_seeds;
    if (hctx_refuse_vacuous(h, L) != 0)
        return -1;
    Kfleet__ValidateTrial **trials = calloc(seeds, sizeof *trials);
    if (!trials)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "out of memory");
    h->res->trials = trials;
    int all_pass = 1;
    char first_bad[1024] = "";
    void *first_out = NULL;
    size_t first_bytes = 0;
    for (uint32_t s = 0; s < seeds; s++) {
        /* Seeds differ per trial and per task, so no two validations share inputs. */
        uint64_t seed = cand ? h->spec->seeds[s]
                             : (h->ta->task_id * 0x9E3779B97F4A7C15ull) ^ (0xA5A5ull + s * 7919ull);
        void *state = NULL;
        if (hctx_setup(h, L, seed, &state) != 0) {
            L->k->teardown(state);
            return -1;
        }
        kf_view v = {0};
        if (L->k->output(state, &v) != 0 || !v.data || v.count == 0) {
            L->k->teardown(state);
            return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s has no output view", hctx_who(h),
                             h->spec->kernel);
        }
        void *out = NULL;
        int owned = 0;
        hctx_check chk;
        if (hctx_run_and_check(h, L, state, &v, NULL, &chk, &out, &owned) != 0) {
            L->k->teardown(state);
            return -1;
        }
        uint64_t nonfinite = chk.nonfinite;
        double max_abs = chk.max_abs, rel = chk.rel;
        Kfleet__ValidateTrial *t = malloc(sizeof *t);
        kfleet__validate_trial__init(t);
        t->seed = cand ? s : seed;
        t->max_abs_err = max_abs;
        t->rel_err = rel;
        t->nonfinite = nonfinite;
        t->passed = chk.passed;
        if (chk.located) { /* where each bound came closest to breaking */
            t->located = 1;
            t->max_abs_at = chk.m.max_abs_at;
            t->max_abs_out = chk.m.max_abs_out;
            t->max_abs_ref = chk.m.max_abs_ref;
            t->not_close = chk.m.not_close;
            t->close_ratio = chk.m.close_ratio;
            t->close_at = chk.m.close_at;
            t->close_out = chk.m.close_out;
            t->close_ref = chk.m.close_ref;
        }
        if (cand) { /* the problem's, as the checker holds them */
            h->res->tol_abs = L->k->tol_abs;
            h->res->tol_rel = L->k->tol_rel;
        }
        trials[h->res->n_trials++] = t;
        if (chk.ref_nonzero == 0 && all_pass) {
            all_pass = 0;
            snprintf(first_bad, sizeof first_bad,
                     "validation is vacuous (seed %llu): the reference is all zeros (%zu "
                     "elements), so the relative error measures nothing and an output of zeros "
                     "would pass; make setup's inputs give a nonzero reference",
                     (unsigned long long)t->seed, v.count);
        } else if (!t->passed && all_pass && cand) {
            all_pass = 0; /* the checker's numbers are the agent's to give */
            snprintf(first_bad, sizeof first_bad,
                     "validation failed (pool seed %llu): the checker failed the output",
                     (unsigned long long)t->seed);
        } else if (!t->passed && all_pass && chk.located) {
            all_pass = 0;
            char why[512];
            kf_cmp_why(&chk.m, &h->tol, why, sizeof why);
            snprintf(first_bad, sizeof first_bad, "validation failed (seed %llu): %s",
                     (unsigned long long)t->seed, why);
        } else if (!t->passed && all_pass) {
            all_pass = 0;
            snprintf(first_bad, sizeof first_bad,
                     "validation failed (seed %llu): %llu non-finite or unwritten elements of "
                     "%zu, max abs error %.3g (tolerance %.3g), relative error %.3g (tolerance "
                     "%.3g)",
                     (unsigned long long)t->seed, (unsigned long long)nonfinite, v.count, max_abs,
                     h->tol.abs, rel, h->tol.rel);
        }
        /* Determinism: the first seed runs a second time on the same inputs.
         * A device output is compared where it is, also when its check
         * fetched it (a candidate's, for its checker): a gigabyte output
         * kept and fetched again on the host cost seconds (7 s for
         * KernelBench's 6.4 GB ReLU on an H200). */
        uint64_t td = kf_mono_ns();
        if (s == 0 && (!out || (v.location != KF_LOC_HOST && h->cu))) {
            if (determinism_on_device(h, L, state, &v) != 0) {
                L->k->teardown(state);
                return -1;
            }
            hctx_phase_add(h, HCTX_PH_DETERMINISM, td);
        } else if (s == 0) {
            first_bytes = v.count * hctx_dtype_size(v.dtype);
            /* A device output was fetched into the task's output buffer:
             * the second run's is fetched into the reference's (unused
             * until the next seed's reference, 8 bytes an element), so the
             * first is compared where it is instead of copied into fresh
             * memory. A host output is the kernel's own buffer: copied. */
            int swapped = out == h->host_out && h->host_ref && h->host_ref_cap >= first_bytes;
            if (swapped) {
                swap_host_buffers(h);
                first_out = out;
            } else {
                first_out = malloc(first_bytes ? first_bytes : 1);
                if (first_out)
                    memcpy(first_out, out, first_bytes);
            }
            void *out2 = NULL;
            int owned2 = 0;
            int ok = first_out && hctx_poison(h, &v) == 0 && hctx_run_once(h, L, state) == 0 &&
                     hctx_fetch_output(h, L, state, &v, &out2, &owned2) == 0;
            if (ok)
                h->res->deterministic = memcmp(first_out, out2, first_bytes) == 0;
            if (ok && owned2)
                free(out2);
            if (swapped) {
                swap_host_buffers(h);
                first_out = NULL; /* the task's buffer again */
            }
            if (!ok) {
                free(first_out);
                if (owned)
                    free(out);
                L->k->teardown(state);
                return -1;
            }
            hctx_phase_add(h, HCTX_PH_DETERMINISM, td);
        }
        if (owned)
            free(out);
        td = kf_mono_ns();
        L->k->teardown(state);
        hctx_phase_add(h, HCTX_PH_SETUP, td);
    }
    free(first_out);
    if (!all_pass)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s", first_bad);
    if (L->k->deterministic && !h->res->deterministic)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "%s %s says it is deterministic but two runs on the same inputs "
                         "differ bitwise",
                         hctx_who(h), h->spec->kernel);
    return 0;
}
