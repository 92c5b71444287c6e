/* fresh — a candidate's timed samples on fresh inputs (issue 43 item 3).
 *
 * A candidate that keeps its answers (an output memo keyed by its inputs'
 * addresses and a few of their values, an answer computed in prepare() or
 * setup() and copied in run()) would be timed as a speed-up on inputs it
 * has seen: the profile's sets from the pool's seeds repeat for hundreds
 * of samples, and KernelBench's and GPU MODE's harnesses time the same
 * inputs again and again. So, where the problem allows it (hctx.refresh:
 * a Python problem that does not say fresh_inputs = False), the sets
 * start on inputs from unpredictable seeds, and before every sample the
 * sets it runs on get new contents, in place (the buffers and the
 * candidate's scratch stay; contents, not only addresses, change): most
 * samples on inputs from seeds no one knows, some (drawn unpredictably:
 * one in four of the first 32, one in sixteen after; the same kind of
 * copy) on the inputs of one of the pool's
 * seeds, put where fresh ones were (the problem's states kept and mixed
 * where small, pyglue.py refresh: a setup() per sample costs more than a
 * microsecond kernel's sample), which the guard spot-checks against
 * the stored reference: an answer kept from earlier inputs fails there.
 * The pool's inputs are new to the runner at their first audit (the sets
 * never start on them, and validation ran in another process), so a
 * candidate that is right only on inputs it has seen fails too. The
 * re-checks run on a pool seed's inputs put back the same way. An audit
 * sample is timed like the others (the candidate cannot tell them apart)
 * and streamed, but not in the statistics (Sample.audit): the pool's
 * inputs are few, and a memo may have seen them at an earlier audit.
 *
 * What it cannot stop: a candidate in the problem's process may replace
 * the problem's setup() (or the glue) to see each new input as it is made,
 * untimed. Not a header outside agent/runner/. */
#ifndef KF_FRESH_H
#define KF_FRESH_H

#include "runner/hctx.h"

typedef struct hctx_fresh {
    unsigned char dirty[HCTX_MAX_SETS]; /* the set holds fresh inputs: no reference */
    uint32_t fresh_samples, audits;     /* samples on fresh inputs, on a pool seed's */
    double spent_s;                     /* making and copying them */
    int last_audit;                     /* the sample about to run is an audit */
} hctx_fresh;

/* Marks every set fresh (they were set up from unpredictable seeds). */
void hctx_fresh_start(hctx_fresh *f, size_t nsets);
/* Before a sample whose runs use sets first, first+1, ... (count runs,
 * modulo nsets): new contents for each, fresh or (one sample in four of
 * the first 32, one in sixteen after) a pool seed's. Nothing without h->refresh. 0, or -1 with the task failed. */
int hctx_fresh_before(hctx *h, hctx_fresh *f, void *const *states, size_t nsets, size_t first,
                      size_t count);
/* Before a re-check of `set`: a pool seed's inputs where fresh ones are. */
int hctx_fresh_audit(hctx *h, hctx_fresh *f, void *const *states, size_t set);

#endif
