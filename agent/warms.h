/* warms — the agent's warm runners (runner/warm.h): a process that has
 * imported the packages Python problems use, started once per GPU slot
 * (or the CPU) on the first Python task that wants it or with the agent
 * (warms_start), and forking the
 * runner of each later one, whatever its problem: it holds no problem's
 * code (runner/warm.h), so the problems of a level share it. The runner
 * it forks is re-parented to the agent (a child subreaper), so runners.c
 * waits for it, kills it and reads its status as it does a runner it
 * forked itself.
 *
 * A new warm process imports before it takes a task: the agent's loop
 * waits for that at most WARMS_READY_WAIT_MS in all (under the
 * coordinator's heartbeat timeout), and until it is ready its key's tasks
 * get fresh runners, as before. A warm process that died or was killed is
 * started again on the next task that wants it; a task it took and died on
 * fails with the reason (an infrastructure failure: the coordinator tries
 * it again), since a runner it forked may hold the task's descriptors.
 * Runners it forked before are the agent's children, not its own, and go
 * on. After WARMS_MAX_FAILS starts failed in a row the agent starts none
 * (said once). A warm process leaves after WARMS_IDLE_S without a task,
 * or when WARMS_MAX are running and another is wanted. */
#ifndef KF_AGENT_WARMS_H
#define KF_AGENT_WARMS_H

#include "common/err.h"
#include "common/execenv.h"
#include "runner/warm.h"

#include <stdint.h>
#include <sys/types.h>

typedef struct kwarms kwarms;

/* Makes `env` (a copy of the agent's) the environment of a runner of the
 * GPU slot (gpu 0: the CPU), before its fork (childenv.h). */
typedef void (*warms_env_fn)(void *ctx, int gpu, uint32_t gpu_index, kf_execenv *env);

/* The agent's warm runners, none started: `exe` and `workdir` as a
 * runner's, `env` for each warm process's environment. NULL with err
 * filled when this node cannot have them (KF_WARM=0 in the agent's
 * environment (it takes 0, 1, start or later: agent_int.h's warmup_at_start), or no
 * PR_SET_CHILD_SUBREAPER): candidates then get a fresh runner each, as before. keep_tmp: the warm
 * processes' logs stay. */
kwarms *warms_new(const char *exe, const char *workdir, int keep_tmp, warms_env_fn env, void *ctx,
                  kf_err *err);

/* Kills every warm process, waits for it, frees all; *self NULL. */
void warms_destroy(kwarms **self);

/* Starts the warm process of (gpu, gpu_index) unless one lives or the
 * table is full (warms_ready waits for its imports): 0, or -1 (logged). */
int warms_start(kwarms *w, int gpu, uint32_t gpu_index);

/* Whether the warm process of (gpu, gpu_index) is ready for a
 * task: it is started when there is none (or it died), and a new one is
 * waited for within what is left of its WARMS_READY_WAIT_MS. */
int warms_ready(kwarms *w, int gpu, uint32_t gpu_index);

/* Has the ready warm process of (gpu, gpu_index) fork the runner
 * of one task, with fds[0..req->nfds) (warm.h's order) as its descriptors
 * (the caller keeps and closes its own). Returns the runner's pid (a
 * process group leader, the agent's child once waited for) and *warm_pid,
 * or -1 with err: KF_EUNAVAIL when no warm process got the descriptors
 * (the task may take a fresh runner), KF_EIO when one took them and
 * failed (the task fails with err). */
pid_t warms_spawn(kwarms *w, int gpu, uint32_t gpu_index, const kf_warm_req *req, const int *fds,
                  pid_t *warm_pid, kf_err *err);

/* A child the agent reaped: 1 when it was a warm process (noted dead,
 * logged), else 0. */
int warms_reaped(kwarms *w, pid_t pid, int status);

/* Retires warm processes idle past WARMS_IDLE_S and frees dead ones. */
void warms_tick(kwarms *w);

#endif
