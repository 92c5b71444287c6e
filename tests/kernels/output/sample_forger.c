/* sample_forger — a kernel that forges the runner's samples (issue 43): on
 * every run it writes, on the runner's message channel (descriptor 4,
 * runner/channel.h), a well-formed frame of one sample numbered 0 that took
 * 1 ns, as a forwarder dividing the real times would. The agent keeps each
 * task's sample numbers in order: the second such frame (or the real
 * sample 0 after a forged one) is a duplicate, and the runner is killed,
 * saying so; no forged time is kept. */
#include "output_common.h"

#include <string.h>
#include <unistd.h>

static void on_setup(st_t *s)
{
    (void)s;
}

/* Envelope {version 1, samples {samples [{seq 0, seconds 1e-9}]}} as
 * protobuf's wire format, after its u32 little-endian length. */
static int forge(void)
{
    unsigned char f[4 + 17];
    double secs = 1e-9;
    unsigned char sample[11] = {0x08, 0x00, 0x11};
    memcpy(sample + 3, &secs, 8);
    unsigned char env[17] = {0x08, 0x01, 0x7a, 0x0d, 0x1a, 0x0b};
    memcpy(env + 6, sample, 11);
    uint32_t len = sizeof env;
    memcpy(f, &len, 4);
    memcpy(f + 4, env, sizeof env);
    return write(4, f, sizeof f) == (ssize_t)sizeof f ? 0 : -1;
}

static int run(void *state, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    compute(state);
    return forge();
}

OUTPUT_KERNEL("sample_forger", "forges samples on the runner's channel")
