/* cheat_bytes — honest work, dishonest traffic: it declares a petabyte moved
 * per run, so its GB/s would be millions of times what the host's memory
 * can move. kfleet's report flags the row impossible (against the host's
 * measured copy ceiling) and shows no speedup for it. For kfleet's
 * anti-cheat tests. */
#include "cheat_common.h"

static int run(void *state, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    compute(state);
    return 0;
}

static double petabyte(const kf_params *p)
{
    (void)p;
    return 1e15;
}

static const kf_kernel k = {KF_KERNEL_ABI_VERSION,
                            "cheat_bytes",
                            "declares a petabyte per run",
                            1e-6,
                            1e-6,
                            1,
                            setup,
                            run,
                            output,
                            reference,
                            petabyte,
                            bytes,
                            teardown};

const kf_kernel *kf_kernel_get(void)
{
    return &k;
}
