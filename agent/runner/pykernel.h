/* pykernel — a Python kernel seen through kf_kernel.h, so the harness
 * drives it exactly as a compiled one: the runner loads the node's shared
 * libpython (pyenv.h), starts an interpreter with the node Python's module
 * path, imports the kernel from its cached copy through pyglue.py, and
 * hands back a kf_kernel whose callbacks call the module's setup, run,
 * output, reference, bytes, flops and teardown. A Python exception becomes
 * the callback's error, with its traceback.
 *
 * CPython is one interpreter per process, and kf_kernel's callbacks carry
 * no context pointer: the callbacks find the interpreter through one
 * static, set by kf_pyk_load. A runner runs one task and exits (with
 * _exit, see harness.c), so the interpreter is never finalized. */
#ifndef KF_PYKERNEL_H
#define KF_PYKERNEL_H

#include "kf_kernel.h"
#include "runner/pyenv.h"

#include <stddef.h>

/* Imports the kernel cached at `path` (shown in tracebacks as `filename`)
 * as module `name`; want_cuda: the sweep sent it as a device kernel (its
 * `device = "cuda"` line). ext_dir and ext_module: its torch extension's
 * build (pyext.h) and module, importable by the kernel once the build's
 * record matches the torch it imports ("" when it has none). files_dir:
 * the kernel's own files (pyfiles.h), first on sys.path so that it imports
 * its modules ("" when it has none). problem: the module is a problem
 * (docs/problems.md), which has no run() of its own. *k stays valid for
 * the process. Returns 0, or -1 with err filled. */
int kf_pyk_load(const kf_pyenv *py, const char *path, const char *filename, const char *name,
                int want_cuda, const char *ext_dir, const char *ext_module, const char *files_dir,
                int problem, const kf_kernel **k, char *err, size_t errlen);

/* After kf_pyk_load of a problem: imports the candidate at `path` beside
 * it (ext_dir, ext_module, files_dir: as kf_pyk_load's, "" for none). From
 * then on the kernel's run() is the candidate's run(s), its setup() calls
 * the candidate's prepare(s), and its reference() fails (a candidate's
 * process never computes the reference). 0, or -1 with err. */
int kf_pyk_load_candidate(const char *path, const char *filename, const char *name,
                          const char *ext_dir, const char *ext_module, const char *files_dir,
                          char *err, size_t errlen);

/* The problem's inputs(s) for a state of the loaded problem: at most max
 * views into in, *n of them. 0, or -1 with err. */
int kf_pyk_inputs(void *state, kf_view *in, size_t max, size_t *n, char *err, size_t errlen);

/* A warm interpreter (runner/warm.h): starts this process's interpreter
 * with the module path filtered (no relative entry, none inside or above
 * `unsafe`, the agent's work dir, none that others may write) and imports
 * from it the packages kernels use that are installed (numpy, torch,
 * triton), refusing one whose files lie under `unsafe`. No kernel is
 * loaded and no CUDA initialized. *imported: the names, space-separated.
 * A later kf_pyk_load in a process forked from this one takes the
 * interpreter with the whole module path back. 0, or -1 with err. */
int kf_pyk_warm(const kf_pyenv *py, const char *unsafe, char *imported, size_t implen, char *err,
                size_t errlen);

/* In the warm interpreter: pywarm.py's learn_launchers on a kernel's kept
 * cache dir; *built, how many launchers it built ("0" when none). 0, or
 * -1 with err. */
int kf_pyk_warm_learn(const char *kcache, char *built, size_t builtlen, char *err, size_t errlen);

/* Around a fork(2) of a process with an interpreter (PyOS_BeforeFork and
 * friends; nothing without one); in the child, the numpy and random
 * generators are reseeded. */
void kf_pyk_before_fork(void);
void kf_pyk_after_fork_parent(void);
void kf_pyk_after_fork_child(void);

/* kf_kernel.h's kf_tolerances for the loaded Python kernel: its tol_abs,
 * tol_rel, atol and rtol, changed for this configuration and dtype by its
 * tolerances(params, dtype) where it defines one (pyglue.py). */
int kf_pyk_tolerances(const kf_params *params, kf_dtype out, kf_tol *t, char *err, size_t errlen);
/* The loaded kernel's reference() for a state, written as f32 into ref (the
 * output's element count): for a reference kept in f32 (reffile.h). 0, or
 * -1 with err. */
int kf_pyk_reference_f32(void *state, float *ref, char *err, size_t errlen);
/* Whether the loaded kernel states any (atol, rtol or tolerances()): else
 * its tol_abs and tol_rel are all. */
int kf_pyk_per_config(void);

/* Fresh contents for the inputs of a problem's state (issue 43 item 3):
 * the problem's setup() alone makes states from seed (and seed2, for a
 * fresh mix), or ones it made serve again, and their arrays are copied
 * into the state's own, in place: a pool seed's (pool) as they are, fresh
 * ones mixed (pyglue.py refresh). *used: how many of seed, seed2 reached
 * setup() (0, 1 or 2), for the agent to scrub them from the task's text.
 * 0, or -1 with err. */
int kf_pyk_refresh(void *state, uint64_t seed, uint64_t seed2, int pool, int *used, char *err,
                   size_t errlen);
/* Whether the loaded problem lets its candidates' timed samples run on
 * fresh inputs (it does unless it says fresh_inputs = False). */
int kf_pyk_fresh_inputs(void);

/* Writes out what the kernel printed that Python still holds (sys.stdout
 * and sys.stderr are block-buffered on the agent's pipe, and a runner
 * with an interpreter leaves by _exit): before each Result, so that a
 * task's output comes with it. Nothing without an interpreter. */
void kf_pyk_flush(void);

#endif
