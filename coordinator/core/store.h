/* store — the coordinator's LMDB: one environment, named databases.
 *
 * Every record is a protobuf message from proto/kfleet.proto; keys are
 * big-endian integers so that LMDB's byte order is numeric order. The layout
 * (docs/storage.md):
 *
 *   meta      "schema" -> u32, "next_sweep" -> u32
 *   sweeps    sweep_id u32                      -> Sweep
 *   tasks     task_id u64 (sweep_id<<32 | idx)  -> Task
 *   attempts  task_id u64, attempt u32          -> Attempt
 *   results   task_id u64                       -> Result  (the terminal record)
 *   late      task_id u64, attempt u32          -> Result  (superseded attempts)
 *   samples   task_id u64, attempt u32, seq u32 -> Sample
 *   telemetry task_id u64, attempt u32, seq u32 -> Telemetry (NVML readings)
 *   agents    agent_id string                   -> AgentInfo
 *   builds    agent_id, 0, kernel_hash          -> BuildRecord
 *   seedpools problem_hash                      -> SeedPool  (secret seeds)
 *   refs      problem_hash, 0, config key, seed -> Reference (docs/problems.md)
 *
 * Writers are the coordinator's single thread; readers (the CLI's report,
 * tests) may open the same environment read-only from other processes at
 * any time — LMDB gives them a consistent snapshot.
 *
 * The map grows: the coordinator calls kf_store_grow (which doubles it)
 * between transactions while the map is filling up. A put that still meets
 * MDB_MAP_FULL or a full disk returns KF_EFULL; the transaction is then dead
 * and its commit fails with that first cause. KF_STORE_MAP_SIZE (bytes, at
 * least 64 KiB) sets the initial map of a writable open: a test hook. */
#ifndef KF_STORE_H
#define KF_STORE_H

#include "common/buf.h"
#include "common/err.h"
#include "proto/kfleet.pb-c.h"

#include <stddef.h>
#include <stdint.h>

typedef struct kf_store kf_store;
typedef struct kf_txn kf_txn;

#define KF_STORE_SCHEMA 1

static inline uint64_t kf_task_id(uint32_t sweep, uint32_t idx)
{
    return ((uint64_t)sweep << 32) | idx;
}
static inline uint32_t kf_task_sweep(uint64_t task_id)
{
    return (uint32_t)(task_id >> 32);
}

/* Opens (creating when !readonly) the store in directory dir. An existing
 * store's pages are checked first (docs/storage.md, "Damage"): a damaged
 * one is refused with KF_ESTORE and a message that says what is damaged,
 * where, and what to do, and nothing in it is changed. */
int kf_store_open(const char *dir, int readonly, kf_store **out, kf_err *err);
void kf_store_close(kf_store **self);
/* Doubles the map size; no transaction may be open in this process. */
int kf_store_grow(kf_store *s, kf_err *err);
size_t kf_store_map_size(const kf_store *s);
/* Bytes of the map in use (last page written). */
size_t kf_store_used(const kf_store *s);

/* What kf_store_check found. */
typedef struct kf_store_check {
    uint64_t pages;      /* pages the tables use, checked */
    uint64_t records;    /* records in the tables */
    uint64_t free_pages; /* pages on LMDB's free list */
    uint64_t decoded;    /* records read and decoded as their table's message */
    uint64_t sealed;     /* samples and results whose seal matched */
    uint32_t tables;
    uint32_t damaged;    /* problems found */
    int pages_unchecked; /* 1: this host's LMDB layout is not known: pages not checked */
    int seals_checked;   /* a seal key was given */
} kf_store_check_stats;

/* Checks the whole store in dir, for `kfleet verify`: its pages (what the
 * coordinator's open checks, but listing every problem), then, when they
 * are whole and `records` is set (`kfleet verify --store`), every record: its key has its table's
 * layout, its value decodes as the table's message, and, given the coordinator's secret key (Z85;
 * NULL: seals not checked), each sealed result and its attempt's samples
 * match their seals (seal.h). Each problem is one line in problems, at
 * most max. KF_OK when the store was read (out->damaged counts the
 * problems), KF_ENOTFOUND when there is no store, or a store error. */
int kf_store_check(const char *dir, int records, const char *seal_secret, unsigned max,
                   kf_buf *problems, kf_store_check_stats *out, kf_err *err);

int kf_store_begin(kf_store *s, int readonly, kf_txn **out, kf_err *err);
/* Commits and frees the txn; on failure it is aborted and freed. */
int kf_store_commit(kf_txn **txn, kf_err *err);
void kf_store_abort(kf_txn **txn);

/* Every put returns 0, KF_EFULL (map or disk full) or KF_ESTORE.
 * Every get returns 0 or KF_ENOTFOUND; the caller frees what it gets with
 * the message's free_unpacked(msg, NULL). */
int kf_store_next_sweep_id(kf_txn *t, uint32_t *id);
int kf_store_latest_sweep_id(kf_txn *t, uint32_t *id);
int kf_store_put_sweep(kf_txn *t, const Kfleet__Sweep *sw);
int kf_store_get_sweep(kf_txn *t, uint32_t id, Kfleet__Sweep **out);

int kf_store_put_task(kf_txn *t, const Kfleet__Task *task);
int kf_store_get_task(kf_txn *t, uint64_t task_id, Kfleet__Task **out);

int kf_store_put_attempt(kf_txn *t, const Kfleet__Attempt *a);
int kf_store_get_attempt(kf_txn *t, uint64_t task_id, uint32_t attempt, Kfleet__Attempt **out);

