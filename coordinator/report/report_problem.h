/* report_problem — the problem side of a leaderboard (issue 30): in a
 * problem sweep (docs/problems.md) the rows are the candidates, judged
 * against the problem's reference, and the report says what that reference
 * is: the problem's name and source hash and its seed policy (pool size,
 * renewal, the pool generation in the store, the stored references and
 * their generations). Never a seed: the pool's seeds are read to learn its
 * generation and dropped at once, and a candidate row's validation trials
 * are written without theirs (report_json.c). */
#ifndef KF_REPORT_PROBLEM_H
#define KF_REPORT_PROBLEM_H

#include "common/err.h"
#include "report/report_rows.h"

/* Fills r->problem from the sweep and the store (its seedpools and refs
 * tables) and drops any row of the problem itself: the problem is the
 * judge, not a candidate. A sweep of plain kernels is left as it is
 * (r->problem.k NULL). Returns 0, or the store's error with err filled. */
int kf_rep_problem_collect(rep *r, kf_err *err);

/* "pool of 8 seeds, renewed every 3600 s, generation 2" (or "never
 * renewed", "no pool stored yet"), the policy as every format words it. */
void kf_rep_seed_policy(const rproblem *p, char *out, size_t len);

/* "12 references stored for 4 configurations", then, where the sweep
 * overrides the problem's tolerances, "; tolerances: the sweep's atol
 * 0.01, rtol 0.01 for the problem's". */
void kf_rep_problem_refs(const rep *r, char *out, size_t len);

/* Whether row w is the problem's own (a task of the problem's kernel). */
int kf_rep_is_problem_row(const rep *r, const rrow *w);

#endif
