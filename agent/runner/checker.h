/* checker — the judgement of a candidate's outputs in a process of its own
 * (docs/problems.md): the runner forks it, with the problem's stored
 * references and tolerances, BEFORE it loads the candidate's code. After
 * that the runner (and the candidate in it) only sends outputs down a pipe;
 * the checker compares each with its own copy of the reference (the
 * runner's same comparison, hctx_compare) and writes its verdict on a
 * descriptor the runner gave away at the fork, which the candidate's process
 * then no longer holds. A candidate that writes over the reference in its
 * own process, or over the comparison code there, changes neither the
 * checker's data nor its verdicts.
 *
 * Verdicts are text lines on verdict_fd, one per check:
 *   check SEQ ref I pass 0|1 nonfinite N max_abs X rel Y
 * (I out of range: "check SEQ ref I bad"), and at the end
 *   done checks N failed F
 * The agent is the reader that makes them binding (agent/runners.c).
 *
 * The runner gets each verdict back too, as its own answer (a pipe only
 * the checker writes): the candidate's process keeps no reference to
 * compare with (candidate.c wipes its copy once the checker has one), so
 * its validation, its re-checks and the guard's per-sample spot checks all
 * take the checker's answers. */
#ifndef KF_CHECKER_H
#define KF_CHECKER_H

#include "common/err.h"
#include "kf_kernel.h"
#include "runner/hctx.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct kf_checker kf_checker;

/* Forks the checker with nrefs references (refs[i] of counts[i] doubles)
 * and the problem's tolerances. It takes verdict_fd: the caller's copy is
 * closed here, after the fork. Call it before any candidate code is loaded.
 * Returns 0 with *out, or a KF_E* code with err filled (verdict_fd closed). */
int kf_checker_start(const double *const *refs, const size_t *counts, size_t nrefs, double tol_abs,
                     double tol_rel, int verdict_fd, kf_checker **out, kf_err *err);

/* Sends one output (count elements of dtype, host memory) to be checked
 * against reference ref_index, and waits for the checker's answer: *ans as
 * hctx_compare fills it, `passed` by the problem's tolerances. The verdict
 * line goes to the agent too. KF_EIO when the checker is gone, KF_EINVAL
 * when the output is not the reference's size or ref_index is none. */
int kf_checker_check(kf_checker *c, uint32_t ref_index, const void *out, kf_dtype dtype,
                     size_t count, hctx_check *ans, kf_err *err);

/* The guard's spot check (guard.c): n <= 256 output values (as doubles) at
 * element positions `at` against reference ref_index. *ans: nonfinite
 * values, max_abs and rel (relative L2) over the finite ones, ref_nonzero;
 * `passed` is 0 (the guard applies its own bounds). No verdict line: a spot
 * check is not one of the outputs the agent counts. KF_EIO when the checker
 * is gone, KF_EINVAL for a position past the output. */
int kf_checker_spot(kf_checker *c, uint32_t ref_index, const uint64_t *at, const double *values,
                    size_t n, hctx_check *ans, kf_err *err);

/* Ends the checker (it writes its summary line and exits), waits for it,
 * frees c and NULLs the pointer. Returns its exit status, -1 when it died
 * of a signal. */
int kf_checker_finish(kf_checker **c);

#endif
