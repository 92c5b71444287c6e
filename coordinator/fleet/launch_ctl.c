/* launch_ctl — a launch job's conversation with the coordinator daemon's
 * control socket, as a client of its loop (loopback ipc; no coordinator
 * state shared across threads): ask for the host's tunnel, then wait for
 * the started agent to register through it. */
#include "fleet/launch_int.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"
#include "common/xalloc.h"
#include "core/ctlsock.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#define TUNNEL_WAIT_S 30.0

#define CTL_TIMEOUT_S 10.0

/* The daemon's control socket, for this host's thread: a DEALER of its
 * own (sockets are not shared between threads). */
int launch_ctl_open(job *j, void **sock, kf_err *err)
{
    *sock = NULL;
    if (!j->zctx || !j->o->control_endpoint)
        return kf_err_set(err, KF_EUNAVAIL, "no coordinator daemon to ask; start `kfleet serve`");
    void *s = zmq_socket(j->zctx, ZMQ_DEALER);
    if (!s)
        return kf_err_set(err, KF_EIO, "cannot make a control socket: %s", zmq_strerror(errno));
    int zero = 0;
    int64_t maxmsg = KF_MAX_FRAME * 4;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    if (zmq_connect(s, j->o->control_endpoint) != 0) {
        int e = errno;
        zmq_close(s);
        return kf_err_set(err, KF_EUNAVAIL, "cannot connect to the coordinator at %s: %s",
                          j->o->control_endpoint, zmq_strerror(e));
    }
    *sock = s;
    return KF_OK;
}

void launch_ctl_close(void **sock)
{
    if (*sock)
        zmq_close(*sock);
    *sock = NULL;
}

/* One request, one reply; waits in short slices so a cancel (the daemon
 * shutting down, its loop no longer answering) ends the wait at once. */
int launch_ctl_call(job *j, void *sock, Kfleet__ControlRequest *req, Kfleet__ControlReply **out,
                    kf_err *err)
{
    int rc = kf_ctlsock_send_request(sock, req, err);
    if (rc)
        return rc;
    uint64_t t0 = kf_mono_ns();
    for (;;) {
        if (launch_cancelled(j->o))
            return kf_err_set(err, KF_EUNAVAIL, "the coordinator is shutting down");
        zmq_pollitem_t it = {sock, 0, ZMQ_POLLIN, 0};
        rc = zmq_poll(&it, 1, 200);
        if (rc > 0)
            break;
        if (rc < 0 && errno != EINTR)
            return kf_err_set(err, KF_EIO, "poll on the control socket: %s", zmq_strerror(errno));
        if (launch_since(t0) > CTL_TIMEOUT_S)
            return kf_err_set(err, KF_ETIMEOUT,
                              "the coordinator did not answer within %.0f s (is it stuck? its log "
                              "says)",
                              CTL_TIMEOUT_S);
    }
    return kf_ctlsock_read_reply(sock, out, err);
}

