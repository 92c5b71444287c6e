/* cheat_side_thread — the host's side stream: run() hands the work to a
 * thread of its own and returns at once; output() waits for that thread, so
 * the output is right whenever the harness reads it (validation and the
 * profile's re-checks pass) while a clock around run() alone sees almost
 * nothing. The GPU form is work on a non-blocking stream
 * (tests/kernels/cuda/cheat_side_stream.cu). kfleet's profile must time
 * the work anyway and flag it (outside-stream). For kfleet's anti-cheat
 * tests. */
#include "cheat_common.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define REPS 32 /* about a millisecond of work: well above the probe's 20 us */
/* The thread also sleeps: a floor under every sample's time that a busy
 * machine can lengthen but never shorten, so test_cheats.sh asserts the
 * samples include the thread's work against a bound, not against a second
 * noisy clock. */
#define SLEEP_NS 2000000L

typedef struct {
    st *s;
    pthread_t worker;
    int busy;
} side;

static void *work(void *arg)
{
    st *s = arg;
    for (int r = 0; r < REPS; r++) {
        compute(s);
        __asm__ volatile("" : : "r"(s->out) : "memory"); /* every repetition is done */
    }
    struct timespec ts = {0, SLEEP_NS};
    while (nanosleep(&ts, &ts) != 0) {
    }
    return NULL;
}

static void wait_worker(side *d)
{
    if (d->busy)
        pthread_join(d->worker, NULL);
    d->busy = 0;
}

static int side_setup(void **state, const kf_params *p, uint64_t seed, char *err, size_t errlen)
{
    side *d = calloc(1, sizeof *d);
    if (!d || setup((void **)&d->s, p, seed, err, errlen) != 0) {
        free(d);
        return -1;
    }
    *state = d;
    return 0;
}

static int side_run(void *state, char *err, size_t errlen)
{
    side *d = state;
    wait_worker(d);
    if (pthread_create(&d->worker, NULL, work, d->s) != 0) {
        snprintf(err, errlen, "cannot start a thread");
        return -1;
    }
    d->busy = 1;
    return 0; /* "done" */
}

static int side_output(void *state, kf_view *v)
{
    side *d = state;
    wait_worker(d);
    return output(d->s, v);
}

static int side_reference(void *state, double *ref, char *err, size_t errlen)
{
    return reference(((side *)state)->s, ref, err, errlen);
}

static double side_bytes(const kf_params *p)
{
    return bytes(p) * REPS;
}

static void side_teardown(void *state)
{
    side *d = state;
    if (!d)
        return;
    wait_worker(d);
    teardown(d->s);
    free(d);
}

static const kf_kernel k = {KF_KERNEL_ABI_VERSION,
                            "cheat_side_thread",
                            "computes on a thread of its own after run() returns",
                            1e-6,
                            1e-6,
                            1,
                            side_setup,
                            side_run,
                            side_output,
                            side_reference,
                            side_bytes,
                            side_bytes,
                            side_teardown};

const kf_kernel *kf_kernel_get(void)
{
    return &k;
}
