/* cheat_common — what the cheating test kernels share (their state: an
 * input of integers and the output, seeded; the output view, traffic and
 * teardown). Each kernel brings its own run and reference. Travels with
 * the kernel that includes it. */
#ifndef KF_CHEAT_COMMON_H
#define KF_CHEAT_COMMON_H

#include "kf_kernel.h"

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define N 65536

typedef struct {
    float in[N], out[N];
    unsigned calls;
} st;

static int setup(void **state, const kf_params *p, uint64_t seed, char *err, size_t errlen)
{
    (void)p;
    (void)err;
    (void)errlen;
    st *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    uint64_t x = seed | 1;
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        s->in[i] = (float)(x % 1000); /* integers: 2 * in + 1 is exact in fp32 */
    }
    *state = s;
    return 0;
}

static int output(void *state, kf_view *v)
{
    st *s = state;
    v->data = s->out;
    v->count = N;
    v->dtype = KF_DTYPE_F32;
    v->location = KF_LOC_HOST;
    return 0;
}

static double bytes(const kf_params *p)
{
    (void)p;
    return N * 8.0;
}

static void teardown(void *state)
{
    free(state);
}

/* The honest work: out = 2 * in + 1 (exact in fp32 for these inputs). */
__attribute__((unused)) static void compute(st *s)
{
    for (int i = 0; i < N; i++)
        s->out[i] = 2.0f * s->in[i] + 1.0f;
}

/* The honest work plus a sleep: a floor under the time of every run that
 * does the work, which a busy machine can lengthen but never shorten. A
 * run that skips the work takes nanoseconds, so a profile whose fastest
 * sample (min_s) is at least FLOOR_NS timed the work in every kept
 * sample: test_cheats.sh asserts that bound, never a ratio of two noisy
 * clocks. */
#define FLOOR_NS 200000L
__attribute__((unused)) static void compute_floor(st *s)
{
    compute(s);
    struct timespec ts = {0, FLOOR_NS};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

__attribute__((unused)) static int reference(void *state, double *ref, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    st *s = state;
    for (int i = 0; i < N; i++)
        ref[i] = 2.0 * s->in[i] + 1.0;
    return 0;
}

/* The zeros cheats' run: zeros, whatever the inputs. */
__attribute__((unused)) static int zeros_run(void *state, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    st *s = state;
    for (int i = 0; i < N; i++)
        s->out[i] = 0.0f;
    return 0;
}

/* A reference of zeros, for a zeros cheat that brings its own. */
__attribute__((unused)) static int zero_reference(void *state, double *ref, char *err,
                                                  size_t errlen)
{
    (void)state;
    (void)err;
    (void)errlen;
    for (int i = 0; i < N; i++)
        ref[i] = 0.0;
    return 0;
}

#endif
