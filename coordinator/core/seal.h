/* seal — what the store's samples and results were when written (issue
 * 31): keyed MACs in the store's "seals" table, put by store.c in the
 * transaction that puts each record (store_int.h) and checked here, by
 * `kfleet verify`. Part of the store module: seal.c reads the store's
 * insides, and the store never calls it. */
#ifndef KF_SEAL_H
#define KF_SEAL_H

#include "core/store.h"

#include <lmdb.h>
#include <stdint.h>

/* Seals (issue 31): with a key, every result this store writes gets a
 * keyed BLAKE2b of its stored bytes in the "seals" table, and every
 * attempt's samples one seal together, updated as they arrive: the XOR of
 * the MACs of its runs (issue 45; store_int.h: each run of consecutive
 * seqs a batch brings, one keyed BLAKE2b over its bounds and its samples'
 * bytes, its MAC also under its own record), or in a sweep from before
 * runs (the store's first one sealed by them is in its meta) the XOR of
 * each sample's MAC. So a record whose bytes were changed, or that was
 * added or removed, afterwards (through liblmdb, by anyone without the
 * key) is found by kf_seal_check. The key is derived
 * from the coordinator's Curve secret (Z85), which the coordinator and
 * `kfleet verify` read and no kernel's sandbox can. The first sweep id
 * sealed is kept in the store: records of later sweeps must all be
 * sealed, older ones (a store from before seals) are not judged. Returns
 * 0, or a store error when that first id cannot be written. */
int kf_seal_key(kf_store *s, const char *secret_z85, kf_err *err);

typedef struct kf_seal_count {
    uint32_t checked;  /* records whose seal matched (a result; each sample) */
    uint32_t changed;  /* seals that do not match: the result, or its samples */
    uint32_t unsealed; /* a result or samples of a sealed sweep without a seal */
    /* What failed: 0 nothing, 1 changed, 2 unsealed; for the terminal result
     * and for the attempt's samples (one seal for all of them). */
    int result_bad, samples_bad;
} kf_seal_count;

/* Checks the seals of task_id's terminal result and of the samples of
 * its `attempt` (adding to *out). KF_EINVAL when the store has no key (see
 * kf_seal_key), KF_ENOTFOUND when the task's sweep is older than
 * seals; else 0. */
int kf_seal_check(kf_txn *t, uint64_t task_id, uint32_t attempt, kf_seal_count *out);

#endif
