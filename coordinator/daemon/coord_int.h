/* coord_int — the coordinator's state, shared by coord.c (loop and sockets),
 * sched*.c (agents, tasks, dispatch, a submit's expansion) and control*.c
 * (CLI requests). Not a
 * public header: nothing outside coordinator/ includes it.
 *
 * Memory holds only what is open: the sweeps not yet finished and their
 * tasks, and the agents seen since start. The store is the truth; after a
 * restart memory is rebuilt from it (sched_load). */
#ifndef KF_COORD_INT_H
#define KF_COORD_INT_H

#include "common/buf.h"
#include "daemon/coord.h"
#include "common/keys.h"
#include "common/taskkind.h"
#include "core/store.h"
#include "common/wire.h"

#include <stdint.h>

#define KF_MAX_SLOTS 64

typedef struct sched_order sched_order;
typedef struct sched_priors sched_priors;
typedef struct sched_base sched_base;

typedef struct ktask {
    Kfleet__Task *rec; /* owned; the stored record */
    /* rec's row of the task-kind table, resolved once when the task is
     * added (a kind never changes): what every scheduler step reads. */
    const kf_task_kind *kind;
    int agent;              /* index into agents of the current attempt, -1 */
    int pin;                /* agent index the task must run on, -1 = any */
    uint64_t assigned_mono; /* when the current attempt was sent */
    /* Its stored attempt's assigned_ns, kept so that ending the attempt
     * need not read the record back; 0: not known here (a restart). */
    uint64_t assigned_ns;
    /* Its stored result's elapsed_s, once it has one (0: none, or the
     * sweep was loaded after a restart): what sched_priors.c keeps of the
     * sweep when it finishes. */
    double elapsed_s;
    int confirmed; /* the agent has reported the attempt active */
    int slot_gpu;  /* which slot it holds: 1 gpu, 0 cpu, 2 install, -1 none */
    uint32_t gpu_index;
    /* A profile runs only after its configuration's validation passed:
     * gate is that validate task's index in the sweep (-1: none asked), and
     * the validate task's dependent is this profile's. */
    int32_t gate, dependent;
    /* A candidate's validate or profile waits for its configuration's
     * reference task (docs/problems.md): that task's index, -1: none (its
     * references were stored already, or the task is no candidate's). */
    int32_t ref_gate;
    /* A build that installs another agent's artifact instead of compiling
     * (sched_share.c): the task whose stored result holds it, 0: none. */
    uint64_t share_task;
} ktask;

typedef struct ksweep {
    Kfleet__Sweep *rec; /* owned */
    ktask *tasks;       /* indexed by task idx */
    uint32_t ntasks, cap;
    uint32_t cursor;      /* no pending task below this idx */
    uint32_t counts[16];  /* tasks by TaskState */
    uint32_t bcounts[16]; /* build tasks by TaskState (also in counts) */
    uint32_t cpu_pending; /* pending tasks that take a CPU slot (sched_needs_gpu 0) */
    int dirty;            /* rec changed in this batch */
    /* Every task's result was stored by this process (not loaded after a
     * restart): its durations are known from memory (ktask.elapsed_s). */
    int ran_here;
    /* The order its pending tasks are offered in (sched_order.c); NULL
     * until planned. */
    struct sched_order *order;
    /* Its baseline's configurations and the agents they run on
     * (sched_baseline.c); NULL until first used. */
    struct sched_base *base;
} ksweep;

/* What the coordinator knows of one kernel's build on one agent. */
typedef struct kbuild {
    char hash[65];
    int state; /* TaskState: ASSIGNED while building, else terminal */
    uint64_t task_id;
    char *error;            /* first lines of a failed build */
    char artifact_hash[65]; /* what the build's result said it made, "" when unknown */
    char built_by[128];     /* installed from this agent's build, "" for its own */
} kbuild;

/* A kernel built once for every agent with one toolchain (sched_share.c):
 * building on `agent` (the others wait for it), ready in the stored result
 * of task_id, or unshareable (that build sent no artifact: too big, or it
 * failed; each agent builds for itself, in parallel). */
typedef struct kshare {
    char toolchain[65], hash[65];
    const struct kagent *agent;
    uint64_t task_id;
    int ready, unshareable;
} kshare;

/* The ROUTER routing id of a connection: libzmq makes one per connection
 * (agents set none), so a route names a connection, never an agent. */
#define KF_ROUTE_MAX 255

