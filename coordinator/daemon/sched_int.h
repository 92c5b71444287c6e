/* sched_int — what the scheduler's three files share (sched.c: lookups,
 * slots, builds and how attempts and tasks end; sched_agents.c: the
 * handlers of what agents send; sched_dispatch.c: who runs what, and the
 * periodic checks). The two callers depend on sched.c, never on each
 * other; the helpers below them (sched_order.c, sched_share.c,
 * sched_baseline.c) call none of the three back. Not a header for anything
 * outside daemon/. */
#ifndef KF_SCHED_INT_H
#define KF_SCHED_INT_H

#include "daemon/coord_int.h"

/* Replaces a string field of a record (never freeing protobuf-c's shared
 * empty string, which a record read back from the store may hold). */
void sched_set_str(char **field, const char *value);
/* a's index in c->agents, or -1. */
int sched_agent_index(kf_coord *c, const kagent *a);
uint32_t sched_terminal_count(const ksweep *sw);
/* Writes t's record into the turn's transaction. */
void sched_put_task(kf_coord *c, const ktask *t);

/* Slots: a validate/profile task of a CUDA kernel takes a GPU slot, any
 * other task a CPU slot. */
int sched_needs_gpu(const ksweep *sw, const ktask *t);
/* The first free GPU slot of a, or -1. */
int sched_free_gpu(const kagent *a);
void sched_take_slot(kagent *a, ktask *t, int gpu);
/* Frees t's slot on its agent and takes t off the agent's running list. */
void sched_release_slot(kf_coord *c, ktask *t);

/* What a knows of a kernel's build (read back from the store after a
 * restart), or NULL when nothing. */
kbuild *sched_agent_build(kf_coord *c, kagent *a, const char *hash);
/* Records (and stores) the state of a kernel's build on a, the hash of the
 * artifact a succeeded build made (NULL: none known), and the agent whose
 * artifact a installed (NULL or "": its own compile). */
kbuild *sched_set_build(kf_coord *c, kagent *a, const char *hash, int state, uint64_t task_id,
                        const char *error, const char *artifact_hash, const char *built_by);
/* Drops what a knows of a kernel's build; one still in flight is recorded
 * as abandoned in the store, so it is built again when a returns. */
void sched_forget_build(kf_coord *c, kagent *a, const char *hash);
/* Drops a's build of a kernel for good, in the store too: its artifact is
 * gone (it was not what the build made), so the kernel is built again. */
void sched_invalidate_build(kf_coord *c, kagent *a, const char *hash);
/* The hash of what an agent's artifacts depend on besides the kernel: its
 * compilers, its Python and packages (torch, for extensions), its forward-
 * compat libraries, its architecture and GPUs. An agent that comes back
 * with another (a torch or nvcc upgrade) rebuilds every kernel. */
void sched_toolchain(const Kfleet__AgentInfo *info, char out[65]);

/* sched_share.c: build once per fleet. Agents with one toolchain
 * (sched_toolchain) share a C or CUDA kernel's artifact: the first to build
 * it sends it back with its result (stored with it), the others wait for it
 * and install it instead of running the compiler. */
/* The kernel's shared build for a's toolchain: NULL or unshareable (a
 * builds it), one still building (a waits) or one ready (a installs it). */
const kshare *sched_share_find(kf_coord *c, const kagent *a, const char *hash);
/* a builds the kernel in task task_id: 1 when it is to share its artifact
 * (the first build of it for this toolchain, sharing not turned off),
 * else 0. */
int sched_share_building(kf_coord *c, const kagent *a, const char *hash, uint64_t task_id);
/* The result of a's build of the kernel (before it is stored): an artifact
 * the coordinator asked for and that matches its hash becomes the shared
 * one; any other artifact bytes are dropped. A build that asked and sent
 * none lets every agent build for itself. */
void sched_share_result(kf_coord *c, const kagent *a, const char *hash, Kfleet__Result *r);
/* Whether the agent of this id may build for other agents: sharing is on,
 * and it is on this machine (the agent endpoint is ipc://) or on the
 * operator's trust list. */
int sched_share_trusted_id(kf_coord *c, const char *id);
/* Reads the operator's trust list (cfg.trust_file) again, as each agent
 * registers (and on first use); an absent file is an empty list, one that
 * cannot be read keeps the last one (logged). */
void sched_share_load_trust(kf_coord *c);
/* a will not finish its shared builds (of `hash`, or of all when NULL). */
void sched_share_abandon(kf_coord *c, const kagent *a, const char *hash);
/* Fills spec (a build task t with share_task) with the shared artifact, its
 * hash and builder; *hold owns them until the spec is sent. Without the
 * stored result the spec stays as it is: the agent compiles. */
void sched_share_fill(kf_coord *c, const ktask *t, Kfleet__TaskSpec *spec, Kfleet__Result **hold);

/* When t, a validation, ended without passing: the profile it gates is
 * ended as skipped, saying why (no agent, no GPU time). */