/* The terminal record of a task. *dup is set (and nothing written) when the
 * task already has one. */
int kf_store_put_result(kf_txn *t, const Kfleet__Result *r, int *dup);
int kf_store_get_result(kf_txn *t, uint64_t task_id, Kfleet__Result **out);
/* A late result of an attempt that had been superseded. */
int kf_store_put_late(kf_txn *t, const Kfleet__Result *r, int *dup);

/* *dup is set (and nothing written) when (task, attempt, seq) is stored. */
int kf_store_put_sample(kf_txn *t, uint64_t task_id, uint32_t attempt, const Kfleet__Sample *s,
                        int *dup);
/* The n samples of one batch of attempt (task_id, attempt), each stored
 * once as kf_store_put_sample stores it; *dups (when given) counts those
 * already stored, which are left as they are. The attempt's seal (seal.h)
 * is updated once for all that were stored. */
int kf_store_put_samples(kf_txn *t, uint64_t task_id, uint32_t attempt,
                         const Kfleet__Sample *const *s, size_t n, size_t *dups);
/* Stores a telemetry reading once (MDB_NOOVERWRITE): *dup = 1 when its
 * (task, attempt, seq) was already there. */
int kf_store_put_telemetry(kf_txn *t, uint64_t task_id, uint32_t attempt,
                           const Kfleet__Telemetry *r, int *dup);

int kf_store_put_agent(kf_txn *t, const Kfleet__AgentInfo *a);
int kf_store_get_agent(kf_txn *t, const char *agent_id, Kfleet__AgentInfo **out);

int kf_store_put_build(kf_txn *t, const Kfleet__BuildRecord *b);
int kf_store_get_build(kf_txn *t, const char *agent_id, const char *kernel_hash,
                       Kfleet__BuildRecord **out);

/* A problem's secret seed pool (one per problem hash, replaced at renewal). */
int kf_store_put_seedpool(kf_txn *t, const Kfleet__SeedPool *p);
int kf_store_get_seedpool(kf_txn *t, const char *problem_hash, Kfleet__SeedPool **out);

/* A problem's reference for one configuration (config_key, exactly
 * KF_STORE_CONFIG_KEY bytes) and seed, stored once: *dup = 1 and nothing
 * written when that key is already there (the first computation stays).
 * KF_EINVAL for an empty or over-long hash or a config key of another
 * length. */
#define KF_STORE_CONFIG_KEY 16
int kf_store_put_reference(kf_txn *t, const Kfleet__Reference *r, int *dup);
int kf_store_get_reference(kf_txn *t, const char *problem_hash, const uint8_t *config_key,
                           uint64_t seed, Kfleet__Reference **out);
typedef int (*kf_store_reference_cb)(void *ctx, const Kfleet__Reference *r);
/* The references of one problem, by configuration key and seed. */
int kf_store_foreach_reference(kf_txn *t, const char *problem_hash, kf_store_reference_cb cb,
                               void *ctx);
/* Deletes the problem's references of any other pool generation than
 * `generation` (its retired seeds); *removed counts them. */
int kf_store_retire_references(kf_txn *t, const char *problem_hash, uint32_t generation,
                               uint32_t *removed);

/* Iteration: the callback gets a decoded record it does not own; a non-zero
 * return stops the walk and is returned. */
typedef int (*kf_store_sweep_cb)(void *ctx, const Kfleet__Sweep *sw);
typedef int (*kf_store_task_cb)(void *ctx, const Kfleet__Task *task);
typedef int (*kf_store_sample_cb)(void *ctx, const Kfleet__Sample *s);
typedef int (*kf_store_attempt_cb)(void *ctx, const Kfleet__Attempt *a);
typedef int (*kf_store_result_cb)(void *ctx, const Kfleet__Result *r);
typedef int (*kf_store_agent_cb)(void *ctx, const Kfleet__AgentInfo *a);
typedef int (*kf_store_telemetry_cb)(void *ctx, const Kfleet__Telemetry *r);
/* NVML readings of an attempt in seq order. */
int kf_store_foreach_telemetry(kf_txn *t, uint64_t task_id, uint32_t attempt,
                               kf_store_telemetry_cb cb, void *ctx);

int kf_store_foreach_sweep(kf_txn *t, kf_store_sweep_cb cb, void *ctx);
/* Tasks of one sweep, in task id order. */
int kf_store_foreach_task(kf_txn *t, uint32_t sweep_id, kf_store_task_cb cb, void *ctx);
/* All tasks whose state is not terminal (for resuming after a restart). */
int kf_store_foreach_open_task(kf_txn *t, kf_store_task_cb cb, void *ctx);
int kf_store_foreach_sample(kf_txn *t, uint64_t task_id, uint32_t attempt, kf_store_sample_cb cb,
                            void *ctx);
int kf_store_foreach_attempt(kf_txn *t, uint64_t task_id, kf_store_attempt_cb cb, void *ctx);
int kf_store_foreach_late(kf_txn *t, uint64_t task_id, kf_store_result_cb cb, void *ctx);
int kf_store_foreach_agent(kf_txn *t, kf_store_agent_cb cb, void *ctx);
int kf_store_count_samples(kf_txn *t, uint64_t task_id, uint32_t attempt, uint32_t *n);

/* The states a task ends in; any other value (a bad record, a bad frame)
 * is not one. */
static inline int kf_state_terminal(int state)
{
    return state >= KFLEET__TASK_STATE__SUCCEEDED && state <= KFLEET__TASK_STATE__SKIPPED;
}

#endif
