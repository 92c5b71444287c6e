/* agent — the kfleet-agent daemon: registers with the coordinator, keeps
 * heartbeating, runs each assigned task in a runner child process with a
 * time limit, and streams what the runner produces back through the outbox.
 *
 * One thread, one loop over the DEALER socket and the runners' pipes. The
 * agent never runs kernel code itself: a runner that segfaults, aborts or
 * hangs is reaped (or killed at its deadline) and its task fails with the
 * reason, while the agent and the slot go on to the next task. */
#ifndef KF_AGENT_H
#define KF_AGENT_H

#include "common/err.h"

#include <signal.h>
#include <stdint.h>

typedef struct kf_agent kf_agent;

typedef struct kf_agent_config {
    const char *coordinator; /* endpoint, e.g. tcp://127.0.0.1:7600 */
    const char *workdir;     /* the agent's own dir: outbox/, cache/, tmp/ */
    const char *agent_id;
    uint32_t cpu_slots;     /* 0: 1 */
    double price;           /* per GPU-hour, sent in AgentInfo for reports; 0: none */
    double resend_s;        /* resend unacked outbox entries after this; 0: 5 s */
    double default_limit_s; /* task time limit when the task names none; 0: 300 s */
    const char *runner_exe; /* binary to exec with --runner; NULL: this one */
    int keep_tmp;           /* keep task scratch dirs (debugging) */
    uint64_t stop_mono;     /* stop as on a signal at this kf_mono_ns(); 0: never */
    /* CurveZMQ: the coordinator's public key and the agent's own pair (Z85). */
    const char *server_key;
    const char *public_key;
    const char *secret_key;
} kf_agent_config;

int kf_agent_new(const kf_agent_config *cfg, kf_agent **out, kf_err *err);
/* Runs until *stop is set (or stop_mono passed). On the way out it stops its runners. */
int kf_agent_run(kf_agent *self, volatile sig_atomic_t *stop, kf_err *err);
void kf_agent_destroy(kf_agent **self);

#endif
