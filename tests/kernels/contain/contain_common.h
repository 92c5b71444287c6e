/* contain_common — what the containment test kernels share (fork_bomb,
 * orphans, mem_bomb, flood100m, fill; tests/integration/test_containment.sh):
 * out[i] = 2 x[i] + 1 in fp32 on n inputs from the seed, its reference,
 * output view, traffic and teardown. Each kernel brings its own on_setup
 * (called at the end of setup; a non-zero return fails setup with the
 * message it wrote) and names itself with CONTAIN_KERNEL. Each is written
 * so that, on a node where kfleet contained nothing, it still stops by
 * itself (a bounded tree, a spin of a minute, 4 GiB, 1 GiB written and
 * removed) and says it was never stopped: the test then fails, the
 * machine unharmed. Travels with the kernel that includes it. */
#ifndef KF_CONTAIN_COMMON_H
#define KF_CONTAIN_COMMON_H

#include "kf_kernel.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    size_t n;
    float *x, *out;
} st_t;

static int on_setup(st_t *s, const kf_params *p, char *err, size_t errlen);

static void teardown(void *state)
{
    st_t *s = state;
    if (s) {
        free(s->x);
        free(s->out);
        free(s);
    }
}

static int setup(void **state, const kf_params *p, uint64_t seed, char *err, size_t errlen)
{
    size_t n = (size_t)kf_param(p, "n", 4096);
    st_t *s = calloc(1, sizeof *s);
    if (!s || !(s->x = malloc(n * sizeof(float))) || !(s->out = malloc(n * sizeof(float)))) {
        teardown(s);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->n = n;
    uint64_t z = seed | 1;
    for (size_t i = 0; i < n; i++) {
        z ^= z << 13, z ^= z >> 7, z ^= z << 17;
        s->x[i] = (float)(z >> 40) / (float)(1 << 24) - 0.5f;
    }
    if (on_setup(s, p, err, errlen) != 0) {
        teardown(s);
        return -1;
    }
    *state = s;
    return 0;
}

static int run(void *state, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    st_t *s = state;
    for (size_t i = 0; i < s->n; i++)
        s->out[i] = 2.0f * s->x[i] + 1.0f;
    return 0;
}

static int output(void *state, kf_view *v)
{
    st_t *s = state;
    *v = (kf_view){.data = s->out, .count = s->n, .dtype = KF_DTYPE_F32, .location = KF_LOC_HOST};
    return 0;
}

static int reference(void *state, double *ref, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    st_t *s = state;
    for (size_t i = 0; i < s->n; i++)
        ref[i] = 2.0 * s->x[i] + 1.0;
    return 0;
}

static double bytes(const kf_params *p)
{
    return 8.0 * (double)kf_param(p, "n", 4096);
}

#define CONTAIN_KERNEL(name, description)                                                          \
    static const kf_kernel k = {KF_KERNEL_ABI_VERSION,                                             \
                                name,                                                              \
                                description,                                                       \
                                1e-6,                                                              \
                                1e-6,                                                              \
                                1,                                                                 \
                                setup,                                                             \
                                run,                                                               \
                                output,                                                            \
                                reference,                                                         \
                                bytes,                                                             \
                                bytes,                                                             \
                                teardown};                                                         \
    const kf_kernel *kf_kernel_get(void)                                                           \
    {                                                                                              \
        return &k;                                                                                 \
    }

#endif
