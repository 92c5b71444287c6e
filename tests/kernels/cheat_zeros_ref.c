/* cheat_zeros_ref — writes zeros: a reference of zeros for its zeros. A check that cannot fail is
 * no check: kfleet refuses tolerances that cannot fail (non-finite, relative >= 1) before running
 * the kernel, and fails a validation whose reference is all zeros under a relative check as vacuous
 * (agent/runner/validate.c). For kfleet's anti-cheat tests. */
#include "cheat_common.h"

#include <math.h>

static const kf_kernel k = {KF_KERNEL_ABI_VERSION,
                            "cheat_zeros_ref",
                            "writes zeros: a reference of zeros for its zeros",
                            1e-6,
                            1e-6,
                            1,
                            setup,
                            zeros_run,
                            output,
                            zero_reference,
                            bytes,
                            bytes,
                            teardown};

const kf_kernel *kf_kernel_get(void)
{
    return &k;
}
