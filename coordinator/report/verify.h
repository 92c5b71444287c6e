/* verify — checks a sweep's records against kfleet's promises, from the
 * store alone: every task has ended in exactly one terminal record that
 * agrees with the task and is not stored again as a late record; every
 * successful profile has all its samples, stored once, with sequence
 * numbers contiguous from 0; and, when the store is opened with its seal
 * key (kf_store_seal_with), no sample or result was changed after it was
 * written. The tests and the chaos runs use it; so can anyone who doubts a
 * report. */
#ifndef KF_VERIFY_H
#define KF_VERIFY_H

#include "common/buf.h"
#include "core/store.h"

typedef struct kf_verify_summary {
    uint32_t tasks, terminal, results, succeeded, failed, timed_out, cancelled, skipped;
    uint32_t profiles, samples, attempts, requeued, late;
    uint32_t violations;
    uint32_t sealed; /* records whose seal matched */
    /* 1: seals checked; 0: the store has no key (seals not checked); -1: the
     * sweep is older than seals */
    int seals;
} kf_verify_summary;

/* Checks sweep_id; each violation is described on a line of `problems`.
 * Returns KF_OK when the sweep was read (violations may still be > 0) or
 * KF_ENOTFOUND / a store error. */
int kf_verify_sweep(kf_txn *t, uint32_t sweep_id, kf_verify_summary *sum, kf_buf *problems);

#endif
