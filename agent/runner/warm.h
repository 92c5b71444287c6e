/* warm — a runner warmed with a Python problem's imports and forked per
 * candidate task (docs/problems.md, "A warm runner per candidate").
 *
 * `kfleet-agent --runner --warm --workdir DIR` starts the node's Python
 * interpreter (pykernel.h), imports the packages kernels use (numpy,
 * torch, triton: those installed) from the interpreter's own module path
 * only, and then waits on its stdin, a SOCK_SEQPACKET socket from the
 * agent, for tasks. It initializes no CUDA and loads no kernel, problem or
 * candidate code, and it never sees a task: a request carries descriptors
 * and a scratch path, the task is read from a descriptor by the child.
 *
 * Per request it forks an intermediate process that forks the task's
 * runner, puts it in a process group of its own, answers the runner's pid
 * on the socket and exits, so that the runner is re-parented to the agent
 * (a child subreaper, PR_SET_CHILD_SUBREAPER): the agent waits for it,
 * kills its group and reads its exit status exactly as it does a runner it
 * forked itself. The runner then does what kf_runner_main does, in the
 * same order (sandbox, CUDA, problem, checker, wipe, candidate), on a copy
 * of the warm process's memory that no other candidate touched. */
#ifndef KF_RUNNER_WARM_H
#define KF_RUNNER_WARM_H

#include "runner/contain.h"

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* The descriptors of a request, in this order, as SCM_RIGHTS: the task,
 * the frames, the runner's log, the kernel's output (its stdout and
 * stderr), and for a candidate its socket to the checker: the
 * runner's channel (harness.h). */
enum {
    KF_WARM_FD_TASK,
    KF_WARM_FD_OUT,
    KF_WARM_FD_LOG,
    KF_WARM_FD_KOUT,
    KF_WARM_FD_CHECKER,
    KF_WARM_MAX_FDS
};

/* One request, agent to warm process. */
typedef struct kf_warm_req {
    uint64_t task_id; /* for the warm's log only */
    uint32_t attempt;
    uint32_t nfds;          /* 4, or 5 with the checker's socket */
    char scratch[PATH_MAX]; /* the runner's scratch dir (turns the sandbox on), "" for none */
    /* A candidate's kernel hash (hex), "" for none: once the runner is
     * forked and answered, the warm process builds the Triton launchers
     * the kernel's runners recorded in its kept cache, WORKDIR/kcache/HASH
     * (pywarm.py learn_launchers), so that the next runners find them
     * built. */
    char kernel_hash[129];
    kf_contain_plan contain; /* its control group and private mounts, entered first */
    uint64_t spawn_ns;       /* when the agent started the runner (harness.h) */
    uint32_t serve;          /* a serving runner (kf_runner_serve): its tasks on the task socket */
} kf_warm_req;

/* The answer: the runner's pid, or -1 and why. The warm process's first
 * message, once its imports are done, is one too: its own pid and the
 * packages imported, or -1 and why it cannot serve. */
typedef struct kf_warm_rep {
    int32_t pid;
    uint32_t ahead; /* the runner was made before its request (a spare, warm.c) */
    char why[256];
} kf_warm_rep;

/* The kernels whose recorded launchers the warm process learns once it
 * has forked a runner of kernel req, given the kernels of its last two
 * requests (last0 the latest, "" for none): those two, whose runners have
 * run since, then req's own (its earlier runners'). Two, because the
 * latest one's runner may still be on its way out, its records not kept
 * yet (the agent starts the next runner while a retired one's CUDA context
 * is torn down); the one before it is gone. Each once, req's last, none
 * "": how many, into out (at most 3). */
size_t kf_warm_learn_order(const char *last0, const char *last1, const char *req,
                           const char *out[3]);

/* Entry point of `kfleet-agent --runner --warm --workdir DIR`; returns the
 * exit status (0 at EOF on stdin). The runners it forks never return. */
int kf_runner_warm(const char *workdir);

#endif
