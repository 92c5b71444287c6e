/* candidate — a candidate's validate or profile in the runner
 * (docs/problems.md): the problem and the candidate loaded into one
 * kf_kernel that validate.c, profile.c and guard.c drive as they drive any
 * kernel.
 *
 * The order is the design: the problem is loaded first (setup, output,
 * inputs, tolerances, bytes, flops; its reference() is never called here),
 * then the checker is forked with the stored references of the task's seeds
 * and the problem's tolerances, on the verdict descriptor the agent gave
 * this runner (HCTX_VERDICT_FD), and only then is the candidate's code
 * loaded. Every output validation and the profile's re-checks fetch goes
 * to the checker too (validate.c); the agent reads the verdicts, so what
 * the candidate does to this process (a monkeypatched reference, a
 * reference buffer written over, a Result rewritten) cannot make a wrong
 * output pass.
 *
 * Once the checker holds the stored references, this process keeps none:
 * they are wiped (explicit_bzero) and freed before the candidate loads, so
 * a candidate that searches its memory for the answer to copy finds
 * nothing. Its validation, re-checks and the guard's spot checks take the
 * checker's answers (h->judge, h->spot); the composed kernel's reference()
 * only fails. Its setup() makes the problem's state from a seed of the
 * pool and the candidate's prepare(); run() is the candidate's. kf_kernel's callbacks
 * carry no context, so the composition is one static of this file: a
 * runner takes one candidate task and exits (the agent never keeps a
 * candidate's runner serving). */
#include "runner/hctx.h"

#include "common/taskkind.h"
#include "common/err.h"
#include "runner/artifact.h"
#include "runner/build.h"
#include "runner/checker.h"
#include "runner/pyext.h"
#include "runner/pyfiles.h"
#include "runner/pykernel.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct cand_ctx {
    const kf_kernel *problem;
    const kf_candidate *cand;    /* a C candidate; NULL for a Python one */
    kf_problem_inputs_fn inputs; /* a C problem's; NULL: the Python problem's */
    const Kfleet__TaskSpec *spec;
    kf_kernel k;
} cand_ctx;

static cand_ctx the_ctx;

typedef struct cstate {
    void *ps;     /* the problem's state */
    uint32_t ref; /* index of its seed in spec->seeds and spec->references */
    void *scratch;
    int prepared;
    kf_view in[KF_PROBLEM_MAX_INPUTS];
    size_t nin;
    kf_view out;
} cstate;

int hctx_is_candidate(const Kfleet__TaskSpec *spec)
{
    return spec && spec->problem_hash && *spec->problem_hash &&
           kf_task_kind_at(spec->kind)->needs_reference;
}

/* hctx.judge: the output of a state to the checker, against the stored
 * reference of the state's seed; its answer is the check. */
static int judge(hctx *h, const void *state, const void *out, const kf_view *v, hctx_check *c)
{
    kf_err err;
    if (kf_checker_check(h->checker, ((const cstate *)state)->ref, out, v->dtype, v->count, c,
                         &err) != KF_OK)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "candidate %s: %s", h->spec->kernel,
                         err.msg);
    return 0;
}

/* hctx.spot: the guard's spot check of a state, by the checker. */
static int spot(hctx *h, const void *state, const uint64_t *at, const double *values, size_t n,
                hctx_check *c)
{
    kf_err err;
    if (kf_checker_spot(h->checker, ((const cstate *)state)->ref, at, values, n, c, &err) != KF_OK)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "candidate %s: %s", h->spec->kernel,
                         err.msg);
    return 0;
}

static void c_teardown(void *state)
{
    cstate *cs = state;
    if (!cs)
        return;
    if (cs->prepared && the_ctx.cand && the_ctx.cand->release)
        the_ctx.cand->release(cs->scratch);
    the_ctx.problem->teardown(cs->ps);
    free(cs);
}

