/* candidate — a candidate's validate or profile in the runner
 * (docs/problems.md): the problem and the candidate loaded into one
 * kf_kernel that validate.c, profile.c and guard.c drive as they drive any
 * kernel.
 *
 * This process holds no reference and no tolerance that judges: the
 * checker does (checker.h), a process the agent started beside this
 * runner, outside its process tree and sandbox, with the references from
 * the agent's store. This process only reaches it on its socket
 * (KF_RUNNER_FD_CHECKER): every output validation and the profile's
 * re-checks fetch goes there (h->judge), and so do the guard's spot checks
 * (h->spot), and each gets PASS or FAIL back, nothing that depends on a
 * reference value; the numbers go to the agent. The composed kernel's
 * reference() only fails. Its setup() makes the problem's state from a
 * seed of the pool and the candidate's prepare(); run() is the
 * candidate's. kf_kernel's callbacks carry no context, so the composition
 * is one static of this file, and a runner holds one candidate: a serving
 * runner (harness.h) takes the same candidate's next task of the same
 * problem (its profile after its validate) with hctx_candidate_resume, a
 * new checker's socket passed with that task, and never another's. */
#include "runner/hctx.h"

#include "common/taskkind.h"
#include "common/taskspec.h"
#include "common/err.h"
#include "common/util.h"
#include "common/xalloc.h"
#include "runner/artifact.h"
#include "runner/build.h"
#include "runner/checker.h"
#include "runner/pyext.h"
#include "runner/pyfiles.h"
#include "runner/pykernel.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
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
    int fresh; /* the problem lets timed samples run on fresh inputs (hctx.refresh) */
    hctx *h;   /* the task's, for note_fresh */
    /* The candidate and problem this process holds: hctx_candidate_resume
     * refuses any other. */
    char kernel_hash[128], problem_hash[128];
    kf_checker_stage stage; /* the last task's shared buffer, for the next (checker.h) */
} cand_ctx;

static cand_ctx the_ctx;

/* cstate.ref of a state whose inputs came from a seed outside the pool
 * (a profile's fresh inputs): no reference judges it. */
#define NO_REF UINT32_MAX

typedef struct cstate {
    void *ps;     /* the problem's state */
    uint32_t ref; /* index of its seed in spec->seeds and spec->references, or NO_REF */
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
 * reference of the state's seed; its PASS or FAIL is the check. The
 * measures stay the checker's (the agent puts them in the Result). */
static int judge(hctx *h, const void *state, const void *out, const kf_view *v, hctx_check *c)
{
    kf_err err;
    int passed = 0;
    if (((const cstate *)state)->ref == NO_REF)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "internal: candidate %s's state on fresh inputs was to be checked",
                         h->spec->kernel);
    if (kf_checker_check(h->checker, ((const cstate *)state)->ref, out, v->dtype, v->count, &passed,
                         &err) != KF_OK)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "candidate %s: %s", h->spec->kernel,
                         err.msg);
    *c = (hctx_check){
        .nonfinite = 0, .ref_nonzero = 1, .max_abs = NAN, .rel = NAN, .passed = passed};
    return 0;
}

/* hctx.spot: the guard's spot check of a state, by the checker. */
static int spot(hctx *h, const void *state, const uint64_t *at, const double *values, size_t n,
                int *passed)
{
    kf_err err;
    if (kf_checker_spot(h->checker, ((const cstate *)state)->ref, at, values, n, passed, &err) !=
        KF_OK)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "candidate %s: %s", h->spec->kernel,
                         err.msg);
    return 0;
}

/* hctx.spot_blind: fresh inputs have no reference; the profile checks such
 * a set after it has put a pool seed's inputs back (an audit). */
static int spot_blind(const void *state)
{
    return ((const cstate *)state)->ref == NO_REF;
}

/* hctx.out_buffer: the checker's buffer, which kf_checker_check sees the
 * output is already in. NULL when it cannot be made: the output is then
 * fetched to the runner's own buffer and the check says why it fails. */
