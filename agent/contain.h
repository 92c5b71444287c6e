/* contain — the agent's side of a runner's containment (issue 44): each
 * runner in a control group of its own (runner/cgroup.h) with a memory and
 * a process limit, killed as a whole when it ends; a private /dev/shm and
 * TMPDIR (runner/contain.h); its kernel's cache under a quota
 * (kcache.h); and the evidence ending.h names (an OOM kill inside the
 * group, forks refused at its limit).
 *
 * The limits, each settable in the agent's environment (0 leaves it off):
 *
 *   KF_RUNNER_MEMORY  the memory of a runner's group (memory.max), unless
 *                     its sweep says memory_limit; default: three quarters
 *                     of the node's memory (or of the agent's own group's
 *                     limit) divided among the runners that can run at
 *                     once (GPUs + CPU slots), at least 1 GiB;
 *   KF_RUNNER_PIDS    processes and threads of a runner (pids.max);
 *                     default 4096, or 32 per CPU where that is more; where
 *                     the agent's own group is limited, at most half of
 *                     that divided among the runners (at least 64), so a
 *                     fork bomb leaves the rest of the node's work room;
 *   KF_RUNNER_TMPFS   the size of its private /dev/shm and of its TMPDIR,
 *                     each; default a quarter of its memory limit;
 *   KF_RUNNER_CACHE   its kernel's cache quota; default 2 GiB, at most a
 *                     quarter of its memory limit (a tmpfs is memory).
 *
 * Sizes take K, M, G, T suffixes (common/util.h kf_parse_size). KF_CONTAIN=0
 * turns all of it off (a before/after comparison; the agent says so).
 * What the node cannot give is logged at start and sent with the
 * sandbox's sentence in the registration (`kfleet status`). The agent's
 * start and end (contain_init, contain_ready, contain_fini) are declared
 * in agent_int.h, for agent.c; what follows is runners.c's. */
#ifndef KF_AGENT_CONTAIN_H
#define KF_AGENT_CONTAIN_H

#include "agent/agent_int.h"
#include "runner/warm.h"

/* Runner r of task ta, before it is forked: its scratch dir r->dir (made
 * here: WORKDIR/tmp/TASK-ATTEMPT, or .N after it while another runner has
 * that one), its group, TMPDIR and kernel cache. KF_OK, or an error with
 * err (the runner must not start: it would run unbounded where the node
 * promised bounds). */
int contain_runner(kf_agent *a, krunner *r, const Kfleet__TaskAssign *ta, kf_err *err);
/* In the forked child, before exec: enters r's group and mounts. On
 * failure it writes why on the runner's log and exits 127 (the runner
 * could not start: tried again). */
void contain_child(const krunner *r);
/* The same plan, for a warm runner's child (runner/warm.h). */
void contain_warm(const krunner *r, kf_warm_req *req);

/* r's runner process was reaped: its group's evidence kept in r (ending.h
 * reads it), and everything left in the group killed, so nothing of the
 * task outlives it (nor holds its pipes open). Once per runner. */
void contain_exited(kf_agent *a, krunner *r);

/* Relays the Result r wrote (results_relay), after killing the processes
 * of r's group that left r's process tree (a setsid'd child whose parent
 * exited, a daemon): their task then fails, saying so. */
void contain_relay(kf_agent *a, krunner *r, Kfleet__Envelope *env);

/* r is being freed: its group killed and removed, its kernel's cache kept
 * (or, over its quota, dropped) and unmounted. Before its scratch dir is
 * removed. */
void contain_end(kf_agent *a, krunner *r);

#endif