static int c_setup(void **state, const kf_params *p, uint64_t seed, char *err, size_t errlen)
{
    *state = NULL;
    const Kfleet__TaskSpec *sp = the_ctx.spec;
    size_t i = 0;
    while (i < sp->n_seeds && sp->seeds[i] != seed)
        i++;
    if (i == sp->n_seeds) {
        snprintf(err, errlen, "internal: a seed outside the problem's pool");
        return -1;
    }
    cstate *cs = calloc(1, sizeof *cs);
    if (!cs) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    cs->ref = (uint32_t)i;
    *state = cs;
    if (the_ctx.problem->setup(&cs->ps, p, seed, err, errlen) != 0)
        return -1;
    if (!the_ctx.cand)
        return 0; /* a Python candidate's prepare() ran in the glue's setup */
    if (the_ctx.problem->output(cs->ps, &cs->out) != 0) {
        snprintf(err, errlen, "the problem has no output view");
        return -1;
    }
    int rc = the_ctx.inputs
                 ? the_ctx.inputs(cs->ps, cs->in, KF_PROBLEM_MAX_INPUTS, &cs->nin)
                 : kf_pyk_inputs(cs->ps, cs->in, KF_PROBLEM_MAX_INPUTS, &cs->nin, err, errlen);
    if (rc != 0) {
        if (the_ctx.inputs)
            snprintf(err, errlen, "the problem's kf_problem_inputs() failed");
        return -1;
    }
    if (the_ctx.cand->prepare &&
        the_ctx.cand->prepare(&cs->scratch, p, cs->in, cs->nin, &cs->out, err, errlen) != 0)
        return -1;
    cs->prepared = 1;
    return 0;
}

static int c_run(void *state, char *err, size_t errlen)
{
    cstate *cs = state;
    if (the_ctx.cand)
        return the_ctx.cand->run(cs->scratch, cs->in, cs->nin, &cs->out, err, errlen);
    return the_ctx.problem->run(cs->ps, err, errlen); /* the glue's run is the candidate's */
}

static int c_output(void *state, kf_view *out)
{
    return the_ctx.problem->output(((cstate *)state)->ps, out);
}

/* Never the problem's reference(), which a candidate in this process
 * could have replaced, and no stored one: only the checker has those. */
static int c_reference(void *state, double *ref, char *err, size_t errlen)
{
    (void)state, (void)ref;
    snprintf(err, errlen,
             "internal: a candidate's process holds no reference; its outputs are checked by "
             "the checker");
    return -1;
}

static double c_bytes(const kf_params *p)
{
    return the_ctx.problem->bytes ? the_ctx.problem->bytes(p) : 0;
}

static double c_flops(const kf_params *p)
{
    return the_ctx.problem->flops ? the_ctx.problem->flops(p) : 0;
}

/* The problem's spec as hctx_load_kernel and the artifact check read it. */
static void problem_spec(const Kfleet__TaskSpec *sp, Kfleet__TaskSpec *ps)
{
    *ps = *sp;
    ps->kernel = sp->problem_kernel;
    ps->kernel_hash = sp->problem_hash;
    ps->artifact_hash = sp->problem_artifact_hash;
    ps->python = sp->problem_python;
    ps->device_cuda = sp->problem_cuda;
    ps->n_extension = ps->n_files = 0;
}

static int load_problem(hctx *h, loaded *P)
{
    Kfleet__TaskSpec ps;
    problem_spec(h->spec, &ps);
    kf_err err;
    int rc = kf_artifact_check(h->workdir, &ps, ps.artifact_hash, &err);
    if (rc != KF_OK && rc != KF_ENOTFOUND)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "problem %s: %s", ps.kernel, err.msg);
    const Kfleet__TaskSpec *own = h->spec;
    h->spec = &ps;
    h->loading_problem = 1;
    rc = hctx_load_kernel(h, P);
    h->loading_problem = 0;
    h->spec = own;
    return rc;
}

/* The stored references out of this process: the checker has its copy.
 * explicit_bzero, which the compiler keeps, before the free; the spec is
 * the runner's own decoded copy (harness.c), and protobuf-c allocates each
 * bytes field by itself, so each is freed alone (len 0: nothing to free
 * again when the spec is). */
static void wipe_references(const Kfleet__TaskSpec *sp)
{
    for (size_t i = 0; i < sp->n_references; i++) {
        Kfleet__Reference *r = sp->references[i];
        if (r->values.data) {
            explicit_bzero(r->values.data, r->values.len);
            free(r->values.data);
        }
        r->values.data = NULL;
        r->values.len = 0;
    }
}

