/* cheat_honest — the honest twin of the skipping cheats (cheat_sentinel,
 * cheat_input_id, cheat_every_nth): the same work and the same sleep floor
 * on every call. For kfleet's anti-cheat tests. */
#include "cheat_common.h"

static int run(void *state, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    compute_floor(state);
    return 0;
}

static const kf_kernel k = {KF_KERNEL_ABI_VERSION,
                            "cheat_honest",
                            "does its work on every call",
                            1e-6,
                            1e-6,
                            1,
                            setup,
                            run,
                            output,
                            reference,
                            bytes,
                            bytes,
                            teardown};

const kf_kernel *kf_kernel_get(void)
{
    return &k;
}