static void *out_buffer(hctx *h, size_t bytes)
{
    kf_err err;
    return kf_checker_buffer(h->checker, bytes, &err);
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

/* A seed outside the pool that made a state's inputs: the agent scrubs it
 * from the task's text (Result.fresh_seeds), as it scrubs the pool's. */
static void note_fresh(hctx *h, uint64_t seed)
{
    if (h->nfresh_seeds == h->capfresh_seeds) {
        h->capfresh_seeds = h->capfresh_seeds ? 2 * h->capfresh_seeds : 64;
        h->fresh_seeds = kf_xrealloc(h->fresh_seeds, h->capfresh_seeds * sizeof *h->fresh_seeds);
    }
    h->fresh_seeds[h->nfresh_seeds++] = seed;
}

static int c_setup(void **state, const kf_params *p, uint64_t seed, char *err, size_t errlen)
{
    *state = NULL;
    const Kfleet__TaskSpec *sp = the_ctx.spec;
    size_t i = 0;
    while (i < sp->n_seeds && sp->seeds[i] != seed)
        i++;
    if (i == sp->n_seeds && !the_ctx.fresh) {
        snprintf(err, errlen, "internal: a seed outside the problem's pool");
        return -1;
    }
    cstate *cs = calloc(1, sizeof *cs);
    if (!cs) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    cs->ref = i == sp->n_seeds ? NO_REF : (uint32_t)i;
    if (cs->ref == NO_REF)
        note_fresh(the_ctx.h, seed);
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

/* hctx.refresh: new contents for a state's inputs, made by the problem's
 * setup() alone from a seed the candidate cannot know (pool < 0: an
 * unpredictable one, judged by nothing) or from the pool's seed `pool`
 * (an audit: judged against its stored reference). */
static int refresh(hctx *h, void *state, int pool)
{
    cstate *cs = state;
    const Kfleet__TaskSpec *sp = h->spec;
    if (pool >= (int)sp->n_seeds)
        pool = -1;
    uint64_t seed = pool >= 0 ? sp->seeds[pool] : kf_unpredictable_u64();
    uint64_t seed2 = pool >= 0 ? 0 : kf_unpredictable_u64();
    char err[HCTX_KERR_LEN] = "";
    int used = 0;
    /* Noted before the call: a setup() that fails may print its seed. */
    if (pool < 0) {
        note_fresh(h, seed);
        note_fresh(h, seed2);
    }
    int rc = kf_pyk_refresh(cs->ps, seed, seed2, pool >= 0, &used, err, sizeof err);
    if (rc != 0)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "problem %s: %s", sp->problem_kernel,
                         err); /* the agent scrubs seeds from errors (agent/results.c) */
    /* Seeds no setup() saw (kept states served) need no scrubbing. */
    if (pool < 0)
        h->nfresh_seeds -= (size_t)(2 - used);
    cs->ref = pool >= 0 ? (uint32_t)pool : NO_REF;
    return 0;
}

static int load_problem(hctx *h, loaded *P)
{
    Kfleet__TaskSpec ps;
    kf_taskspec_problem(h->spec, &ps); /* as hctx_load_kernel and the artifact check read it */
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

/* The checker the agent started for this task, on its socket. */
static int start_checker(hctx *h)
{
    const Kfleet__TaskSpec *sp = h->spec;
    if (sp->n_references == 0 || sp->n_references != sp->n_seeds)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "candidate %s: the assignment carries %zu seeds and %zu stored "
                         "references; it cannot be judged",
                         sp->kernel, sp->n_seeds, sp->n_references);
    kf_err err;
    h->checker = kf_checker_connect(KF_RUNNER_FD_CHECKER, &err);
    if (!h->checker)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED, "candidate %s: %s", sp->kernel, err.msg);
    kf_checker_adopt(h->checker, &the_ctx.stage); /* this runner's last task's, this candidate's */
    h->judge = judge;
    h->spot = spot;
    h->spot_blind = spot_blind;
    h->out_buffer = out_buffer;
    return 0;
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
    /* Asked before the candidate is imported beside the problem, which could
     * change the module's attribute. */
    int fresh = h->spec->problem_python && kf_pyk_fresh_inputs();
    if (start_checker(h) != 0)
        return -1;
    if (load_candidate(h, &P, L) != 0)
        return -1;
    the_ctx.fresh = fresh;
    the_ctx.h = h;
    h->refresh = fresh ? refresh : NULL;
    snprintf(the_ctx.kernel_hash, sizeof the_ctx.kernel_hash, "%s",
             h->spec->kernel_hash ? h->spec->kernel_hash : "");
    snprintf(the_ctx.problem_hash, sizeof the_ctx.problem_hash, "%s", h->spec->problem_hash);
    return 0;
}

int hctx_candidate_resume(hctx *h, int have_checker)
{
    const Kfleet__TaskSpec *sp = h->spec;
    if (!the_ctx.problem || !sp->kernel_hash || strcmp(sp->kernel_hash, the_ctx.kernel_hash) != 0 ||
        strcmp(sp->problem_hash, the_ctx.problem_hash) != 0)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "internal: a runner holding candidate %.16s of problem %.16s was handed "
                         "candidate %.16s of problem %.16s",
                         the_ctx.kernel_hash, the_ctx.problem_hash,
                         sp->kernel_hash ? sp->kernel_hash : "?", sp->problem_hash);
    /* Never whatever descriptor the last task's code left at the checker's
     * number: only the socket the agent passed with this task. */
    if (!have_checker)
        return hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                         "candidate %s: its task came to a serving runner without its checker's "
                         "socket",
                         sp->kernel);
    if (start_checker(h) != 0)
        return -1;
    /* The first task's answer to whether fresh inputs are allowed: asked
     * again now, the candidate (imported since) could give it. */
    the_ctx.spec = sp;
    the_ctx.k.name = sp->kernel; /* the last task's spec is freed */
    the_ctx.h = h;
    h->refresh = the_ctx.fresh ? refresh : NULL;
    return 0;
}

void hctx_candidate_finish(hctx *h)
{
    if (h->checker && kf_checker_finish_keep(&h->checker, &the_ctx.stage) != KF_OK &&
        h->res->state == KFLEET__TASK_STATE__SUCCEEDED)
        hctx_fail(h, KFLEET__TASK_STATE__FAILED,
                  "candidate %s: its checker did not answer the end of its checks",
                  h->spec->kernel);
}
