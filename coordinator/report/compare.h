/* compare — what got faster or slower between two sweeps, beyond the
 * noise, for people and for CI gates (`kfleet compare A B`).
 *
 * Rows are matched by kernel name, parameters and node; a row whose node
 * is not in the other sweep is matched by the same kernel, parameters and
 * device (GPU model or CPU), so a sweep rerun on other pods of the same
 * kind still compares. For each pair: change = median_B / median_A - 1.
 * The noise band is the two profiles' robust noises combined,
 * sqrt(noise_A^2 + noise_B^2) (each 1.4826 * MAD / median, in percent): a
 * change inside it is "same". A configuration is a regression when it is
 * slower beyond the band and by more than the threshold.
 *
 * Both sweeps are read through the report (kfleet.report/1), so the
 * medians and noises are the ones the reports show, recomputed from the
 * stored samples. */
#ifndef KF_COMPARE_H
#define KF_COMPARE_H

#include "common/buf.h"
#include "common/err.h"
#include "core/store.h"

typedef struct kf_compare_result {
    size_t pairs, faster, slower, same, regressions;
    size_t only_a, only_b; /* configurations without a counterpart */
} kf_compare_result;

/* Renders the comparison of sweep b against sweep a (the reference) as a
 * table (json = 0) or JSON ("kfleet.compare/1") into out, and fills res.
 * threshold_pct >= 0. KF_ENOTFOUND when a sweep does not exist. */
int kf_compare_render(kf_txn *t, uint32_t a, uint32_t b, double threshold_pct, int json,
                      kf_buf *out, kf_compare_result *res, kf_err *err);

#endif
