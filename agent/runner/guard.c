/* guard — what keeps every timed sample of a profile honest (issue 29).
 *
 * A kernel that keys on its last inputs or its last output (memoizes on an
 * output sentinel, on its inputs' identity, computes every Nth call) would
 * be timed doing nothing if only some samples were checked. So, around
 * EVERY timed sample, untimed:
 *
 *  - before it, the output of each input set the sample runs on is
 *    poisoned (0xFF bytes: NaN for floats), so a run that writes nothing
 *    leaves poison, and a run that skips because "the output still holds
 *    what I wrote" finds no such output;
 *  - the samples rotate among K >= 2 input sets made from secret seeds
 *    (profile.c), so a run that skips because "these are the inputs I saw
 *    last" never sees the same inputs twice in a row;
 *  - after it, a spot check of each set it ran on: a few chunks of output
 *    elements at secret random positions (chosen once per set) against that
 *    set's reference at those positions (computed once per set, before the
 *    samples), each element finite and within the kernel's own absolute
 *    tolerance, and the chunks together not further from the reference
 *    than an output of another input set would be.
 *
 * A skipped or stale sample therefore fails the profile at its own index,
 * deterministically: the poison is still there, or the values are another
 * set's. A candidate's process holds no reference (candidate.c): its spot
 * checks send the values at those positions to the checker, which has
 * them (h->spot) and applies the same bounds, and answers PASS or FAIL. What costs an honest
 * kernel: one output-sized memset and a few small reads per sample, both outside the timed interval
 * (docs/benchmarks.md has the figures).
 *
 * On the GPU (hctx_compare_on_device: a device output whose kernel defines
 * kf_reference_device): each set's whole reference is computed once into
 * device memory and kept there (while the sets' references fit in half the
 * device memory then free), the spot check runs our comparison kernel over
 * all CHUNKS chunks in one launch and reads back their sums only, and the
 * re-checks compare against the kept reference on the device. A set whose
 * reference is not kept has its chunks' reference copied to the host
 * (CHUNKS x CHUNK_LEN doubles) and is spot-checked as a host-compared
 * set is; its re-checks compute the reference again. */
#include "runner/guard.h"

#include "common/log.h"
#include "common/util.h"
#include "runner/devcmp.h"
#include "common/xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Chunks of contiguous elements: a device output costs one small copy per
 * chunk checked, so a device sample checks HCTX_GUARD_DEVICE_CHUNKS of its
 * set's chunks (chosen at random each time) and a host sample all of them. */
#define CHUNKS 32
#define CHUNK_LEN 8
#define HCTX_GUARD_DEVICE_CHUNKS 4

typedef struct guard_set {
    size_t at[CHUNKS]; /* first element of each chunk */
    size_t len;        /* elements per chunk (count may be < CHUNK_LEN) */
    double ref[CHUNKS][CHUNK_LEN];
    kf_view view; /* as output() named it when the set was prepared */
    /* The whole reference, kept for the profile's re-checks (in the task's
     * h->host_set[i], which the task frees); NULL: not kept. */
    const double *full;
    /* Checked on the GPU: the whole reference in device memory, kept for
     * the spot checks and re-checks (freed by hctx_guard_destroy); NULL:
     * not kept, or checked on the host. */
    double *dref;
} guard_set;

struct hctx_guard {
    kf_cudrv *cu; /* frees the sets' dref */
    size_t nsets;
    guard_set *sets;
    uint64_t rng;
    double spent_s; /* the guard's own time, untimed */
    uint64_t checks;
};

