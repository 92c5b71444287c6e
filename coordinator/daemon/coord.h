/* coord — the coordinator daemon (`kfleet serve`, and embedded in `kfleet run`).
 *
 * One thread, one loop: a ROUTER socket for agents, a ROUTER socket for the
 * CLI's control requests, and the LMDB store. Each turn of the loop drains
 * what the sockets hold into one write transaction (group commit), commits
 * it, and only then sends what the turn produced: acks, assignments, replies.
 * So an agent never hears "stored" for something that is not on disk, and a
 * crash between commit and send costs only a resend. */
#ifndef KF_COORD_H
#define KF_COORD_H

#include "common/err.h"

#include <signal.h>

typedef struct kf_coord kf_coord;

typedef struct kf_coord_config {
    const char *store_dir;        /* LMDB directory */
    const char *agent_bind;       /* e.g. "tcp://127.0.0.1:*" or "ipc:///..." */
    const char *control_endpoint; /* "ipc://.../control.sock" */
    const char *endpoint_file;    /* where the bound agent endpoint is written, or NULL */
    /* CurveZMQ, always on: the coordinator's key pair (made on first start)
     * with its public half beside it, and the list of accepted agent keys. */
    const char *key_file;
    const char *pub_file;
    const char *allow_file;
    double heartbeat_interval_s; /* asked of agents; default 1 s */
    double heartbeat_timeout_s;  /* silence after which an agent is lost; default 10 s */
    double assign_grace_s;       /* an assignment an agent does not confirm in this
                                  * time is requeued; default 5 s */
    int no_shared_builds;        /* 1: agents with one toolchain do not share
                                  * artifacts (sched_share.c); each compiles */
    /* The operator's list of agent ids trusted to build for other agents
     * (sched_share.c), one a line; NULL or absent: none beyond the agents
     * on this machine (an ipc:// agent endpoint). */
    const char *trust_file;
} kf_coord_config;

/* Opens the store, binds both sockets, and loads unfinished work. */
int kf_coord_new(const kf_coord_config *cfg, kf_coord **out, kf_err *err);
/* Runs until *stop is set (by a signal handler) or a shutdown request. */
int kf_coord_run(kf_coord *self, volatile sig_atomic_t *stop, kf_err *err);
void kf_coord_destroy(kf_coord **self);
/* The endpoint agents connect to, with the port the OS chose. */
const char *kf_coord_agent_endpoint(const kf_coord *self);

#endif
