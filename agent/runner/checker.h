/* checker — a candidate's outputs judged by a process the candidate can
 * neither reach nor learn from (docs/problems.md, issues 41 and 43).
 *
 * The agent starts it (`kfleet-agent --checker`, agent/checkers.h) beside a
 * candidate's runner, not from it: it is outside the candidate's process
 * tree, user namespace and Landlock domain, not dumpable (no ptrace, no
 * /proc/PID/mem for a process of its user without CAP_SYS_PTRACE), and
 * holds the only copy of the references (the agent's files, opened by the
 * agent, mapped read-only, their digests checked) and the problem's
 * tolerances (from the stored references' records, never from the
 * candidate's process). It then confines itself (a sandbox granting no
 * file) and serves the runner on a socket:
 *
 *   - an output to check is put in a buffer the runner shares with it (a
 *     memfd it maps read-only), the runner sends which reference it is
 *     against, and the checker answers PASS or FAIL, nothing else: no
 *     error, no element, no value that depends on the reference; its
 *     numbers (max abs and relative errors, the worst element of each
 *     bound) go only to the agent, on a pipe the candidate does not hold;
 *   - the guard's spot check after each timed sample sends the values at
 *     its secret positions and gets PASS or FAIL; a failed spot check is a
 *     verdict the agent counts (it fails the task);
 *   - the runner's FINISH gets the summary written before the answer, so
 *     that every verdict is on the agent's pipe when the runner's Result
 *     arrives.
 * A candidate that holds the socket can therefore send outputs of its
 * choosing and learn one bit each, and its first FAIL fails its task: it
 * cannot search for the reference. A checker that dies or is killed
 * leaves no "done" line: the agent fails the task.
 *
 * Its descriptors: 0 its configuration, text lines
 *     tol ABS REL CLOSE ATOL RTOL
 *     ref COUNT DIGEST VERIFY      (one per reference, in the task's order)
 * 3 its socket to the runner (SOCK_SEQPACKET), 4 the verdict pipe, 5 on the
 * reference files in that order. Its verdict lines:
 *     verified DIGEST              (a file hashed whole and found right)
 *     damaged DIGEST WHY           (a file that is not its digest: dropped)
 *     error WHY                    (it cannot judge: the task fails)
 *     check SEQ ref I pass P nonfinite N max_abs X rel Y not_close K
 *     check SEQ ref I bad          (not the problem's output)
 *     why SEQ SENTENCE             (after a failed check: the bound broken)
 *     spot SEQ ref I fail ...      (a failed spot check, with why)
 *     done checks N failed F spots S spot_failed G */
#ifndef KF_CHECKER_H
#define KF_CHECKER_H

#include "common/err.h"
#include "kf_kernel.h"

#include <stddef.h>
#include <stdint.h>

#define KF_CHECKER_FD_SOCK 3
#define KF_CHECKER_FD_VERDICTS 4
#define KF_CHECKER_FD_REFS 5
/* The most references a checker takes: a seed pool's largest. */
#define KF_CHECKER_MAX_REFS 64
/* The most elements of one spot check. */
#define KF_CHECKER_SPOT_MAX 256

/* The checker process (`kfleet-agent --checker`): returns its exit status
 * (0 after FINISH or the runner's end, 1 when it could not start). */
int kf_checker_main(void);

/* ---- the runner's side ---- */

typedef struct kf_checker kf_checker;

/* The checker on the runner's socket fd (channel.h's KF_RUNNER_FD_CHECKER),
 * taken over (closed by kf_checker_finish). NULL with err. */
kf_checker *kf_checker_connect(int fd, kf_err *err);

/* Sends one output (count elements of dtype, host memory; copied into the
 * shared buffer unless it is already there) to be judged against
 * reference ref_index; *passed is the checker's answer. KF_EIO when the
 * checker is gone, KF_EINVAL when it says the output is not the problem's
 * (another element count, or no such reference). */
int kf_checker_check(kf_checker *c, uint32_t ref_index, const void *out, kf_dtype dtype,
                     size_t count, int *passed, kf_err *err);

/* The shared buffer with room for `bytes` (made and sent to the checker
 * when the last one is smaller): an output put there is not copied again
 * by kf_checker_check. Valid until the next call that needs more room or
 * kf_checker_finish. NULL with err. */
void *kf_checker_buffer(kf_checker *c, size_t bytes, kf_err *err);

/* The guard's spot check: n <= KF_CHECKER_SPOT_MAX output values (as
 * doubles) at element positions `at` against reference ref_index, under
 * the spot bounds (every value finite and within the absolute and close
 * tolerances, the chunks' relative error under max(0.25, 10 tol_rel)). */
int kf_checker_spot(kf_checker *c, uint32_t ref_index, const uint64_t *at, const double *values,
                    size_t n, int *passed, kf_err *err);

/* Every output sent: the checker writes its summary, answers, and leaves.
 * Frees c and NULLs the pointer. 0, or KF_EIO when it did not answer. */
int kf_checker_finish(kf_checker **c);

/* The shared buffer kept from one task's checker to the next task's in the
 * same runner, which serves one candidate (its validation, then that
 * configuration's profile): a gigabyte buffer's pages are not made again
 * (8.6 GB: 1.7 s on 8 threads of an H200 host). It holds only that
 * candidate's outputs. Empty while p is NULL ({0} is empty). */
typedef struct kf_checker_stage {
    int mfd;
    void *p;
    size_t len;
} kf_checker_stage;

/* kf_checker_finish, the buffer moved into *keep (what *keep held freed)
 * instead of unmapped; *keep unchanged when c had none. */
int kf_checker_finish_keep(kf_checker **c, kf_checker_stage *keep);

/* A kept buffer given to c, sent to its checker with its first output;
 * *keep emptied. Nothing when *keep is empty. */
void kf_checker_adopt(kf_checker *c, kf_checker_stage *keep);

#endif
