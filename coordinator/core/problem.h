/* problem — the coordinator's side of a problem (docs/problems.md): its
 * secret seed pool, kept and renewed here, and its references, stored once
 * per (problem hash, configuration, seed) and reused by every candidate and
 * later sweep while the seed stays in the pool.
 *
 * The scheduler asks kf_problem_seed_pool for the pool as it stands now,
 * kf_problem_missing_refs for the seeds of a configuration that still need a
 * reference task, and stores what such a task computed with
 * kf_problem_store_ref. All of it runs inside the caller's transaction. */
#ifndef KF_PROBLEM_H
#define KF_PROBLEM_H

#include "core/store.h"

#include <stddef.h>
#include <stdint.h>

/* Seeds of a problem's pool beyond the sweep's `seeds:` (the validation's):
 * held out for the profile. A candidate's validation runs on the first
 * `seeds:` of the pool and its profile's audits and re-checks on these,
 * which no earlier task of the candidate's runner saw: a runner serves a
 * candidate's profile after its validation (agent/serve.h), and a
 * candidate right only on inputs it has seen (an output memo returning
 * anything fast for new ones) fails the profile's first audit, as it did
 * when its profile ran in a process of its own. Two, because the checker
 * judges a spot check under loose tolerances by the distance between the
 * answers of two of the task's seeds (runner/checker.c). */
#define KF_PROBLEM_AUDIT_SEEDS 2

/* The pool's size for a sweep of `seeds:` validation seeds. */
static inline uint32_t kf_problem_pool_size(uint32_t validation_seeds)
{
    return validation_seeds + KF_PROBLEM_AUDIT_SEEDS;
}

/* The configuration key of a problem's parameters, in any order:
 * BLAKE2b-128 of the sorted "name=value\n" lines. Two parameter lists with
 * the same pairs get the same key. */
void kf_problem_config_key(Kfleet__Param *const *params, size_t n,
                           uint8_t out[KF_STORE_CONFIG_KEY]);

/* The problem's seed pool as it stands at now_ns (CLOCK_REALTIME): drawn
 * (libsodium's randombytes, generation 1) when the store has none, drawn
 * again (generation + 1, and the references of the retired seeds deleted)
 * when it is older than renew_s or holds another number of seeds than
 * `size`. *renewed is 1 when it was drawn by this call. The caller frees
 * *out with kfleet__seed_pool__free_unpacked. */
int kf_problem_seed_pool(kf_txn *t, const char *problem_hash, uint32_t size, double renew_s,
                         uint64_t now_ns, Kfleet__SeedPool **out, int *renewed);

/* The seeds of pool p with no stored reference for config_key, in pool
 * order, into missing[] (room for p->n_seeds); *nmissing counts them. */
int kf_problem_missing_refs(kf_txn *t, const Kfleet__SeedPool *p, const uint8_t *config_key,
                            uint64_t *missing, size_t *nmissing);

/* Stores a computed reference under pool p: r->generation is set from p.
 * *dup = 1 (nothing written) when that configuration and seed has one:
 * the first computation stays. KF_EINVAL when r's seed is not in p (a late
 * result for a retired seed is not kept), or r has no elements or no
 * digest (64 hex digits: the values stay on the agents, issue 41). */
int kf_problem_store_ref(kf_txn *t, const Kfleet__SeedPool *p, Kfleet__Reference *r, int *dup);

/* What a reference task sent (Result.references, one per seed) stored
 * under the problem's current pool: problem hash, the configuration's key
 * and params, the task, the agent and now_ns filled in; a seed no longer in
 * the pool (renewed meanwhile) or already stored is not kept (*stored counts
 * the new ones). The values are then dropped from r, which is stored
 * without them. KF_ENOTFOUND when the problem has no pool. */
int kf_problem_store_result(kf_txn *t, const char *problem_hash, Kfleet__Param *const *params,
                            size_t nparams, const char *agent_id, uint64_t now_ns,
                            Kfleet__Result *r, size_t *stored);

#endif