static int start_checker(hctx *h, const kf_kernel *problem)
{
    const Kfleet__TaskSpec *sp = h->spec;
    size_t n = sp->n_references;
    if (n == 0 || n != sp->n_seeds)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "candidate %s: the assignment carries %zu seeds and %zu stored "
                         "references; it cannot be judged",
                         sp->kernel, sp->n_seeds, n);
    if (fcntl(HCTX_VERDICT_FD, F_GETFD) < 0)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "candidate %s: no verdict descriptor (fd %d) from the agent; the "
                         "checker has nowhere to write",
                         sp->kernel, HCTX_VERDICT_FD);
    const double **refs = calloc(n, sizeof *refs);
    size_t *counts = calloc(n, sizeof *counts);
    int rc = refs && counts ? 0 : hctx_fail(h, KFLEET__TASK_STATE__FAILED, "out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const Kfleet__Reference *r = sp->references[i];
        if (r->values.len != r->count * sizeof(double))
            rc = hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                           "stored reference %zu has %zu bytes for %llu elements", i, r->values.len,
                           (unsigned long long)r->count);
        refs[i] = (const double *)(const void *)r->values.data;
        counts[i] = (size_t)r->count;
    }
    kf_err err;
    if (rc == 0 && kf_checker_start(refs, counts, n, problem->tol_abs, problem->tol_rel,
                                    HCTX_VERDICT_FD, &h->checker, &err) != KF_OK)
        rc = hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s", err.msg);
    h->judge = judge;
    h->spot = spot;
    free(refs);
    free(counts);
    if (rc == 0)
        wipe_references(h->spec);
    return rc;
}

static int load_candidate(hctx *h, loaded *P, loaded *L)
{
    const Kfleet__TaskSpec *sp = h->spec;
    char key[65], so[PATH_MAX];
    kf_err berr;
    if (kf_build_artifact(h->workdir, sp->kernel_hash, kf_build_lang(sp), key, so, sizeof so,
                          &berr) != KF_OK)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s", berr.msg);
    if (access(so, R_OK) != 0)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "artifact %s of candidate %s not in cache; the build must run first", key,
                         sp->kernel);
    the_ctx = (cand_ctx){.problem = P->k, .spec = sp};
    if (sp->python) {
        if (!sp->problem_python)
            return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                             "candidate %s is Python and its problem %s is not: a Python "
                             "candidate runs on a Python problem's state",
                             sp->kernel, sp->problem_kernel);
        char file[256], perr[HCTX_KERR_LEN], ext[PATH_MAX] = "", mod[256] = "",
                                             files[PATH_MAX] = "";
        snprintf(file, sizeof file, "%s.py", sp->kernel);
        if (sp->n_extension) {
            kf_build_ext_dir(so, ext, sizeof ext);
            kf_pyext_module(sp, mod, sizeof mod);
        }
        if (sp->n_files)
            kf_pyfiles_dir(so, files, sizeof files);
        if (kf_pyk_load_candidate(so, file, sp->kernel, ext, mod, files, perr, sizeof perr) != 0)
            return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "%s", perr);
    } else {
        L->dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
        if (!L->dl)
            return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "cannot load %s: %s", so, dlerror());
        kf_candidate_get_fn get = (kf_candidate_get_fn)dlsym(L->dl, KF_CANDIDATE_SYMBOL);
        the_ctx.cand = get ? get() : NULL;
        if (!the_ctx.cand || the_ctx.cand->abi_version != KF_KERNEL_ABI_VERSION ||
            !the_ctx.cand->run)
            return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                             "candidate %s: %s() missing, of another ABI version, or without "
                             "run (kernels/kf_kernel.h)",
                             sp->kernel, KF_CANDIDATE_SYMBOL);
        if (!sp->problem_python) {
            the_ctx.inputs = (kf_problem_inputs_fn)dlsym(P->dl, KF_PROBLEM_INPUTS_SYMBOL);
            if (!the_ctx.inputs)
                return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                                 "problem %s does not define %s(), which names the inputs a C "
                                 "candidate reads",
                                 sp->problem_kernel, KF_PROBLEM_INPUTS_SYMBOL);
        }
    }
    the_ctx.k = (kf_kernel){.abi_version = KF_KERNEL_ABI_VERSION,
                            .name = sp->kernel,
                            .description = the_ctx.cand ? the_ctx.cand->description : "",
                            .tol_abs = P->k->tol_abs,
                            .tol_rel = P->k->tol_rel,
                            .setup = c_setup,
                            .run = c_run,
                            .output = c_output,
                            .reference = c_reference,
                            .bytes = c_bytes,
                            .flops = c_flops,
                            .teardown = c_teardown};
    L->k = &the_ctx.k;
    hctx_set_params(h, L);
    return 0;
}

int hctx_candidate_load(hctx *h, loaded *L)
{
    loaded P = {0};
    if (load_problem(h, &P) != 0)
        return -1;
    /* Before any of the candidate's code is in this process. */
    if (start_checker(h, P.k) != 0)
        return -1;
    return load_candidate(h, &P, L);
}

void hctx_candidate_finish(hctx *h)
{
    if (h->checker)
        kf_checker_finish(&h->checker);
}
