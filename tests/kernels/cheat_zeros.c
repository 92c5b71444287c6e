/* cheat_zeros — a kernel that writes zeros where the right answer is tiny
 * (about 1e-5), inside a loose absolute tolerance (1e-3): the reward hack
 * of "zeros that pass an absolute tolerance". kfleet's validation also
 * checks the relative error (here 1, against 1e-6) and must fail it. For
 * kfleet's anti-cheat tests. */
#include "cheat_common.h"

static int tiny_reference(void *state, double *ref, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    st *s = state;
    for (int i = 0; i < N; i++)
        ref[i] = 1e-5 * (1.0 + s->in[i] / 1000.0);
    return 0;
}

static const kf_kernel k = {KF_KERNEL_ABI_VERSION,
                            "cheat_zeros",
                            "writes zeros inside a loose absolute tolerance",
                            1e-3,
                            1e-6,
                            1,
                            setup,
                            zeros_run,
                            output,
                            tiny_reference,
                            bytes,
                            bytes,
                            teardown};

const kf_kernel *kf_kernel_get(void)
{
    return &k;
}