void sched_gate_done(kf_coord *c, ksweep *sw, ktask *t);
/* Stores how t's current attempt ended. */
void sched_end_attempt(kf_coord *c, ktask *t, int state, const char *note);
void sched_send_cancel(kf_coord *c, const kagent *a, uint64_t task_id, uint32_t attempt);
/* Takes t's current attempt away from its agent (the attempt ends in
 * attempt_state with why): back to pending while attempts remain, else
 * failed; a build pinned to its agent is cancelled instead. */
void sched_requeue_as(kf_coord *c, ksweep *sw, ktask *t, int attempt_state, const char *why);
/* sched_requeue_as with the attempt cancelled (agent lost, never confirmed). */
void sched_requeue(kf_coord *c, ksweep *sw, ktask *t, const char *why);
/* a is gone (silent, revoked, or replaced by a new process of the same
 * id): its attempts go back to pending (or fail, out of attempts) saying
 * why, and builds in flight there are forgotten. */
void sched_agent_lost(kf_coord *c, kagent *a, const char *why);

/* sched_priors.c: earlier sweeps' durations, for sched_order.c. The key
 * of a task of the kernel of this hash: its kind and parameters. */
uint64_t sched_prior_key(const char *hash, const Kfleet__Task *t);
typedef int (*sched_prior_cb)(void *ctx, uint64_t key, double elapsed_s);
/* Calls cb with the key and elapsed seconds of each task that SUCCEEDED,
 * not a build, in a sweep older than `before` (newest sweep first, each
 * sweep's in task order), whose kernel hash is one of hashes[], and whose
 * stored result has elapsed_s > 0; the walk's bounds are sched_priors.c's.
 * *cache (created on first use; NULL cache: none) keeps what it read of
 * finished sweeps for the next walk. A non-zero return of cb stops the
 * walk and is returned; else 0 or a store error. */
int sched_priors_walk(sched_priors **cache, kf_txn *txn, uint32_t before, const char *const *hashes,
                      size_t nhashes, sched_prior_cb cb, void *ctx);

/* sched_order.c: the order pick() offers a sweep's pending tasks in,
 * longest expected first (the file-top comment says how it is expected).
 * Plans sw: each task's expected seconds (priors read from txn's store
 * through the coordinator's cache, NULL txn: none) and its priority; every
 * pending task enters the order. Returns what reading the priors returned
 * (the plan is made anyway). */
int sched_order_plan(ksweep *sw, kf_txn *txn, sched_priors **cache);
/* Task idx was added to a planned sweep (a build): it enters the order. */
void sched_order_added(ksweep *sw, uint32_t idx);
/* Task idx is pending again (requeued): it enters the order again. */
void sched_order_push(ksweep *sw, uint32_t idx);
/* t ended; a passed validation that took elapsed_s sets the expected time
 * of the profile it gates (unless an earlier sweep measured that one). */
void sched_order_ended(ksweep *sw, const ktask *t, double elapsed_s);
/* The next pending task in order (1, *idx set) or none (0). What it
 * returns is held aside until sched_order_rewind, which puts back those
 * still pending but `taken` (the task about to be assigned; UINT32_MAX:
 * none): call it once the walk is over. A taken task that is requeued
 * comes back through sched_order_push. */
int sched_order_next(ksweep *sw, uint32_t *idx);
void sched_order_rewind(ksweep *sw, uint32_t taken);
/* 1 when task idx heads a long chain (it goes first, whatever its kernel). */
int sched_order_long(const ksweep *sw, uint32_t idx);
/* The seconds task idx is expected to take (NAN: not planned). */
double sched_order_expected(const ksweep *sw, uint32_t idx);
void sched_order_free(sched_order **self);

/* sched_baseline.c: the baseline measured on every agent that runs a
 * profile of its configuration, in a `nodes: any` sweep (the file-top
 * comment says how). What an agent lacks of one configuration's baseline:
 * the submitted baseline profile when it is pending and pinned nowhere
 * (unplaced: its index; the dispatcher pins it to the agent), else (-1) a
 * validate like task `validate` (-1: the sweep validates none) and a
 * profile like task `profile`, both pinned to the agent. */
typedef struct sched_bneed {
    int32_t unplaced, validate;
    uint32_t profile;
} sched_bneed;
/* Profile task idx of sw was just assigned to agent ai: what ai lacks of
 * the baselines of its configuration (at most max, one per baseline
 * kernel), into out; returns how many. Nothing for a baseline's own
 * profile, a sweep without a baseline or one of `nodes: all`. */
size_t sched_baseline_placed(kf_coord *c, ksweep *sw, uint32_t idx, int ai, sched_bneed *out,
                             size_t max);
/* What agent ai lacks of the baselines of the configurations whose
 * candidates' profiles it was given (it came back after it was lost):
 * *out (the caller frees it), and how many. */
size_t sched_baseline_wanted(kf_coord *c, ksweep *sw, int ai, sched_bneed **out);
/* The open baseline tasks pinned to agent ai (it is lost): their indices
 * in *out (the caller frees it), the profiles first; how many. */
size_t sched_baseline_pinned(kf_coord *c, ksweep *sw, int ai, uint32_t **out);
void sched_baseline_free(sched_base **self);

#endif
