/* tolerance — the one rule for a check that cannot fail (issue 29), used
 * where the tolerances are first known: at submit for a Python kernel
 * (coordinator/core/sweep_python.c reads them from its source), in the
 * runner for every kernel before it validates or profiles it
 * (agent/runner/validate.c). */
#ifndef KF_TOLERANCE_H
#define KF_TOLERANCE_H

#include <stddef.h>

/* 0 when a validation under tol_abs (max absolute error) and tol_rel
 * (relative L2 error) can fail; KF_EINVAL with why (a sentence, no
 * trailing period) when it cannot or the value makes no sense: a
 * non-finite or negative tolerance, or tol_rel >= 1, which an output of
 * zeros meets (its relative error is exactly 1). */
int kf_tol_vacuous(double tol_abs, double tol_rel, char *why, size_t len);

/* The same for a check that also states numpy.isclose's element-wise bound
 * |out - ref| <= atol + rtol |ref| (issue 41): atol and rtol finite and
 * >= 0, rtol below 1 (with rtol >= 1 every element of an output of zeros
 * is within its bound); tol_abs >= 0 and may be infinite (the element-wise
 * bound takes its place), tol_rel finite and below 1 (what fails an output
 * of zeros where atol alone would let it pass). */
int kf_tol_close_vacuous(double atol, double rtol, double tol_abs, double tol_rel, char *why,
                         size_t len);

#endif
