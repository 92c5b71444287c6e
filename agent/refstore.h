/* refstore — the problems' references this agent judges candidates by
 * (docs/problems.md, issue 41): files named by their digest,
 * WORKDIR/refs/DIGEST.ref (runner/reffile.h), moved there from the scratch
 * dir of the runner that computed them (a reference task, or this agent's
 * own computation of references it lacked for a candidate). Candidates'
 * runners cannot read them (their sandbox grants nothing under WORKDIR but
 * their scratch and cache); the checker gets them as open descriptors
 * from the agent (agent/checkers.h).
 *
 * Bounded: when the files pass the budget (KF_REFS_MAX_GB in the agent's
 * environment, else half the file system they are on), the least recently
 * used go (a single reference larger than the budget is refused); a reference dropped is computed again when a task
 * needs it. A checker that found a file whose content is not its digest
 * has it dropped; one that hashed a file whole has it marked verified, and
 * later checkers of this agent's life skip the hashing (a file only this
 * agent's user can write, mode 0400). */
#ifndef KF_REFSTORE_H
#define KF_REFSTORE_H

#include "common/err.h"

#include <stddef.h>
#include <stdint.h>

typedef struct kf_refstore kf_refstore;

/* The store under workdir (WORKDIR/refs made, 0700). NULL with err. */
kf_refstore *kf_refstore_open(const char *workdir, kf_err *err);
void kf_refstore_close(kf_refstore **self);

/* Whether digest is one (64 lower-case hex digits). */
int kf_refstore_digest_ok(const char *digest);

/* The path of digest's file into out; KF_EINVAL for a malformed digest. */
int kf_refstore_path(const kf_refstore *rs, const char *digest, char *out, size_t len);

/* 1 when digest's file is here, else 0. */
int kf_refstore_has(const kf_refstore *rs, const char *digest);

/* Moves the file at `from` into the store as digest's (mode 0400), making
 * room under the budget first; `from` is removed when the store already
 * has it. 0, or KF_EIO / KF_EINVAL with err. */
int kf_refstore_adopt(kf_refstore *rs, const char *from, const char *digest, kf_err *err);

/* Removes digest's file (a damaged one), and forgets it was verified. */
void kf_refstore_drop(kf_refstore *rs, const char *digest);

int kf_refstore_verified(const kf_refstore *rs, const char *digest);
void kf_refstore_mark_verified(kf_refstore *rs, const char *digest);

#endif