typedef struct kagent {
    char *id;
    /* Where its frames come from and replies go: the connection it last
     * registered on (route_len 0: none yet). A frame is this agent's only if
     * it arrives on this route with this key. */
    uint8_t route[KF_ROUTE_MAX];
    size_t route_len;
    Kfleet__AgentInfo *info; /* owned; NULL for an agent known only from the store */
    int registered;          /* registered since this coordinator started */
    int lost;
    uint64_t last_seen_mono;
    char key[41];     /* the Curve key its id is bound to (AgentInfo.key) */
    int revoked;      /* its key left the allow list: lost at the next check */
    int stopped;      /* lost because it said goodbye (it stopped), not silent */
    uint64_t refused; /* its frames refused for want of the right to send them */
    uint32_t gpu_slots, cpu_slots, cpu_used;
    /* An install of another agent's artifact under way: it runs beside the
     * CPU slot (sched_take_slot), one at a time. */
    uint32_t installing;
    uint8_t gpu_busy[KF_MAX_SLOTS];
    /* The kernel each GPU slot ran last (its hash's first 16 digits, ""
     * none): its runner there is warm, and serves that kernel's next task. */
    char gpu_kernel[KF_MAX_SLOTS][17];
    uint64_t *acks; /* outbox seqs handled in this batch, acked after commit */
    size_t nacks, capacks;
    uint64_t *running; /* task ids of the attempts assigned to it */
    size_t nrunning, caprunning;
    kbuild *builds;
    size_t nbuilds, capbuilds;
    /* What its builds depend on (sched_toolchain), as it last registered:
     * builds recorded under another one are not its artifacts. */
    char toolchain[65];
    /* Registered or lost since the dispatcher last looked: its baseline
     * tasks are to be made again, or ended (sched_baseline.c). */
    int baseline_recheck;
} kagent;

/* A message to send once the batch is committed. */
typedef struct koutmsg {
    int to_control; /* 1: control socket, 0: agent socket */
    char *peer;
    size_t peer_len;
    kf_buf payload;
} koutmsg;

struct kf_coord {
    kf_coord_config cfg;
    void *zctx;
    void *agents_sock;
    void *control_sock;
    void *zap_sock; /* REP at inproc://zeromq.zap.01: libzmq asks it about each handshake */
    kf_keypair keys;
    kf_allow allow; /* sorted by key */
    uint64_t refused_handshakes, refused_frames;
    struct {
        char key[41];
        uint64_t mono;
    } refused_log[16];      /* the last refusals logged, to keep a scanner from flooding the log */
    char last_refused[200]; /* the last refused handshake: key and address, for a stall's why */
    long fd_limit;          /* RLIMIT_NOFILE in force (raised at start) */
    uint64_t fd_shed, fd_emfile; /* connections refused for want of descriptors, unlogged */
    uint64_t fd_log_mono;        /* when they were last logged */
    uint64_t allow_fails, allow_warn_mono; /* allow-list re-reads failed since the last warning */
    kf_store *store;
    kf_txn *txn; /* the batch's write transaction, NULL between batches */
    char agent_endpoint[256];

    ksweep **sweeps; /* open sweeps, by submission order */
    size_t nsweeps, capsweeps;
    kagent **agents;
    size_t nagents, capagents;
    kshare *shares; /* builds shared by toolchain (sched_share.c) */
    size_t nshares, capshares;
    sched_priors *priors; /* finished sweeps' durations (sched_priors.c); NULL until read */
    /* The operator's trust list (cfg.trust_file), as last read: the agent
     * ids trusted to build for others beside those on this machine. */
    char **trusted;
    size_t ntrusted;
    int trust_loaded; /* read once at least (sched_share_load_trust) */
    /* When the loop last read the agent socket empty: an agent's silence is
     * counted up to then, so a turn the coordinator spends on a big request
     * (heartbeats queued, unread) is not taken for the agents' silence. */
    uint64_t agents_drained_mono;

    koutmsg *out; /* outgoing after commit */
    size_t nout, capout;
    int shutdown;
    int dispatch_needed;
    size_t rr; /* round-robin start of the dispatcher */
    uint64_t started_ns;
    uint64_t protocol_errors;
    size_t max_frame; /* the largest agent frame seen: the map keeps room for it */
    kf_buf scratch;
    struct kf_tunnels *tunnels; /* SSH tunnels of launched agents; NULL until the first */
    struct kf_launches
        *launches; /* `kfleet launch`es run here (launches.h); NULL until the first */
};
#define KF_COORD_TUNNELS 1

/* turn.c: the batch's transaction and what leaves after its commit */
void coord_queue(kf_coord *c, int to_control, const void *peer, size_t peer_len,
                 const kf_buf *payload);