static uint64_t next_rand(hctx_guard *g)
{
    /* splitmix64 from a getrandom() seed: positions the kernel cannot
     * derive from anything it sees. */
    uint64_t z = (g->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* prepare_set on the GPU: the reference into device memory; kept there
 * (s->dref) when `keep`, else only its chunks copied to the host. */
static int prepare_device_set(hctx *h, const loaded *L, void *state, guard_set *s, int keep)
{
    double *dref = NULL;
    if (hctx_device_reference(h, L, state, s->view.count, &dref) != 0)
        return -1;
    if (keep) {
        s->dref = dref;
        return 0;
    }
    kf_err err;
    int rc = 0;
    for (size_t c = 0; c < CHUNKS && rc == 0; c++)
        if (kf_cudrv_copy_to_host(h->cu, s->ref[c], dref + s->at[c], s->len * sizeof(double),
                                  &err) != KF_OK)
            rc = hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s: the reference's chunks: %s",
                           hctx_who(h), h->spec->kernel, err.msg);
    kf_cudrv_free(h->cu, dref);
    return rc;
}

/* The chunk positions of one set and the reference there: the reference is
 * computed once (NaN where it writes nothing), into the set's own buffer
 * when `keep` (the profile's re-checks on this set then reuse it: the
 * same inputs, computed before any run on them), else into the task's
 * reused host buffer, of which only the chunks are kept. */
static int prepare_set(hctx_guard *g, hctx *h, const loaded *L, void *state, size_t set, int keep)
{
    guard_set *s = &g->sets[set];
    if (L->k->output(state, &s->view) != 0 || !s->view.data || s->view.count == 0)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s has no output view", hctx_who(h),
                         h->spec->kernel);
    size_t n = s->view.count;
    s->len = n < CHUNK_LEN ? n : CHUNK_LEN;
    for (size_t c = 0; c < CHUNKS; c++)
        s->at[c] = (size_t)(next_rand(g) % (uint64_t)(n - s->len + 1));
    if (h->spot)
        return 0; /* the checker has the reference at every position */
    int dev = hctx_compare_on_device(h, L, &s->view);
    if (dev != 0)
        return dev < 0 ? -1 : prepare_device_set(h, L, state, s, keep);
    double *ref = NULL;
    if (keep) {
        ref = hctx_host_buffer(&h->host_set[set], &h->host_set_cap[set], n * sizeof(double));
        s->full = ref;
    }
    if (!ref)
        ref = hctx_host_buffer(&h->host_ref, &h->host_ref_cap, n * sizeof(double));
    if (!ref)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "out of memory for the reference");
    hctx_nan_fill(ref, n * sizeof(double));
    char kerr[HCTX_KERR_LEN] = "";
    uint64_t t0 = kf_mono_ns();
    int rc = L->k->reference(state, ref, kerr, sizeof kerr);
    hctx_phase_add(h, HCTX_PH_REFERENCE, t0);
    if (rc != 0)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s reference failed: %s", hctx_who(h),
                         h->spec->kernel, kerr);
    for (size_t c = 0; c < CHUNKS; c++)
        memcpy(s->ref[c], ref + s->at[c], s->len * sizeof(double));
    return 0;
}

/* The host memory the kept references may take together: an eighth of
 * the host's (a 4 GiB copy's two sets take 16 GiB of doubles). Sets past
 * it are not kept: their re-check computes the reference again. */
static double keep_budget(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    return pages > 0 && psz > 0 ? (double)pages * (double)psz / 8 : 0;
}

/* The device memory the kept device references may take together: half
 * of what is free once the sets are set up; the rest stays for the runs
 * and the re-checks' copies. */
static double device_keep_budget(hctx *h)
{
    size_t free_b = 0, total_b = 0;
    kf_err err;
    if (!h->cu || kf_cudrv_mem_info(h->cu, &free_b, &total_b, &err) != KF_OK)
        return 0;
    return (double)free_b / 2;
}

int hctx_guard_new(hctx *h, const loaded *L, void *const *states, size_t nsets, hctx_guard **out)
{
    *out = NULL;
    hctx_guard *g = kf_xcalloc(1, sizeof *g);
    g->sets = kf_xcalloc(nsets, sizeof *g->sets);
    g->nsets = nsets;
    g->cu = h->cu;
    g->rng = kf_unpredictable_u64();
    double budget = keep_budget(), dev_budget = device_keep_budget(h);
    for (size_t i = 0; i < nsets; i++) {
        kf_view v = {0};
        double need = L->k->output(states[i], &v) == 0 ? (double)v.count * sizeof(double) : 0;
        int dev = need > 0 && !h->spot ? hctx_compare_on_device(h, L, &v) : 0;
        if (dev < 0) {
            hctx_guard_destroy(&g);
            return -1;
        }
        double *left = dev ? &dev_budget : &budget;
        int keep = need > 0 && need <= *left && !h->spot;
        if (keep)
            *left -= need;
        if (dev && !keep)
            kf_info("profile.guard",
                    "task=0x%llx set=%zu reference_bytes=%.0f: not kept on the "
                    "device (half of its free memory is spent); re-checks compute it again",
                    (unsigned long long)h->ta->task_id, i, need);
        if (prepare_set(g, h, L, states[i], i, keep) != 0) {
            hctx_guard_destroy(&g);
            return -1;
        }
    }
    *out = g;
    return 0;
}

