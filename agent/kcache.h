/* kcache — a kernel's own cache (WORKDIR/kcache/HASH: Triton's, CUDA's JIT
 * and torch extensions' caches, runner/confine.h) under a quota, so that a
 * kernel that fills its cache fills only its quota: never the node's disk,
 * which later builds, the outbox and other kernels need.
 *
 * Where the agent has a mount namespace of its own (root,
 * runner/contain.h), each runner of a kernel gets its cache as a tmpfs of
 * the quota's size at SCRATCH/kcache, filled from the kept copy when it
 * starts. When it ends the agent keeps what the tmpfs holds as the new copy
 * (a copy swapped in by rename) unless it is full: then the kernel reached
 * its quota, and nothing of its cache is kept, the old copy removed too. A
 * kernel writing past the quota gets "No space left on device" there.
 *
 * Without the namespace the cache is the directory itself, on the disk, as
 * before: the agent measures it after each runner and removes it when it
 * holds more than the quota (bounded after the fact, not while it runs).
 *
 * The copies are made by the agent's loop, so they cost it the time to copy
 * at most the quota three times per runner: in at its start, out at its
 * Result and at its exit (a Triton cache is a few MB). */
#ifndef KF_AGENT_KCACHE_H
#define KF_AGENT_KCACHE_H

#include "common/err.h"

#include <stdint.h>

typedef struct kcache kcache;

/* Removes the copies an agent killed while it kept a cache left in
 * WORKDIR/kcache (HASH.new-PID, HASH.old-PID). At the agent's start. */
void kcache_sweep(const char *workdir);

/* The cache of kernel `hash` for a runner whose scratch dir is scratch,
 * under `quota` bytes; mounted (a tmpfs at SCRATCH/kcache) when `mounts`.
 * NULL with err when the tmpfs could not be made (the runner does not
 * start: it would write the disk unbounded). */
kcache *kcache_open(const char *workdir, const char *hash, const char *scratch, uint64_t quota,
                    int mounts, kf_err *err);

/* The runner's task is done (its Result is in): what its tmpfs holds
 * kept now, unless full, for the kernel's next runner, which may start
 * before this one has exited (a candidate's profile right after its
 * validate: without it, Triton compiled the kernel again, 0.69 s a
 * candidate on an H200). The runner may still write: kcache_close keeps
 * it again; a copy torn by the kernel's own writes is its own next
 * runner's cache, no other kernel's. Nothing unmounted. */
void kcache_keep(kcache *k);

/* The runner ended: its cache kept or, over the quota, removed; the tmpfs
 * unmounted. Returns 1 when the kernel filled its quota, else 0.
 * *self NULL. */
int kcache_close(kcache **self);

#endif
