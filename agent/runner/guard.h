/* guard — the untimed checks around every timed profile sample (guard.c
 * says why): outputs poisoned before, secret spot checks after. Not a
 * header outside agent/runner/. */
#ifndef KF_GUARD_H
#define KF_GUARD_H

#include "runner/hctx.h"

typedef struct hctx_guard hctx_guard;

/* Prepares the guard of `nsets` input sets (states[i], set up by the
 * caller, who keeps them): each set's output view, its secret chunk
 * positions and the reference there (the kernel's reference() once per
 * set). 0 with *out, or -1 with the task failed. */
int hctx_guard_new(hctx *h, const loaded *L, void *const *states, size_t nsets, hctx_guard **out);
void hctx_guard_destroy(hctx_guard **self);

/* Before a sample whose runs use sets first, first+1, ... (count runs, set
 * indices modulo nsets): poisons each of those sets' outputs. 0, or -1
 * with the task failed. */
int hctx_guard_before(hctx_guard *g, hctx *h, size_t first, size_t count);
/* After that sample (index `sample`, for the message): each set it used
 * still names the same output, and its spot check passes. 0, or -1 with
 * the task failed and why. */
int hctx_guard_after(hctx_guard *g, hctx *h, const loaded *L, void *const *states, size_t first,
                     size_t count, size_t sample);
/* The whole reference of set `set` as computed before the samples, when
 * the guard kept it (within an eighth of the host's memory for all sets;
 * in DEVICE memory, within half the device's free memory, where the set
 * is checked on the GPU: hctx_compare_on_device, as hctx_run_and_check's
 * `known` expects) and `v` is still that set's output view; else NULL
 * (compute it again). Owned by the guard, valid until hctx_guard_destroy. */
const double *hctx_guard_reference(const hctx_guard *g, size_t set, const kf_view *v);
/* The guard's own time in before/after so far (seconds), and the set
 * checks it made. */
double hctx_guard_spent_s(const hctx_guard *g);
uint64_t hctx_guard_checks(const hctx_guard *g);

#endif
