/* contain — what a runner process enters before any of its task runs: its
 * control group (cgroup.h) in every hierarchy, and, where the agent may
 * mount (root, or CAP_SYS_ADMIN), a mount namespace of its own in which
 * /dev/shm and its TMPDIR (SCRATCH/tmp) are tmpfs of a bounded size,
 * private to it and gone with its last process: a kernel that fills them
 * gets "No space left on device" at the bound, and nothing it wrote there
 * outlives it or reaches another runner.
 *
 * The agent forks the runner and calls kf_contain_enter in the child
 * before exec; a warm runner's child (warm.h) calls it on the plan the
 * agent sent with its request. Both are children of threaded processes, so
 * kf_contain_enter makes system calls only (open, write, unshare, mount):
 * every path and option is prepared in the plan beforehand.
 *
 * The agent itself (root) lives in a mount namespace of its own
 * (kf_contain_private_mounts), a slave of the node's: the tmpfs it mounts
 * for its runners (agent/kcache.h: a kernel's cache under its quota) are
 * seen by nobody else and go when it goes, even when it is killed. */
#ifndef KF_CONTAIN_H
#define KF_CONTAIN_H

#include "common/err.h"
#include "runner/cgroup.h"

#include <limits.h>
#include <stdint.h>

typedef struct kf_contain_plan {
    uint32_t nprocs;
    char procs[KF_CG_MAX_DIRS][KF_CG_PATH + 16]; /* cgroup.procs files to join */
    int mounts;                                  /* a mount namespace of its own */
    char shm_opts[64];                           /* /dev/shm's tmpfs options, "" for none */
    char tmp_opts[64];                           /* tmpdir's tmpfs options */
    char tmpdir[PATH_MAX];                       /* "" for none */
} kf_contain_plan;

/* The plan for a runner in group cg (NULL: none), with a private /dev/shm
 * and a tmpfs on tmpdir (which must exist) of tmpfs_bytes each when
 * mounts is set (tmpfs_bytes 0: no private mounts). */
void kf_contain_plan_make(kf_contain_plan *p, const kf_cgroup *cg, int mounts, uint64_t tmpfs_bytes,
                          const char *tmpdir);

/* Enters the plan: the groups, then the namespace and its mounts. Only
 * system calls. 0, or -1 with errno and *what naming the step that failed. */
int kf_contain_enter(const kf_contain_plan *p, const char **what);

/* Puts the calling process (single-threaded: before any thread starts) in
 * a mount namespace of its own, a slave of the node's. 0, or KF_EUNAVAIL
 * with err when the process may not (not root: no CAP_SYS_ADMIN). */
int kf_contain_private_mounts(kf_err *err);

/* Mounts a tmpfs of `bytes` on dir (mode 0700) in this process's
 * namespace. 0, or KF_EIO with err. */
int kf_contain_tmpfs(const char *dir, uint64_t bytes, kf_err *err);

/* Unmounts dir (lazily: a process still in it keeps its files until it
 * leaves). */
void kf_contain_unmount(const char *dir);

#endif
