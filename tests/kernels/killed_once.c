/* killed_once — a correct kernel whose first runner is killed with SIGKILL
 * from outside the kernel's own faults, as the out-of-memory killer does,
 * for kfleet's retry test: the runner of the first attempt (when its mark
 * file does not exist yet) creates the mark and is SIGKILLed; every later
 * runner works. With $KF_TEST_KILL_ONCE set, the mark is
 * killed-once.mark in the kernel's own cache dir (the parent of
 * $TRITON_CACHE_DIR, which a sandboxed runner may write and which outlives
 * the runner), else $KF_TEST_KILL_ONCE itself (an unsandboxed runner). */
#include "kf_kernel.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 1024
static float out[N];

static int setup(void **state, const kf_params *p, uint64_t seed, char *err, size_t errlen)
{
    (void)p, (void)seed, (void)err, (void)errlen;
    const char *mark = getenv("KF_TEST_KILL_ONCE"), *cache = getenv("TRITON_CACHE_DIR");
    char own[4096];
    if (mark && cache && strrchr(cache, '/')) {
        snprintf(own, sizeof own, "%.*s/killed-once.mark", (int)(strrchr(cache, '/') - cache),
                 cache);
        mark = own;
    }
    if (mark) {
        int fd = open(mark, O_WRONLY | O_CREAT | O_EXCL, 0600);
        if (fd >= 0) {
            close(fd);
            kill(getpid(), SIGKILL);
        }
    }
    *state = out;
    return 0;
}

static int run(void *state, char *err, size_t errlen)
{
    (void)state, (void)err, (void)errlen;
    for (int i = 0; i < N; i++)
        out[i] = (float)i;
    return 0;
}

static int output(void *state, kf_view *v)
{
    v->data = state;
    v->count = N;
    v->dtype = KF_DTYPE_F32;
    v->location = KF_LOC_HOST;
    return 0;
}

static int reference(void *state, double *ref, char *err, size_t errlen)
{
    (void)state, (void)err, (void)errlen;
    for (int i = 0; i < N; i++)
        ref[i] = i;
    return 0;
}

static double bytes(const kf_params *p)
{
    (void)p;
    return N * 4.0;
}

static void teardown(void *state)
{
    (void)state;
}

static const kf_kernel K = {KF_KERNEL_ABI_VERSION,
                            "killed_once",
                            "SIGKILLed once, then fine",
                            0,
                            0,
                            1,
                            setup,
                            run,
                            output,
                            reference,
                            bytes,
                            NULL,
                            teardown};

const kf_kernel *kf_kernel_get(void)
{
    return &K;
}
