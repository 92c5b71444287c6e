/* report_rank — the leaderboard (issue 30): each row's rank among the rows
 * of the same configuration (the same parameters, whatever the kernel) on
 * the same device (GPU model, or "cpu"), fastest first: by speedup where
 * the configuration's rows have speedups (each against the baseline on its
 * own node, report_speedup.c: rank and speedup then compare the same
 * medians, issue 41), else by median. A row is ranked when its validation
 * (if it had one) passed, its profile succeeded with samples and it is not
 * impossible, and, in a configuration ranked by speedup, it has one; the
 * others have rank 0 and come last. With `--group-by config` the rows are
 * also ordered that way: configuration, device, rank. */
#ifndef KF_REPORT_RANK_H
#define KF_REPORT_RANK_H

#include "report/report_rows.h"

/* Sets every row's rank; reorders the rows when r->group_by is
 * KF_GROUP_CONFIG. */
void kf_rep_rank(rep *r);

/* The row's verdict as every format writes it: "passed", or the kind and
 * state of the first of its tasks (validate, profile) that did not
 * succeed: "validate failed", "profile timed_out", "validate pending". */
void kf_rep_verdict(const rrow *w, char *out, size_t len);

#endif
