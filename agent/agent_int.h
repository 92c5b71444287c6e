/* agent_int — the agent daemon's state, shared by its files: agent.c
 * (the life cycle, the loop and the handlers of what the coordinator
 * sends), link.c (the coordinator link: the outbox's sends and resends,
 * registration, heartbeats, the socket monitor) and runners.c (a runner
 * process per task: start, frames, end, time limits), and contain.c's
 * start and end (runners' containment, contain.h). agent.c uses them;
 * runners.c uses link.c and contain.c; nothing calls back. Not a header
 * outside agent/. */
#ifndef KF_AGENT_INT_H
#define KF_AGENT_INT_H

#include "agent/agent.h"
#include "agent/outbox.h"
#include "common/buf.h"
#include "common/wire.h"

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#define MAX_RUNNERS 128

typedef struct krunner {
    uint64_t task_id;
    uint32_t attempt;
    int kind;
    pid_t pid;
    int out_fd; /* -1 once at EOF */
    int exited, status;
    int got_result, timed_out, cancelled;
    int gpu;
    uint32_t gpu_index;
    uint64_t started_mono, deadline_mono;
    double limit_s;
    uint32_t nsamples;
    char dir[PATH_MAX];
    kf_buf in;
    /* A serving runner (--serve) takes one kernel's validate and profile
     * tasks one after another, as frames on its stdin (in_fd; -1 for a
     * one-task runner). Between tasks it is idle: its last result sent,
     * its slot free, and it leaves after RUNNERS_IDLE_S or when its GPU is
     * wanted for another kernel. */
    int in_fd;
    int idle;
    uint64_t idle_mono;
    /* Killed for another kernel's serving runner on its GPU and not yet
     * reaped (runners.c retire_later): its pidfd, polled, says when it is
     * gone. A runner started on that GPU meanwhile holds its first task
     * (held, a frame) until then: the old CUDA context is torn down while
     * the new process starts, and gone before the new one opens its own. */
    int retiring, pidfd, holding;
    kf_buf held;
    uint32_t tasks; /* tasks handed to it */
    char kernel_hash[128];
    /* A candidate's: its problem's hash and its configuration ("" for a
     * kernel), which its runner serves only the profile of (runners.c). */
    char problem_hash[128];
    char config[256];
    /* A candidate's task (docs/problems.md): the read end of its checker's
     * verdicts (-1 otherwise), the outputs it must judge, and why the
     * checker failed it (the Result's error while it is sent). */
    int verdict_fd;
    uint32_t want_checks;
    char verdict_why[512];
    pid_t warm_pid; /* the warm runner that forked it (warms.h), 0 for a forked one */
    /* The kernel's stdout and stderr (kout.h): the read end of the pipe
     * that is both (-1 at EOF), and what is kept of the current task's. */
    int kout_fd;
    struct kf_kout *kout;
    /* Why kfleet itself killed the runner, when it did for a reason other
     * than its time limit or a cancel (a bad frame): its attempt's error;
     * infra_kill: the node's fault, not the kernel's (tried again). */
    char killed_why[512];
    int infra_kill;
    uint64_t oom_kills0; /* the node's OOM kill count when it started */
    long maxrss_kb;      /* its peak resident memory, from wait4 */
    int slot_held;       /* it holds its GPU or CPU slot now */
    /* A candidate's checker (checkers.h): its pid (0: none, or reaped). */
    pid_t checker_pid;
    /* A runner that computes the references a candidate's task lacks on
     * this agent (checkers.h): the candidate's assignment, packed, which
     * starts once they are here; `handed_off` once it has. */
    uint8_t *then;
    size_t then_len;
    int handed_off;
    /* A candidate's runner after such a computation: the Result's counts. */
    uint32_t refs_recomputed, refs_differ;
    /* A candidate's bounds, as its checker holds them (the stored
     * references'): its Result says these, not its process's. */
    int has_tols, tol_close;
    double tol_abs, tol_rel, atol, rtol;
    /* Its containment (contain.h): its control group, private mounts and
     * kernel cache; and what its group's limits did, read when it exited
     * (ending.h names them): the memory limit and OOM kills inside it,
     * times its memory met the limit, its process limit and forks refused. */
    struct kcrunner *cont;
    uint64_t cg_memory_max, cg_oom_kills, cg_memory_hits;
    uint64_t cg_pids_max, cg_pids_refused;
    /* A problem's secret seeds of this task (a reference's or a
     * candidate's): scrubbed from whatever text it sends (results.c). */
    uint64_t seeds[80]; /* a pool's 64 and its held-out seeds */
    size_t nseeds;
} krunner;

typedef struct kpending {
    uint64_t oseq;
    uint64_t task_id;
    uint32_t attempt;
    int is_result;
    uint64_t sent_mono; /* 0: due now */
} kpending;

