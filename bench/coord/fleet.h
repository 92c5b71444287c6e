/* fleet — many emulated agents in one thread, speaking kfleet's real agent
 * protocol (CurveZMQ DEALERs, protobuf envelopes through common/wire.c) to a
 * real coordinator, for the coordinator benchmarks.
 *
 * An emulated agent does what kfleet-agent does on the wire and nothing
 * else: it registers with its own Curve key pair, heartbeats at the interval
 * the Welcome asks (listing the attempts it runs or holds unacked results
 * for), confirms each TaskAssign with Progress{RUNNING} and answers with a
 * successful Result, and keeps every Result and SampleBatch in an in-memory
 * outbox under an oseq until the coordinator acks it, resending on timeout
 * and after every Welcome. It never runs anything: a task "runs" for
 * task_s seconds (0: answered at once) or, in ingest mode, streams samples.
 *
 * One thread polls all the DEALERs (zmq_poll), so a thousand agents cost the
 * load generator one core at most and the coordinator sees a thousand
 * independent connections, each with its own CURVE session. */
#ifndef KFB_FLEET_H
#define KFB_FLEET_H

#include "common/err.h"

#include <stddef.h>
#include <stdint.h>

typedef struct kfb_fleet kfb_fleet;

typedef struct kfb_fleet_config {
    const char *endpoint;   /* the coordinator's agent endpoint */
    const char *server_pub; /* its Z85 public key */
    const char *allow_file; /* the coordinator's agents.allow: each key is enrolled there */
    const char *prefix;     /* agent ids are PREFIX-0000, PREFIX-0001, ... */
    unsigned nagents;
    unsigned cpu_slots; /* announced per agent; default 1 (kfleet-agent's default) */
    double task_s;      /* how long each task "runs" before its Result */
    double resend_s;    /* unacked outbox entries are sent again after this; default 5 s */
    /* Ingest mode: a validate/profile task streams this many samples, in
     * batches of `batch`, with at most `window` batches unacked, then its
     * Result. 0: no samples. */
    uint64_t samples_per_task;
    uint32_t batch;
    uint32_t window;
} kfb_fleet_config;

/* Counters the benchmarks read; monotonic times from kf_mono_ns. */
typedef struct kfb_fleet_stats {
    uint64_t welcomed;          /* agents registered now */
    uint64_t assigns;           /* TaskAssigns received (builds included) */
    uint64_t results_acked;     /* Results of non-build tasks the coordinator acked */
    uint64_t builds_acked;      /* Results of build tasks acked */
    uint64_t samples_sent;      /* samples sent (first time only) */
    uint64_t samples_acked;     /* samples whose batch was acked */
    uint64_t resends;           /* outbox entries sent again */
    uint64_t rejects;           /* Reject frames received: must stay 0 */
    uint64_t cancels;           /* Cancel frames received */
    uint64_t heartbeats;        /* heartbeats sent */
    uint64_t first_sample_mono; /* when the first SampleBatch was sent, 0 before */
    uint64_t last_ack_mono;     /* when the last Ack arrived */
} kfb_fleet_stats;

/* Optional observers for the latency benchmark: called when a TaskAssign
 * arrives (at receipt), and when a Result's ack arrives with the time the
 * Result was first sent. */
typedef struct kfb_fleet_hooks {
    void *ctx;
    void (*assigned)(void *ctx, uint64_t task_id, int build, uint64_t recv_mono);
    void (*result_acked)(void *ctx, uint64_t task_id, int build, uint64_t sent_mono,
                         uint64_t ack_mono);
} kfb_fleet_hooks;

/* Makes the key pairs, enrolls them in cfg->allow_file and connects every
 * agent (each sends its Register at once). */
int kfb_fleet_new(const kfb_fleet_config *cfg, kfb_fleet **out, kf_err *err);
void kfb_fleet_destroy(kfb_fleet **self);
void kfb_fleet_set_hooks(kfb_fleet *self, const kfb_fleet_hooks *hooks);
/* Changes how long tasks assigned from now on "run". */
void kfb_fleet_set_task_s(kfb_fleet *self, double task_s);

/* One turn: waits up to timeout_ms for traffic, handles every frame that
 * waits, then sends what is due (heartbeats, finished tasks, sample
 * batches, resends). Returns 0 or KF_EIO. */
int kfb_fleet_step(kfb_fleet *self, int timeout_ms);

const kfb_fleet_stats *kfb_fleet_stats_get(const kfb_fleet *self);

#endif
