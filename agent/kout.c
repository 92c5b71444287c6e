/* kout — a kernel's output, bounded; see kout.h. The tail is a ring: a
 * kernel printing a line per run for an hour moves one index, not memory. */
#include "agent/kout.h"

#include "common/xalloc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct kf_kout {
    uint8_t head[KF_KOUT_HEAD];
    uint8_t tail[KF_KOUT_TAIL]; /* a ring of the bytes after the head */
    size_t nhead;
    uint64_t ntail; /* bytes that went into the ring (the ring holds the last) */
};

kf_kout *kf_kout_new(void)
{
    return kf_xcalloc(1, sizeof(kf_kout));
}

void kf_kout_destroy(kf_kout **self)
{
    if (!self || !*self)
        return;
    free(*self);
    *self = NULL;
}

void kf_kout_add(kf_kout *k, const void *p, size_t n)
{
    const uint8_t *b = p;
    size_t h = KF_KOUT_HEAD - k->nhead < n ? KF_KOUT_HEAD - k->nhead : n;
    memcpy(k->head + k->nhead, b, h);
    k->nhead += h;
    b += h;
    n -= h;
    if (n > KF_KOUT_TAIL) { /* only its last part can stay */
        k->ntail += n - KF_KOUT_TAIL;
        b += n - KF_KOUT_TAIL;
        n = KF_KOUT_TAIL;
    }
    while (n > 0) {
        size_t at = (size_t)(k->ntail % KF_KOUT_TAIL);
        size_t c = KF_KOUT_TAIL - at < n ? KF_KOUT_TAIL - at : n;
        memcpy(k->tail + at, b, c);
        k->ntail += c;
        b += c;
        n -= c;
    }
}

size_t kf_kout_read(kf_kout *k, int *fd, size_t max)
{
    uint8_t buf[65536];
    size_t got = 0;
    while (*fd >= 0 && got < max) {
        size_t want = max - got < sizeof buf ? max - got : sizeof buf;
        ssize_t n = read(*fd, buf, want);
        if (n > 0) {
            kf_kout_add(k, buf, (size_t)n);
            got += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        close(*fd); /* EOF: every writer is gone */
        *fd = -1;
    }
    return got;
}

uint64_t kf_kout_total(const kf_kout *k)
{
    return k->nhead + k->ntail;
}

/* A digit or hex letter: what a number, a seed among them, is written in. */
static int numeric(uint8_t c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Longest form of a 64-bit number in text: 20 decimal digits. */
enum { CUT_RUN = 20 };

void kf_kout_render(const kf_kout *k, kf_buf *out)
{
    kf_buf_reset(out);
    size_t kept = k->ntail < KF_KOUT_TAIL ? (size_t)k->ntail : KF_KOUT_TAIL;
    /* The ring's oldest kept byte is where its next write goes. */
    size_t start = k->ntail > KF_KOUT_TAIL ? (size_t)(k->ntail % KF_KOUT_TAIL) : 0;
    size_t nhead = k->nhead, skip = 0;
    if (k->ntail > kept) {
        /* A cut through a number leaves a piece of it that no scrubber
         * knows (agent/results.c replaces a secret seed's whole forms, not
         * its first 15 digits): numeric runs at either edge of the gap go
         * with it, counted. */
        for (size_t i = 0; i < CUT_RUN && nhead > 0 && numeric(k->head[nhead - 1]); i++)
            nhead--;
        while (skip < CUT_RUN && skip < kept && numeric(k->tail[(start + skip) % KF_KOUT_TAIL]))
            skip++;
    }
    kf_buf_add(out, k->head, nhead);
    if (k->ntail > kept)
        kf_buf_addf(out, "%s[kfleet: %" PRIu64 " bytes not kept]\n",
                    out->len && out->data[out->len - 1] != '\n' ? "\n" : "",
                    k->ntail - kept + (k->nhead - nhead) + skip);
    for (size_t i = skip; i < kept;) { /* at most two runs: the ring's two ends */
        size_t at = (start + i) % KF_KOUT_TAIL;
        size_t c = KF_KOUT_TAIL - at < kept - i ? KF_KOUT_TAIL - at : kept - i;
        kf_buf_add(out, k->tail + at, c);
        i += c;
    }
}

void kf_kout_reset(kf_kout *k)
{
    k->nhead = 0;
    k->ntail = 0;
}