struct kf_agent {
    kf_agent_config cfg;
    char workdir[PATH_MAX];
    char runner_exe[PATH_MAX];
    char doctor_error[512];     /* the inventory's doctor_error points here */
    Kfleet__PythonFacts python; /* the inventory's python points here */
    char python_error[512];
    char torch_note[512];       /* why torch sees fewer GPUs than the node has */
    char compat_dir[4096];      /* forward-compat libraries runners load first, "" when none */
    char compat_error[1024];    /* why the toolkit cannot run on the driver, "" when it can */
    char sandbox_missing[1024]; /* what the runner sandbox cannot enforce here, "" when all */
    char host_lock[PATH_MAX];   /* the machine's host-profile lock, "" for none (harness.h) */
    void *zctx, *sock;
    void *monitor;             /* PAIR fed by the DEALER's monitor: handshakes and disconnects */
    int link_up;               /* a handshake succeeded and no disconnect since */
    uint64_t link_down_mono;   /* since when the coordinator has not been reachable; 0: up */
    uint64_t waiting_log_mono; /* when "still no coordinator" was last said */
    int said_lost;             /* coordinator_lost or no_coordinator was logged */
    uint64_t last_auth_log_mono;
    int stopping;            /* flushing the outbox on the way out: no new tasks */
    uint64_t reconnect_mono; /* when to connect again after a refused handshake; 0: none due */
    kf_outbox *outbox;
    Kfleet__AgentInfo *info;
    int welcomed;
    uint64_t last_register_mono, last_hb_mono;
    double hb_interval_s;
    krunner *runners[MAX_RUNNERS];
    size_t nrunners;
    struct kwarms *warms;     /* warms.h: candidates' warm runners; NULL until the first */
    struct kf_refstore *refs; /* refstore.h: the references candidates are judged by */
    struct kcontain *contain; /* contain.h: runners' groups, mounts and limits */
    int warms_off;            /* they cannot be had here (said once): fresh runners */
    uint32_t cpu_used;
    /* Runners holding each GPU slot: two at once while one that sent its
     * result exits and the next task's starts (a flag was cleared by the
     * one leaving, and the slot said free while in use). */
    uint8_t gpu_busy[64];
    uint64_t gpu_freed_mono[64]; /* when each GPU slot's last task ended; 0: none yet */
    kpending *pending;
    size_t npending, cappending;
    kf_buf scratch;
    char refused[512];     /* the coordinator refused our id for good: why; the loop ends */
    char last_reject[512]; /* the last refusal logged, so a retried one is logged once */
};

/* link.c */
int link_load_pending_cb(void *ctx, uint64_t oseq, const void *data, size_t len);
/* Keeps env in the outbox (durable until acked), then sends it when
 * registered. */
void link_emit(kf_agent *a, Kfleet__Envelope *env, uint64_t task, uint32_t attempt, int is_result);
/* Resends the outbox entries whose resend time came. */
void link_resend_due(kf_agent *a);
/* Sends env now, outside the outbox (progress, registration, heartbeats). */
void link_send_direct(kf_agent *a, Kfleet__Envelope *env);
/* Tells the coordinator this agent stops (after the outbox flush): it shows
 * it stopped at once. Delivered within the socket's linger on close. */
void link_send_goodbye(kf_agent *a, const char *reason);
void link_send_register(kf_agent *a);
void link_send_heartbeat(kf_agent *a);
/* Reads the DEALER's monitor: refused handshakes, disconnects, and the
 * coordinator lost or back. */
void link_drain_monitor(kf_agent *a);

/* contain.c (contain.h: a runner's group, mounts and limits) */
/* At the agent's start, before it starts a thread or a child: its mount
 * namespace and control groups, the limits read from its environment.
 * KF_EINVAL with err for a limit that does not parse. */
int contain_init(kf_agent *a, kf_err *err);
/* Once the node's facts are in (its GPUs and slots): the default limits,
 * logged; what the node cannot give appended to a->sandbox_missing. */
void contain_ready(kf_agent *a);
/* Kills and removes what is left (every runner's group), frees. */
void contain_fini(kf_agent *a);

/* warmup.c (warms.h: the warm runners Python problems' tasks fork from) */
/* At the agent's start, once its facts but torch's probe are in (torch:
 * the version of the node's torch, "" for none): the warm runners of its
 * GPU slots, started to import while torch is probed (KF_WARM=start: the
 * CPU's too; KF_WARM=later: none); waits for none. */
void warmup_at_start(kf_agent *a, const char *torch);
/* Whether ta's runner comes from a warm runner (gpu: whether ta runs on a
 * GPU slot): a candidate's validate or profile of a Python problem, or a
 * Python problem's reference task (the agent's own, for references it
 * lacks, or the coordinator's), one per problem of a level, each paying
 * the interpreter's and torch's start otherwise; on a node that can have
 * them, when the slot's is ready (its import waited for within
 * warms.h's bound). */
int warmup_for_task(kf_agent *a, const Kfleet__TaskAssign *ta, int gpu);

/* runners.c */
krunner *runners_find(kf_agent *a, uint64_t task, uint32_t attempt);
/* Starts ta: on an idle serving runner of its kernel (and GPU) when there
 * is one, else on a new runner. */
int runners_start(kf_agent *a, const Kfleet__TaskAssign *ta, kf_err *err);
/* Whether a task can get a runner: below MAX_RUNNERS, after retiring an
 * idle runner if need be. */
int runners_room(kf_agent *a);
/* Runners running a task (idle serving runners not counted). */
size_t runners_busy(const kf_agent *a);
void runners_fail_assignment(kf_agent *a, const Kfleet__TaskAssign *ta, const char *why);
/* Reads what a runner wrote (samples, its result) into the outbox. */
void runners_drain(kf_agent *a, krunner *r);
/* Reaps exited runners, kills those past their time limit, and sends the
 * result of a runner that died without one. */
void runners_reap(kf_agent *a);
/* Kills every runner (and its process group) and removes its scratch dir. */
void runners_stop_all(kf_agent *a);
/* The CUDA_VISIBLE_DEVICES entry of the agent's GPU `index`. */

#endif
