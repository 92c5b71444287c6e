/* cheat_tol_huge — writes zeros: zeros inside tol_abs 1e30 and tol_rel 1. A check that cannot fail
 * is no check: kfleet refuses tolerances that cannot fail (non-finite, relative >= 1) before
 * running the kernel, and fails a validation whose reference is all zeros under a relative check as
 * vacuous (agent/runner/validate.c). For kfleet's anti-cheat tests. */
#include "cheat_common.h"

#include <math.h>

static const kf_kernel k = {KF_KERNEL_ABI_VERSION,
                            "cheat_tol_huge",
                            "writes zeros: zeros inside tol_abs 1e30 and tol_rel 1",
                            1e30,
                            1.0,
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
