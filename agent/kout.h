/* kout — what a kernel writes on its stdout and stderr, as the agent keeps
 * it: the kernel's own text, never read as messages (the runner's frames go
 * on a descriptor of their own, runner/harness.h).
 *
 * Bounded whatever the kernel writes: the first KF_KOUT_HEAD bytes and the
 * last KF_KOUT_TAIL are kept, and every byte is counted, so 100 MB of
 * output costs the agent 8 KiB and a count, never its log, its memory or
 * its heartbeats (kf_kout_read takes at most `max` bytes a call: the
 * agent's loop reads a flood in slices between its other work). */
#ifndef KF_KOUT_H
#define KF_KOUT_H

#include "common/buf.h"

#include <stddef.h>
#include <stdint.h>

#define KF_KOUT_HEAD 4096
#define KF_KOUT_TAIL 4096

typedef struct kf_kout kf_kout;

kf_kout *kf_kout_new(void);
void kf_kout_destroy(kf_kout **self);

/* Keeps n more bytes the kernel wrote. */
void kf_kout_add(kf_kout *k, const void *p, size_t n);

/* Reads from the non-blocking descriptor *fd what it holds now, at most max
 * bytes; at EOF or an error it closes *fd and sets it to -1. Returns the
 * bytes read. */
size_t kf_kout_read(kf_kout *k, int *fd, size_t max);

/* Every byte kept or not since the last reset. */
uint64_t kf_kout_total(const kf_kout *k);

/* The kept text into out (reset first): the head, then, when bytes were
 * left out, a line "[kfleet: N bytes not kept]" and the tail. A number cut
 * by the gap (up to 20 digits or hex letters at either edge) is left out
 * with it: a piece of a secret seed is not recognisable as one. */
void kf_kout_render(const kf_kout *k, kf_buf *out);

/* Forgets everything: the next task of a serving runner starts afresh. */
void kf_kout_reset(kf_kout *k);

#endif
