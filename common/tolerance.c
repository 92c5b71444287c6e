/* tolerance — see tolerance.h: a tolerance that passes any output is
 * refused, so that "validated" always means something could have failed. */
#include "common/tolerance.h"
#include "common/err.h"

#include <math.h>
#include <stdio.h>

int kf_tol_vacuous(double tol_abs, double tol_rel, char *why, size_t len)
{
    if (!isfinite(tol_abs) || !isfinite(tol_rel)) {
        snprintf(why, len,
                 "tol_abs = %g, tol_rel = %g: a non-finite tolerance passes any finite output, "
                 "so the check cannot fail; set the largest error a right output may have",
                 tol_abs, tol_rel);
        return KF_EINVAL;
    }
    if (tol_abs < 0 || tol_rel < 0) {
        snprintf(why, len,
                 "tol_abs = %g, tol_rel = %g: a negative tolerance fails every output; set the "
                 "largest error a right output may have (a number >= 0)",
                 tol_abs, tol_rel);
        return KF_EINVAL;
    }
    if (tol_rel >= 1) {
        snprintf(why, len,
                 "tol_rel = %g: an output of all zeros has relative error exactly 1, so a "
                 "relative tolerance >= 1 passes it and the check cannot fail; set tol_rel "
                 "below 1 (1e-5 for fp32, 1e-2 for bf16 are usual)",
                 tol_rel);
        return KF_EINVAL;
    }
    return 0;
}

int kf_tol_close_vacuous(double atol, double rtol, double tol_abs, double tol_rel, char *why,
                         size_t len)
{
    if (!isfinite(atol) || !isfinite(rtol) || atol < 0 || rtol < 0) {
        snprintf(why, len,
                 "atol = %g, rtol = %g: each is a finite number >= 0 (numpy.isclose's bound, "
                 "|out - ref| <= atol + rtol |ref|)",
                 atol, rtol);
        return KF_EINVAL;
    }
    if (rtol >= 1) {
        snprintf(why, len,
                 "rtol = %g: with rtol >= 1 every element of an output of zeros is within atol + "
                 "rtol |ref|, so the check cannot fail; set rtol below 1 (KernelBench uses 1e-4 "
                 "for fp32, 1e-2 for bf16 and fp16)",
                 rtol);
        return KF_EINVAL;
    }
    if (!(tol_abs >= 0) || !isfinite(tol_rel) || tol_rel < 0 || tol_rel >= 1) {
        snprintf(why, len,
                 "tol_abs = %g, tol_rel = %g beside atol and rtol: tol_abs is >= 0 (or inf), and "
                 "tol_rel below 1 (an output of zeros has relative error exactly 1)",
                 tol_abs, tol_rel);
        return KF_EINVAL;
    }
    return 0;
}
