/* launch_int — one host's launch job, shared by launch.c (the per-host
 * flow over SSH) and launch_ctl.c (the job's conversation with the daemon's
 * control socket: the tunnel, the agent's registration). launch.c uses
 * launch_ctl.c, not the other way. Not a header outside fleet/. */
#ifndef KF_LAUNCH_INT_H
#define KF_LAUNCH_INT_H

#include "common/err.h"
#include "fleet/launch.h"
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
/* Asks the daemon for j's tunnel; *port is the node's forwarded port. */
int launch_ctl_tunnel(job *j, void *cl, int *port, kf_err *err);
/* Waits until the agent (pid) has registered with the daemon. */
int launch_ctl_wait_registered(job *j, void *cl, long pid, kf_err *err);

#endif