int launch_ctl_tunnel(job *j, void *cl, int *port, kf_err *err)
{
    Kfleet__TunnelSpec ts = KFLEET__TUNNEL_SPEC__INIT;
    char kh[PATH_MAX], ident[PATH_MAX];
    const char *home = getenv("HOME");
    snprintf(kh, sizeof kh, "%s", j->o->known_hosts ? j->o->known_hosts : "");
    if (!kh[0])
        snprintf(kh, sizeof kh, "%s/.ssh/known_hosts", home ? home : ".");
    /* The daemon has another working directory: absolute paths only. */
    if (kh[0] != '/' && !realpath(j->o->known_hosts, kh))
        return kf_err_set(err, KF_EINVAL, "cannot resolve %s", j->o->known_hosts);
    ident[0] = '\0';
    if (j->h->identity && !realpath(j->h->identity, ident))
        return kf_err_set(err, KF_EINVAL, "cannot resolve identity %s: %s", j->h->identity,
                          strerror(errno));
    ts.name = j->h->name;
    ts.host = j->h->host;
    ts.ssh_auth_sock = (char *)(j->o->agent_sock ? j->o->agent_sock : "");
    ts.port = (uint32_t)(j->h->port ? j->h->port : 22);
    ts.user = j->h->user ? j->h->user : (char *)"";
    ts.identity = ident;
    ts.known_hosts = kh;
    Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
    req.body_case = KFLEET__CONTROL_REQUEST__BODY_TUNNEL_OPEN;
    req.tunnel_open = &ts;
    Kfleet__ControlReply *rep = NULL;
    int rc = launch_ctl_call(j, cl, &req, &rep, err);
    if (rc)
        return rc;
    kfleet__control_reply__free_unpacked(rep, NULL);
    uint64_t t0 = kf_mono_ns();
    char last[512] = "";
    while (launch_since(t0) < TUNNEL_WAIT_S) {
        if (launch_cancelled(j->o))
            return kf_err_set(err, KF_EUNAVAIL, "the coordinator is shutting down");
        Kfleet__ControlRequest q = KFLEET__CONTROL_REQUEST__INIT;
        q.body_case = KFLEET__CONTROL_REQUEST__BODY_TUNNEL_STATUS;
        q.tunnel_status = j->h->name;
        if ((rc = launch_ctl_call(j, cl, &q, &rep, err)))
            return rc;
        for (size_t i = 0; i < rep->n_tunnels; i++) {
            Kfleet__TunnelState *t = rep->tunnels[i];
            if (strcmp(t->name, j->h->name) != 0)
                continue;
            if (t->up && t->remote_port) {
                *port = (int)t->remote_port;
                kfleet__control_reply__free_unpacked(rep, NULL);
                return KF_OK;
            }
            snprintf(last, sizeof last, "%s", t->error);
        }
        kfleet__control_reply__free_unpacked(rep, NULL);
        struct timespec ts2 = {0, 100000000};
        nanosleep(&ts2, NULL);
    }
    return kf_err_set(err, KF_ETIMEOUT,
                      "the coordinator's tunnel to %s did not come up in %.0f s: %s", j->h->name,
                      TUNNEL_WAIT_S, last[0] ? last : "no error reported");
}

int launch_ctl_status(job *j, void *sock, Kfleet__ControlReply **out, kf_err *err)
{
    Kfleet__ControlRequest q = KFLEET__CONTROL_REQUEST__INIT;
    q.body_case = KFLEET__CONTROL_REQUEST__BODY_STATUS;
    q.status = 1;
    return launch_ctl_call(j, sock, &q, out, err);
}

/* Waits until the coordinator lists the agent with the pid we started and
 * not lost. */
int launch_ctl_wait_registered(job *j, void *cl, long pid, kf_err *err)
{
    double limit = j->o->register_timeout_s > 0 ? j->o->register_timeout_s : 60;
    uint64_t t0 = kf_mono_ns();
    while (launch_since(t0) < limit) {
        if (launch_cancelled(j->o))
            return kf_err_set(err, KF_EUNAVAIL, "the coordinator is shutting down");
        Kfleet__ControlReply *rep = NULL;
        int rc = launch_ctl_status(j, cl, &rep, err);
        if (rc)
            return rc;
        int ok = 0;
        for (size_t i = 0; rep->status && i < rep->status->n_agents; i++) {
            Kfleet__AgentInfo *a = rep->status->agents[i];
            if (strcmp(a->agent_id, j->h->name) == 0 && !a->lost && (long)a->pid == pid)
                ok = 1;
        }
        kfleet__control_reply__free_unpacked(rep, NULL);
        if (ok)
            return KF_OK;
        struct timespec ts = {0, 200000000};
        nanosleep(&ts, NULL);
    }
    return kf_err_set(err, KF_ETIMEOUT, "the agent (pid %ld) did not register within %.0f s", pid,
                      limit);
}

int launch_cancelled(const kf_launch_opts *o)
{
    return o->cancel && atomic_load(o->cancel);
}

double launch_since(uint64_t t0)
{
    return (double)(kf_mono_ns() - t0) / 1e9;
}