/* Queues env to agent a's connection; nothing when it has none. */
void coord_queue_env(kf_coord *c, const kagent *a, Kfleet__Envelope *env);
/* Queues env to a connection that is no registered agent's (yet). */
void coord_queue_route(kf_coord *c, const void *route, size_t route_len, Kfleet__Envelope *env);
void coord_ack_later(kagent *a, uint64_t oseq);
/* The turn's write transaction, begun on first use. */
int coord_txn(kf_coord *c, kf_txn **out);

/* auth.c: the allow list, the ZAP handler, refusals */
/* The name a key is accepted under in the allow list, or NULL. */
const char *auth_allowed(const kf_coord *c, const char *pub);
void auth_sort_allow(kf_allow *a);
/* Binds the ZAP handler's REP socket; before any CURVE socket accepts. */
int auth_start_zap(kf_coord *c, kf_err *err);
/* Answers one pending ZAP request. */
void auth_handle_zap(kf_coord *c);
/* Re-reads the allow list when it changed; agents whose key left it are
 * marked revoked (lost at the next check). */
void auth_refresh_allow(kf_coord *c);
/* Logs a refused handshake or frame (each key at most every 10 s). */
void auth_log_refused(kf_coord *c, const char *what, const char *pub, const char *address);

/* sched_match.c */
/* 1 when agent a can run kernel k as far as the node's software goes (a
 * Python kernel: an interpreter with every package it imports); else 0,
 * with why ("AGENT: what it lacks") when why is not NULL. Slots are the
 * dispatcher's business. */
int sched_can_run(const kagent *a, const Kfleet__KernelRef *k, char *why, size_t why_len);
/* 1, with why (the kernel, the agents that lack what it needs, what to do),
 * when agents are up and none of them can run k — or, given `only` (the
 * agents of `nodes: all`), when one of those cannot. 0 otherwise, also
 * when no agent is up yet: one may still come. */
int sched_kernel_unrunnable(const kf_coord *c, const Kfleet__KernelRef *k, kagent *const *only,
                            size_t nonly, char *why, size_t why_len);

/* sched.c */
extern const kf_wire_handler kf_sched_handlers[KF_WIRE_BODY_MAX];
int sched_load(kf_coord *c, kf_err *err);
void sched_dispatch(kf_coord *c);
void sched_check_agents(kf_coord *c);
kagent *sched_agent(kf_coord *c, const char *id, int create);
/* The registered agent whose connection is route, or NULL. */
kagent *sched_agent_by_route(kf_coord *c, const void *route, size_t route_len);
ksweep *sched_sweep(kf_coord *c, uint32_t sweep_id);
ktask *sched_task(kf_coord *c, uint64_t task_id, ksweep **sw_out);
ksweep *sched_add_sweep(kf_coord *c, Kfleet__Sweep *rec);
ktask *sched_add_task(kf_coord *c, ksweep *sw, Kfleet__Task *rec);

/* sched_expand.c: a submitted sweep's tasks. */
/* The configurations of a task group (the product of its axes' lengths),
 * or 0 when the group is not one a client makes (why says what; why may be
 * NULL with len 0). At most KF_SWEEP_MAX_CONFIGS. */
uint64_t sched_group_configs(const Kfleet__TaskGroup *g, size_t nkernels, char *why, size_t len);
/* The tasks req makes before `nodes: all` multiplies them: its tasks and
 * each group's configurations times kinds; 0 with why ("submit: ...") when
 * a group is malformed or the configurations pass KF_SWEEP_MAX_CONFIGS. */
uint64_t sched_expand_count(const Kfleet__SubmitRequest *req, char *why, size_t len);
/* The agents a `nodes: all` sweep runs on: those registered and not lost
 * now; *n of them. The caller frees the array (never NULL). */
kagent **sched_all_targets(kf_coord *c, size_t *n);
/* Makes sweep sw's tasks from req (sw->rec is the sweep's record), puts
 * them in txn and keeps them: the problem's nrefs reference tasks (for
 * the configurations ref_cis) first, then the tasks and the groups, each
 * on every one of targets (nodes: all; NULL: any agent). */
void sched_expand(kf_coord *c, ksweep *sw, kf_txn *txn, const Kfleet__SubmitRequest *req,
                  kagent *const *targets, size_t ntargets, const uint32_t *ref_cis, size_t nrefs);
/* Ends a task with a terminal state and a synthesized result (no agent ran it
 * to completion): lost on every attempt, cancelled, build failed. */