void hctx_guard_destroy(hctx_guard **self)
{
    if (!*self)
        return;
    for (size_t i = 0; i < (*self)->nsets; i++)
        if ((*self)->sets[i].dref)
            kf_cudrv_free((*self)->cu, (*self)->sets[i].dref);
    free((*self)->sets);
    free(*self);
    *self = NULL;
}

const double *hctx_guard_reference(const hctx_guard *g, size_t set, const kf_view *v)
{
    if (!g || set >= g->nsets)
        return NULL;
    const guard_set *s = &g->sets[set];
    const double *kept = s->dref ? s->dref : s->full;
    if (!kept || v->data != s->view.data || v->count != s->view.count ||
        v->dtype != s->view.dtype || v->location != s->view.location)
        return NULL;
    return kept;
}

double hctx_guard_spent_s(const hctx_guard *g)
{
    return g ? g->spent_s : 0;
}

uint64_t hctx_guard_checks(const hctx_guard *g)
{
    return g ? g->checks : 0;
}

int hctx_guard_before(hctx_guard *g, hctx *h, size_t first, size_t count)
{
    uint64_t t0 = kf_mono_ns();
    size_t used = count < g->nsets ? count : g->nsets;
    for (size_t i = 0; i < used; i++)
        if (hctx_poison(h, &g->sets[(first + i) % g->nsets].view) != 0)
            return -1;
    g->spent_s += (double)(kf_mono_ns() - t0) / 1e9;
    return 0;
}

/* The chunk's elements on the host: read in place, or copied from the
 * device into buf. */
static const void *chunk_of(hctx *h, const guard_set *s, size_t c, void *buf, kf_err *err)
{
    size_t es = hctx_dtype_size(s->view.dtype);
    const char *src = (const char *)s->view.data + s->at[c] * es;
    if (s->view.location == KF_LOC_HOST)
        return src;
    if (!h->cu) {
        kf_err_set(err, KF_EINVAL, "a device output from a host kernel");
        return NULL;
    }
    if (kf_cudrv_copy_to_host(h->cu, buf, src, s->len * es, err) != KF_OK)
        return NULL;
    return buf;
}

static int check_set_device(hctx_guard *g, hctx *h, const loaded *L, guard_set *s, size_t sample);
static int spot_verdict(hctx *h, const loaded *L, size_t sample, size_t n, uint64_t poison,
                        uint64_t not_close, double max_abs, double rel);

/* One set's check after a sample. 0, or -1 with the task failed. */
static int check_set(hctx_guard *g, hctx *h, const loaded *L, void *state, guard_set *s,
                     size_t sample)
{
    kf_view now = {0};
    char whose[256];
    const char *of = hctx_problem_of(h, whose, sizeof whose);
    if (L->k->output(state, &now) != 0 || now.data != s->view.data || now.count != s->view.count ||
        now.dtype != s->view.dtype || now.location != s->view.location)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "%s %s: output()%s after timed sample %zu describes another buffer "
                         "than before the samples: the harness poisons the output before each "
                         "sample and reads the same buffer after, so %s",
                         hctx_who(h), h->spec->kernel, of, sample,
                         *of ? "a candidate's run(s) writes into the output buffer of the "
                               "state the problem's setup made, and may not replace it"
                             : "output() must return one view for a state");
    if (s->dref)
        return check_set_device(g, h, L, s, sample);
    /* A sample on fresh inputs (a candidate's, fresh.h): nothing to judge
     * its output by, so nothing fetched (on a GPU four copies from the
     * device, each waited for). It was poisoned like any other, so the
     * kernel cannot tell it from an audit, which is checked. */
    if (h->spot_blind && h->spot_blind(state))
        return 0;
    size_t nchunks = s->view.location == KF_LOC_HOST ? CHUNKS : HCTX_GUARD_DEVICE_CHUNKS;
    double buf[CHUNK_LEN]; /* room for CHUNK_LEN elements of any dtype */
    uint64_t at[CHUNKS * CHUNK_LEN];
    double vals[CHUNKS * CHUNK_LEN];
    kf_cmp_spot sc = {0};
    size_t nvals = 0;
    for (size_t k = 0; k < nchunks; k++) {
        size_t c = s->view.location == KF_LOC_HOST ? k : (size_t)(next_rand(g) % CHUNKS);
        kf_err err;
        const void *e = chunk_of(h, s, c, buf, &err);
        if (!e)
            return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s %s: %s", hctx_who(h),
                             h->spec->kernel, err.msg);
        for (size_t i = 0; i < s->len; i++) {
            double o = hctx_elem(e, s->view.dtype, i), r = s->ref[c][i];
            if (h->spot) {
                at[nvals] = s->at[c] + i;
                vals[nvals++] = o;
                continue;
            }
            kf_cmp_spot_add(&sc, &h->tol, o, r);
        }
    }
    g->checks++;
    if (h->spot) {
        int passed = 0;
        if (h->spot(h, state, at, vals, nvals, &passed) != 0)
            return -1;
        /* The checker applied the same bounds; its measures are the agent's. */
        return passed ? 0
                      : hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                                  "profile spot check failed after timed sample %zu: the checker "
                                  "found the %zu output elements at secret positions unwritten "
                                  "or wrong. The kernel passed validation but did not do this "
                                  "sample's work (does it skip when its output or inputs look "
                                  "unchanged, or compute only every Nth call?): its timings are "
                                  "not a measurement",
                                  sample, nvals);
    }
    return spot_verdict(h, L, sample, nchunks * s->len, sc.nonfinite, sc.not_close, sc.max_abs,
                        kf_cmp_spot_rel(&sc));
}

