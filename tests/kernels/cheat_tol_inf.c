/* cheat_tol_inf — writes zeros: zeros inside an infinite tolerance. A check that cannot fail is no
 * check: kfleet refuses tolerances that cannot fail (non-finite, relative >= 1) before running the
 * kernel, and fails a validation whose reference is all zeros under a relative check as vacuous
 * (agent/runner/validate.c). For kfleet's anti-cheat tests. */
#include "cheat_common.h"

#include <math.h>

static const kf_kernel k = {KF_KERNEL_ABI_VERSION,
                            "cheat_tol_inf",
                            "writes zeros: zeros inside an infinite tolerance",
                            INFINITY,
                            INFINITY,
                            1,
                            setup,
                            zeros_run,
                            output,
                            reference,
                            bytes,
                            bytes,
                            teardown};

const kf_kernel *kf_kernel_get(void)
{
    return &k;
}
