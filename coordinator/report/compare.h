/* compare — two sweeps side by side for people and for CI gates
 * (`kfleet compare A B`): correctness first, then what got faster or
 * slower beyond the noise.
 *
 * Configurations are matched by kernel name, parameters and node; one whose
 * node is not in the other sweep is matched by the same kernel, parameters
 * and device (GPU model or CPU), so a sweep rerun on other pods of the same
 * kind still compares. In two sweeps of a problem (docs/problems.md) a row
 * is a candidate, and candidates pair by what they are: first the same name
 * and source hash, then the same source under another name (renamed or
 * moved: the pair says so), then the same name with another source (edited);
 * each pass over all of B before the next. A `nodes: any` sweep's baseline
 * has a row on each node that ran a candidate of its configuration (issue
 * 41): its rows pair by node as any, and one on a node the other sweep
 * lacks, its configuration compared on another node, is left out rather
 * than called missing. A candidate's new source is not a
 * changed check there (the problem judges it, not the candidate), but
 * another problem hash is: every pair that passes is then "changed". A configuration passes when
 * every task of it (its validation, its profile) succeeded. Then, per configuration:
 *  - passed in A, and in B failed, crashed, timed out, was skipped or is
 *    missing: **broken**, a regression, listed first with B's reason;
 *  - failing in both: reported as such, no regression;
 *  - failed in A, passes in B: fixed;
 *  - passing in both: change = median_B / median_A - 1 against the noise
 *    band sqrt(noise_A^2 + noise_B^2) (each 1.4826 * MAD / median, %): inside
 *    it "same", else faster or slower; slower by more than the threshold
 *    is a regression. Where three configurations or more pass in both with
 *    the same kernel source (the same code run twice, or the kernels an A/B
 *    left alone), the machine's own shift between the runs or nodes is
 *    known: the median of their changes (in logs), and their spread around
 *    it (1.4826 * MAD). Every change is then judged as its ratio over that
 *    shift, the spread joining the band: a run on which every kernel alike
 *    ran 20 % slower (a busy host, another node) is not a regression of
 *    each; the shift is shown, and the most a control moved against it:
 *    a change of other code within that is not told apart from the
 *    machine (its band is at least that). A control that moved beyond its
 *    band on the same machine in both sweeps (the provenance's host, CPU,
 *    GPU, driver, agent and binary the same) is "same code, moved": what
 *    the machine varied between the runs, not a change and never a
 *    regression (issue 43 item 5: the same code never exits 1). On
 *    another machine, or where a side's provenance is not known, it is
 *    judged as any pair: a slower node or driver is worth a verdict;
 *  - only in B: new; a task not ended: no verdict.
 * What B passes with is never called an improvement when it cannot be one
 * (issue 29), and each is a regression (exit 1) saying why:
 *  - impossible: either side's row is flagged impossible (faster than its
 *    node can move its declared bytes or do its declared FLOPs);
 *  - changed: the kernel's tolerances differ between A and B, or its source
 *    hash does (the kernel brings its own reference and inputs, so a new
 *    source may be judged by another check). KF_COMPARE_ACCEPT_SOURCE
 *    (`--accept-changed-source`) judges a changed source on time, as an A/B
 *    of two versions whose tolerances are the same; tolerances and
 *    impossible rows still are regressions.
 * No configuration in common is an error (KF_EINVAL): nothing was compared.
 *
 * Both sweeps are read through the report's model (report_model.h: the
 * tree the JSON is written from), so the medians, noises and states are the
 * ones the reports show. */
#ifndef KF_COMPARE_H
#define KF_COMPARE_H

#include "common/buf.h"
#include "common/err.h"
#include "core/store.h"

typedef struct kf_compare_result {
    size_t pairs; /* configurations found in both */
    size_t broken, slower, impossible, changed, both_failing, fixed, faster, moved, same, only_b,
        pending;
    size_t regressions; /* broken + slower + impossible + changed */
    /* The machine's shift from A to B (compare.h), from machine_controls
     * configurations of the same source; 0 controls: none known (0, 0). */
    size_t machine_controls;
    double machine_shift_pct, machine_spread_pct;
    /* The most a control moved against the shift, % (0: none known). */
    double machine_moved_pct;
} kf_compare_result;

typedef enum { KF_COMPARE_TABLE = 0, KF_COMPARE_MD, KF_COMPARE_JSON } kf_compare_format;

/* Renders the comparison of sweep b against sweep a (the reference) into
 * out as a table, Markdown or JSON ("kfleet.compare/2"), and fills res.
 * threshold_pct >= 0. KF_ENOTFOUND when a sweep does not exist, KF_EINVAL
 * when they have no configuration in common. */
#define KF_COMPARE_ACCEPT_SOURCE 1u /* a changed kernel source is judged on time */
int kf_compare_render(kf_txn *t, uint32_t a, uint32_t b, double threshold_pct, unsigned flags,
                      kf_compare_format fmt, kf_buf *out, kf_compare_result *res, kf_err *err);

#endif