/* check_set on the GPU: every chunk of the set, one launch, the sums read
 * back; the output never leaves the device. */
static int check_set_device(hctx_guard *g, hctx *h, const loaded *L, guard_set *s, size_t sample)
{
    struct kf_devcmp *dc = hctx_devcmp(h);
    if (!dc)
        return -1;
    uint64_t at[CHUNKS];
    for (size_t c = 0; c < CHUNKS; c++)
        at[c] = s->at[c];
    kf_devcmp_part sum;
    kf_err err;
    if (kf_devcmp_chunks(dc, s->view.data, s->view.dtype, s->dref, s->view.count, at, CHUNKS,
                         s->len, &sum, &err) != KF_OK)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "%s %s: the spot check on the GPU after timed sample %zu: %s", hctx_who(h),
                         h->spec->kernel, sample, err.msg);
    g->checks++;
    double rel = sum.ref2 > 0 ? sqrt(sum.diff2 / sum.ref2) : 0;
    return spot_verdict(h, L, sample, CHUNKS * s->len, sum.nonfinite, 0, sum.max_abs, rel);
}

/* The spot check's bounds on what n checked elements gave. 0, or -1 with
 * the task failed. */
static int spot_verdict(hctx *h, const loaded *L, size_t sample, size_t n, uint64_t poison,
                        uint64_t not_close, double max_abs, double rel)
{
    (void)L;
    /* An honest output meets tol_abs at every element (validation's
     * max-abs criterion); its relative error over a few chunks can exceed
     * tol_rel where the reference is small there, so that bound is loose:
     * an output computed from other inputs is off by ~1 relative. */
    double rel_bound = fmax(0.25, 10 * h->tol.rel);
    if (poison == 0 && max_abs <= h->tol.abs && rel <= rel_bound && not_close == 0)
        return 0;
    return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                     "profile spot check failed after timed sample %zu: of %zu output elements "
                     "at secret positions, %llu were still the poison written before the sample "
                     "(or non-finite), %llu outside atol + rtol |ref|, max abs error %.3g "
                     "(tolerance %.3g), relative error %.3g (bound %.3g). The kernel passed "
                     "validation but did not do this sample's "
                     "work (does it skip when its output or inputs look unchanged, or compute "
                     "only every Nth call?): its timings are not a measurement",
                     sample, n, (unsigned long long)poison, (unsigned long long)not_close, max_abs,
                     h->tol.abs, rel, rel_bound);
}

int hctx_guard_after(hctx_guard *g, hctx *h, const loaded *L, void *const *states, size_t first,
                     size_t count, size_t sample)
{
    uint64_t t0 = kf_mono_ns();
    size_t used = count < g->nsets ? count : g->nsets;
    for (size_t i = 0; i < used; i++) {
        size_t k = (first + i) % g->nsets;
        if (check_set(g, h, L, states[k], &g->sets[k], sample) != 0)
            return -1;
    }
    g->spent_s += (double)(kf_mono_ns() - t0) / 1e9;
    return 0;
}
