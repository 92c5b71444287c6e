/* control_fleet — the control requests about the fleet rather than a
 * sweep: the SSH tunnels of launched agents and the launches themselves
 * (control.c dispatches to them). Each answers with exactly one reply. */
#include "daemon/coord_int.h"
#include "common/xalloc.h"
#include "fleet/launches.h"
#include "fleet/tunnel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tunnels: the SSH sessions of launched agents live in the daemon (so they
 * outlive `kfleet launch`). The manager is made on the first request: a
 * coordinator that never launched over SSH runs no extra thread. KF_COORD_TUNNELS
 * is defined by coord_int.h where struct kf_coord carries the manager. */
#ifdef KF_COORD_TUNNELS
static int tunnels(kf_coord *c, kf_err *err)
{
    if (c->tunnels)
        return KF_OK;
    char host[256];
    int port = 0;
    int rc = kf_tunnels_parse_endpoint(c->agent_endpoint, host, sizeof host, &port, err);
    if (rc == KF_OK)
        rc = kf_tunnels_new(host, port, &c->tunnels, err);
    return rc;
}

static void copy_str(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src ? src : "");
}

void control_tunnel_open(kf_coord *c, const void *peer, size_t peer_len,
                         const Kfleet__TunnelSpec *ts)
{
    kf_err err;
    kf_err_clear(&err);
    if (!ts || !ts->name || !*ts->name || !ts->host || !*ts->host) {
        control_reply_error(c, peer, peer_len, KF_EINVAL,
                            "tunnel_open: a name and a host are needed");
        return;
    }
    kf_tunnel_spec spec;
    memset(&spec, 0, sizeof spec);
    copy_str(spec.name, sizeof spec.name, ts->name);
    copy_str(spec.host, sizeof spec.host, ts->host);
    spec.port = ts->port ? (int)ts->port : 22;
    copy_str(spec.user, sizeof spec.user, ts->user);
    copy_str(spec.identity, sizeof spec.identity, ts->identity);
    copy_str(spec.known_hosts, sizeof spec.known_hosts, ts->known_hosts);
    copy_str(spec.agent_sock, sizeof spec.agent_sock, ts->ssh_auth_sock);
    spec.remote_port = (int)ts->remote_port;
    if (tunnels(c, &err) != KF_OK || kf_tunnels_open(c->tunnels, &spec, &err) != KF_OK) {
        control_reply_error(c, peer, peer_len, err.code ? err.code : KF_EIO, err.msg);
        return;
    }
    Kfleet__ControlReply rep = KFLEET__CONTROL_REPLY__INIT;
    control_reply(c, peer, peer_len, &rep);
}

void control_tunnel_status(kf_coord *c, const void *peer, size_t peer_len, const char *name)
{
    kf_tunnel_info *v = NULL;
    size_t n = 0;
    if (c->tunnels)
        kf_tunnels_list(c->tunnels, name, &v, &n);
    Kfleet__TunnelState *st = kf_xcalloc(n ? n : 1, sizeof *st);
    Kfleet__TunnelState **pp = kf_xcalloc(n ? n : 1, sizeof *pp);
    for (size_t i = 0; i < n; i++) {
        kfleet__tunnel_state__init(&st[i]);
        st[i].name = v[i].name;
        st[i].host = v[i].host;
        st[i].remote_port = (uint32_t)v[i].remote_port;
        st[i].up = v[i].up;
        st[i].reconnects = v[i].reconnects;
        st[i].relays = v[i].relays;
        st[i].error = v[i].error;
        pp[i] = &st[i];
    }
    Kfleet__ControlReply rep = KFLEET__CONTROL_REPLY__INIT;
    rep.n_tunnels = n;
    rep.tunnels = pp;
    control_reply(c, peer, peer_len, &rep);
    free(st);
    free(pp);
    free(v);
}

