/* launch_int — one host's launch job, shared by launch.c (the per-host
 * flow over SSH) and launch_ctl.c (the job's conversation with the daemon's
 * control socket: the tunnel, the agent's registration). launch.c uses
 * launch_ctl.c, not the other way. Not a header outside fleet/. */
#ifndef KF_LAUNCH_INT_H
#define KF_LAUNCH_INT_H

#include "common/err.h"
#include "fleet/launch.h"
#include "fleet/ssh.h"
#include "proto/control.pb-c.h"
#include "proto/kfleet.pb-c.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef struct job {
    const kf_fleet_host *h;
    const kf_launch_opts *o;
    kf_launch_result *r;
    size_t idx;
    pthread_mutex_t *out_mu;
    const char *bundle_sha;
    const char *server_key;
    int teardown;
    void *zctx; /* for the control connections; NULL when there is no daemon */
} job;

/* launch_ssh.c: the SSH steps both flows share. */
/* A shell function stop_agent (SIGTERM, then SIGKILL after 15 s) of the
 * agent whose pidfile is in the current directory, and alive PID. */
extern const char launch_stop_fn[];
/* kf_ssh_connect with j's retries and backoff, ending early on cancel. */
int launch_connect(const job *j, kf_ssh **s, int *tries, kf_err *err);
/* launch_connect as the launch's connect phase: its tries and time go into
 * j->r, and a failure fails the host there. */
int launch_connect_phase(job *j, kf_ssh **s, kf_err *err);
/* Runs script with `sh -s -- [WD] ARGS...` (quoted here). */
int launch_run_script(kf_ssh *s, const char *script, const char *const *args, size_t nargs,
                      const char *wd, kf_buf *out, kf_buf *errout, int *status, kf_err *err);
/* launch_run_script, its exit status checked: a non-zero one is an error
 * "WHAT (exit N): its stderr". */
int launch_run_checked(const job *j, kf_ssh *s, const char *script, const char *const *args,
                       size_t nargs, kf_buf *out, const char *what, kf_err *err);
/* A teardown's stop phase: script run (timed as KF_PHASE_STOP), the host
 * failed on an error, else what it printed, on one line, as j->r->msg. */
void launch_stop_phase(job *j, kf_ssh *s, const char *script, const char *const *args,
                       size_t nargs);
/* Preflight in the work dir; need_gpu refuses a node without one. */
int launch_preflight(job *j, kf_ssh *s, int need_gpu, char *summary, size_t summary_len,
                     kf_err *err);
/* The bundle into WORKDIR/bundle unless its sha256 is already there. */
int launch_upload(job *j, kf_ssh *s, int *uploaded, int *used_scp, kf_err *err);
/* The key pair at WORKDIR/key_rel (made when absent), allowed as agent_name. */
int launch_install_key(job *j, kf_ssh *s, const char *key_rel, const char *agent_name, kf_err *err);
/* Appends "; FILE ends: LAST LINES" of WORKDIR/file_rel to msg. */
void launch_tail(job *j, kf_ssh *s, const char *file_rel, char *msg, size_t n);
/* Drops trailing newlines and spaces. */
void launch_trim(char *s);

/* launch.c: the flow of a host that runs one agent, reached over SSH (the
 * ssh row of provider.h and its aliases). */
void launch_plain_host(job *j);
void launch_plain_teardown(job *j);

/* Whether the launch was asked to stop (the daemon is going down). */
int launch_cancelled(const kf_launch_opts *o);
/* Seconds since t0 (kf_mono_ns). */
double launch_since(uint64_t t0);
/* A DEALER on the daemon's control socket (*sock NULL without a daemon). */
int launch_ctl_open(job *j, void **sock, kf_err *err);
void launch_ctl_close(void **sock);
/* One request and its reply; *out is the caller's. */
int launch_ctl_call(job *j, void *sock, Kfleet__ControlRequest *req, Kfleet__ControlReply **out,
                    kf_err *err);
/* The coordinator's status (its agents), on the launch's control socket. */
int launch_ctl_status(job *j, void *sock, Kfleet__ControlReply **out, kf_err *err);
/* Asks the daemon for j's tunnel; *port is the node's forwarded port. */
int launch_ctl_tunnel(job *j, void *cl, int *port, kf_err *err);
/* Waits until the agent (pid) has registered with the daemon. */
int launch_ctl_wait_registered(job *j, void *cl, long pid, kf_err *err);

#endif
