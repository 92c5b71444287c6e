/* tunnel — the coordinator daemon's SSH tunnels to launched agents.
 *
 * One tunnel per node: an SSH session with a remote port forward on the
 * node's 127.0.0.1:PORT; each connection the agent opens there arrives as an
 * SSH channel and is relayed to the coordinator's own agent endpoint (a TCP
 * port on this machine). So the node needs nothing open but SSH, and the
 * coordinator may sit behind NAT.
 *
 * The manager runs one thread: every session non-blocking, one poll() over
 * the SSH sockets and the relays' sockets. Sessions send keepalives; a
 * session that dies is connected again with backoff, and its forward asks
 * for the same port again, so an agent's endpoint stays valid.
 *
 * Thread-safety: kf_tunnels_open, _close and _list may be called from any
 * one thread (the coordinator's loop) while the manager's thread runs. */
#ifndef KF_TUNNEL_H
#define KF_TUNNEL_H

#include "common/err.h"

#include <stddef.h>

typedef struct kf_tunnels kf_tunnels;

typedef struct kf_tunnel_spec {
    char name[128];
    char host[256];
    int port;
    char user[128];
    char identity[1024];    /* "" = ssh-agent */
    char known_hosts[1024]; /* "" = ~/.ssh/known_hosts */
    char agent_sock[256];   /* "" = the daemon's $SSH_AUTH_SOCK */
    int remote_port;        /* 0 = chosen by sshd on the first connect */
} kf_tunnel_spec;

typedef struct kf_tunnel_info {
    char name[128];
    char host[256];
    int remote_port; /* 0 until the forward is up */
    int up;
    unsigned reconnects;
    unsigned relays;
    char error[512];
} kf_tunnel_info;

/* Starts the manager's thread. Forwarded connections are relayed to
 * target_host:target_port (the coordinator's TCP agent endpoint). */
int kf_tunnels_new(const char *target_host, int target_port, kf_tunnels **out, kf_err *err);
/* Stops the thread, closes every session and relay. */
void kf_tunnels_destroy(kf_tunnels **self);

/* Adds a tunnel, or replaces the spec of the one with that name (it is then
 * connected again). Returns at once; the thread connects. */
int kf_tunnels_open(kf_tunnels *self, const kf_tunnel_spec *spec, kf_err *err);
/* Closes the named tunnel; KF_ENOTFOUND when there is none. */
int kf_tunnels_close(kf_tunnels *self, const char *name, kf_err *err);
/* Copies the state of the tunnels (all, or the one named; name NULL or "")
 * into a malloc'd array the caller frees. */
int kf_tunnels_list(kf_tunnels *self, const char *name, kf_tunnel_info **out, size_t *n);

/* Parses "tcp://HOST:PORT" (HOST may be "*" = 127.0.0.1). KF_EINVAL for
 * other transports: the tunnel relays TCP only. */
int kf_tunnels_parse_endpoint(const char *ep, char *host, size_t hostlen, int *port, kf_err *err);

#endif