void control_tunnel_close(kf_coord *c, const void *peer, size_t peer_len, const char *name)
{
    kf_err err;
    kf_err_clear(&err);
    if (!c->tunnels || kf_tunnels_close(c->tunnels, name ? name : "", &err) != KF_OK) {
        char msg[300];
        snprintf(msg, sizeof msg, "no tunnel named %s", name ? name : "");
        control_reply_error(c, peer, peer_len, KF_ENOTFOUND, msg);
        return;
    }
    Kfleet__ControlReply rep = KFLEET__CONTROL_REPLY__INIT;
    control_reply(c, peer, peer_len, &rep);
}
#else
static void no_tunnels(kf_coord *c, const void *peer, size_t peer_len)
{
    control_reply_error(c, peer, peer_len, KF_EUNAVAIL,
                        "this coordinator keeps no SSH tunnels (built without them); launch with "
                        "--direct ENDPOINT");
}

void control_tunnel_open(kf_coord *c, const void *peer, size_t peer_len,
                         const Kfleet__TunnelSpec *ts)
{
    (void)ts;
    no_tunnels(c, peer, peer_len);
}

void control_tunnel_status(kf_coord *c, const void *peer, size_t peer_len, const char *name)
{
    (void)name;
    no_tunnels(c, peer, peer_len);
}

void control_tunnel_close(kf_coord *c, const void *peer, size_t peer_len, const char *name)
{
    (void)name;
    no_tunnels(c, peer, peer_len);
}
#endif

/* Launches: `kfleet launch` hands the daemon the parsed inventory and the
 * bundle; the launch runs on its own threads (launch.h, kf_launches) and
 * this loop only starts it and reports its table, never waiting on SSH. */
static void reply_launch(kf_coord *c, const void *peer, size_t peer_len, uint32_t id, int attached)
{
    kf_err err;
    kf_err_clear(&err);
    Kfleet__LaunchState *st = NULL;
    if (kf_launches_state(c->launches, id, &st, &err) != KF_OK) {
        control_reply_error(c, peer, peer_len, err.code, err.msg);
        return;
    }
    st->attached = attached;
    Kfleet__ControlReply rep = KFLEET__CONTROL_REPLY__INIT;
    rep.launch = st;
    control_reply(c, peer, peer_len, &rep);
    kf_launches_free_state(&st);
}

void control_launch(kf_coord *c, const void *peer, size_t peer_len,
                    const Kfleet__LaunchRequest *req)
{
    kf_err err;
    kf_err_clear(&err);
    uint32_t id = 0;
    int attached = 0;
    if (!req) {
        control_reply_error(c, peer, peer_len, KF_EINVAL, "launch: empty request");
        return;
    }
    /* The launch threads reach this loop over the control socket and add
     * keys to the allow list: an embedded coordinator without them (tests,
     * the fuzz fixture) runs no launches. */
    if (!c->cfg.control_endpoint || !*c->cfg.control_endpoint || !c->cfg.allow_file) {
        control_reply_error(
            c, peer, peer_len, KF_EUNAVAIL,
            "this coordinator runs no launches (no control socket or allow list); use "
            "`kfleet serve`");
        return;
    }
    if (!c->launches && kf_launches_new(c->cfg.control_endpoint, c->cfg.allow_file, c->cfg.pub_file,
                                        &c->launches, &err) != KF_OK) {
        control_reply_error(c, peer, peer_len, err.code, err.msg);
        return;
    }
    if (kf_launches_start(c->launches, req, &id, &attached, &err) != KF_OK) {
        control_reply_error(c, peer, peer_len, err.code ? err.code : KF_EIO, err.msg);
        return;
    }
    reply_launch(c, peer, peer_len, id, attached);
}

void control_launch_status(kf_coord *c, const void *peer, size_t peer_len, uint32_t id)
{
    if (!c->launches) {
        control_reply_error(c, peer, peer_len, KF_ENOTFOUND,
                            "no launch has run in this coordinator (did it restart?)");
        return;
    }
    reply_launch(c, peer, peer_len, id, 0);
}
