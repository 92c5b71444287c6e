/* cgroup — a runner's control group: every process of the runner (the
 * kernel's children, a build's compilers, a daemon that called setsid) is
 * in it wherever it goes in the process tree, its memory and its count of
 * processes are bounded, and all of it is killed at once when the runner
 * ends. Where the node gives them:
 *
 *   - cgroup v2 (a delegated group, as systemd's Delegate=yes gives a
 *     service, or the hierarchy's root): cgroup.kill (Linux 5.14; before
 *     it cgroup.freeze and a kill of every process), and the memory and
 *     pids controllers when the agent's group may enable them for its
 *     children (memory.max, memory.swap.max 0, pids.max). A group that
 *     holds other processes than the agent cannot (cgroup v2's rule that a
 *     group with controllers for its children holds no process): the agent
 *     moves itself into a leaf when it is alone there, else the limits are
 *     named as missing and only the kill is had;
 *   - cgroup v1 (a hybrid node: memory and pids as v1 hierarchies, often
 *     beside a v2 mount at /sys/fs/cgroup/unified that gives the kill):
 *     memory.limit_in_bytes (and memsw where swap is accounted), pids.max,
 *     and a kill by the freezer, else by listing and killing until empty
 *     (pids.max bounds the race with forks);
 *   - none (a non-root agent without delegation): nothing here; runners
 *     keep their process group, which a setsid leaves.
 *
 * Layout: in each hierarchy, under the agent's own group, a group
 * kfleet-PID for this agent and in it one group per runner. An agent that
 * starts removes the kfleet-PID groups whose pid no longer runs, killing
 * what is left in them (orphans of an agent that was killed).
 *
 * Everything is a real file write; nothing here is simulated. */
#ifndef KF_CGROUP_H
#define KF_CGROUP_H

#include "common/err.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What the node gives, as bits. */
enum {
    KF_CG_KILL = 1u << 0,   /* the whole group killed (any hierarchy) */
    KF_CG_MEMORY = 1u << 1, /* a memory limit */
    KF_CG_PIDS = 1u << 2,   /* a limit on processes and threads */
};

/* The most hierarchies a runner joins: v2, v1 memory, v1 pids, v1 freezer. */
#define KF_CG_MAX_DIRS 4
#define KF_CG_PATH 512

typedef struct kf_cgroups kf_cgroups;
typedef struct kf_cgroup kf_cgroup;

/* The agent's runner groups: probes /proc/self/cgroup and the mounts,
 * makes kfleet-PID in each hierarchy it can write, removes those of agents
 * that are gone. Never fails: what the node lacks is kf_cgroups_missing's
 * sentence. Call it before the agent starts a thread or a child (it may
 * move the agent into a group of its own, see above). */
kf_cgroups *kf_cgroups_new(void);
/* Kills and removes every group left, then the agent's own; *self NULL. */
void kf_cgroups_destroy(kf_cgroups **self);

/* KF_CG_* bits this node gives. */
unsigned kf_cgroups_have(const kf_cgroups *cgs);
/* A sentence naming what is missing and why ("" when nothing is). */
const char *kf_cgroups_missing(const kf_cgroups *cgs);
/* What the cgroups layer says of itself for the log: the hierarchies
 * used ("v2 /sys/fs/cgroup/x (kill); v1 memory ..."). */
const char *kf_cgroups_describe(const kf_cgroups *cgs);
/* The memory the agent's processes may use: the node's, or less where the
 * agent's own group is limited. 0 when unknown. */
uint64_t kf_cgroups_memory(const kf_cgroups *cgs);
/* The processes and threads the agent's own group may hold (its
 * pids.max, as the agent's parent set it), 0 when unlimited or unknown:
 * the runners' default limits leave room under it for the rest. */
uint64_t kf_cgroups_pids(const kf_cgroups *cgs);

/* A runner's group `name` (letters, digits, '-') with these limits (0:
 * none), made in every hierarchy the agent has. NULL with err when the
 * node has groups and one could not be made or limited. */
kf_cgroup *kf_cgroup_new(kf_cgroups *cgs, const char *name, uint64_t memory_max, uint64_t pids_max,
                         kf_err *err);
/* Kills everything in it (kf_cgroup_kill), removes it, frees; *self NULL. */
void kf_cgroup_destroy(kf_cgroup **self);

/* The cgroup.procs file of each hierarchy the group is in (i < n), to be
 * written "0" by the process that joins (kf_contain_enter, which only
 * opens and writes: fine in a forked child). */
size_t kf_cgroup_nprocs(const kf_cgroup *cg);
const char *kf_cgroup_procs(const kf_cgroup *cg, size_t i);

/* Kills every process in the group and waits (at most about 2 s) until
 * none is left. Returns how many it found at its first look, or -1 when
 * processes were still there at the end. */
int kf_cgroup_kill(kf_cgroup *cg);

/* Kills the processes of the group that are not in root's process tree
 * (their parents' chain does not reach root: a child that called setsid
 * and whose parent exited, a daemon). Returns how many. */
int kf_cgroup_kill_orphans(kf_cgroup *cg, pid_t root);

/* The state letter ('R', 'S', 'Z'...) and parent of pid, from
 * /proc/PID/stat (either may be NULL). 0, or -1 when pid is gone. */
int kf_cgroup_pid_stat(pid_t pid, char *state, pid_t *ppid);

/* What the group's limits did. */
typedef struct kf_cgroup_events {
    uint64_t memory_max;   /* its memory limit, bytes (0: none) */
    uint64_t oom_kills;    /* processes the OOM killer killed in it */
    uint64_t memory_hits;  /* times its memory reached the limit (v1 failcnt, v2 max) */
    uint64_t memory_peak;  /* its peak usage, bytes (0: unknown) */
    uint64_t pids_max;     /* its process limit (0: none) */
    uint64_t pids_refused; /* forks refused at that limit */
} kf_cgroup_events;

void kf_cgroup_events_get(const kf_cgroup *cg, kf_cgroup_events *ev);

/* The same for the group the calling process is in (a build runner naming
 * why its compiler was killed). 0, or -1 when it is in none with limits. */
int kf_cgroup_self_events(kf_cgroup_events *ev);

#endif