int sched_finish(kf_coord *c, ksweep *sw, ktask *t, int state, const char *error);
/* sched_expand.c: the tasks of a sweep's refused candidates (KernelRef.refused,
 * kept by `refused: fail`) end failed at submit, saying why: failed rows,
 * while the other candidates run. */
void sched_fail_refused(kf_coord *c, ksweep *sw);
void sched_set_state(ksweep *sw, ktask *t, int state);
/* Ends every open task of sw as cancelled with why, telling the agents
 * running them to stop; the sweep is marked cancelled. */
void sched_cancel_sweep(kf_coord *c, ksweep *sw, const char *why);
/* Once every task of sw is terminal: stores it finished and frees it from
 * memory (sw is gone then). */
void sched_maybe_finish_sweep(kf_coord *c, ksweep *sw);
void sched_free_sweep(ksweep *sw);
void sched_free_agent(kagent *a);
/* sched_priors.c: sw, which ran here (ksweep.ran_here), has finished: its
 * durations are kept from memory for the next walk, as reading them back
 * from the store would find them. */
void sched_priors_finished(sched_priors **cache, const ksweep *sw);
/* Frees what sched_priors.c keeps of finished sweeps. */
void sched_priors_free(sched_priors **cache);

/* control.c: answers the control request of len bytes at data. */
void control_handle(kf_coord *c, const void *peer, size_t peer_len, const void *data, size_t len);
/* control_handle for a request decoded once by the caller
 * (kf_ctl_unpack_request), who keeps it; NULL: it did not decode, and err
 * says why. */
void control_answer(kf_coord *c, const void *peer, size_t peer_len, Kfleet__ControlRequest *req,
                    size_t len, const kf_err *err);
/* control_reply.c: queues rep (or an error reply with code and msg) to the
 * control peer. */
void control_reply(kf_coord *c, const void *peer, size_t peer_len, Kfleet__ControlReply *rep);
void control_reply_error(kf_coord *c, const void *peer, size_t peer_len, int code, const char *msg);
/* control_fleet.c: the tunnel and launch requests, one reply each. */
void control_tunnel_open(kf_coord *c, const void *peer, size_t peer_len,
                         const Kfleet__TunnelSpec *ts);
void control_tunnel_status(kf_coord *c, const void *peer, size_t peer_len, const char *name);
void control_tunnel_close(kf_coord *c, const void *peer, size_t peer_len, const char *name);
void control_launch(kf_coord *c, const void *peer, size_t peer_len,
                    const Kfleet__LaunchRequest *req);
void control_launch_status(kf_coord *c, const void *peer, size_t peer_len, uint32_t id);
/* The store bytes a control request of len bytes may write (a submit's
 * tasks, a cancel's results; req NULL: it did not decode), so the loop can
 * make room before handling it. */
size_t control_write_estimate(kf_coord *c, const Kfleet__ControlRequest *req, size_t len);
/* control_problem.c: NULL when req, a problem sweep, is well formed (the
 * problem last, candidates before it, the seed policy in range, every
 * candidate's group over the same configurations), else why not. */
const char *control_problem_wrong(const Kfleet__SubmitRequest *req);
/* The configurations of g (n of them) that need a reference task: the
 * problem's seed pool drawn or renewed now under txn (its generation into
 * in->seed_generation, for the reports), and each configuration whose
 * references the store lacks for some seed, into *cis (freed by the
 * caller), in order; why says what failed. */
int control_plan_references(kf_txn *txn, Kfleet__Sweep *in, const Kfleet__TaskGroup *g, uint64_t n,
                            uint64_t now_ns, uint32_t **cis, size_t *ncis, char *why,
                            size_t whylen);
/* The secret seeds reference task t is sent (TaskSpec.seeds, never in the
 * task record): those of the problem's pool, as it stands at now_ns, that
 * still lack a reference for t's configuration, or all of them when none
 * does. *seeds is freed by the caller. */
int control_reference_seeds(kf_txn *txn, const Kfleet__Sweep *sw, const Kfleet__Task *t,
                            uint64_t now_ns, uint64_t **seeds, size_t *n);
/* What a candidate's task t is judged against: the seeds of the problem's
 * pool with a stored reference for t's configuration, and those
 * references, *n of each (a seed without one is left out: the runner
 * fails a task with none). Freed with control_candidate_refs_free. */
int control_candidate_refs(kf_txn *txn, const Kfleet__Sweep *sw, const Kfleet__Task *t,
                           uint64_t now_ns, uint64_t **seeds, Kfleet__Reference ***refs, size_t *n);
void control_candidate_refs_free(uint64_t *seeds, Kfleet__Reference **refs, size_t n);

#endif
