/* relay — a TCP relay: accepts on one address and pipes each connection,
 * byte for byte, to another. It is what lets a cluster's compute nodes reach the
 * coordinator: the coordinator's SSH tunnel to the login node ends on the
 * login node's 127.0.0.1 (sshd binds remote forwards to loopback unless
 * GatewayPorts allows more, and clusters rarely do), so `kfleet relay` runs
 * on the login node, listens where the compute nodes can connect, and
 * forwards to the tunnel's port. It sees only ciphertext: the agents'
 * connections are CurveZMQ end to end, authenticated by the coordinator.
 * The coordinator runs one in front of its own agent port too (coord.c),
 * so that a flood of connections cannot take the descriptors it needs.
 *
 * What it forwards is ZMTP, whose client speaks first: a peer that has not
 * sent the 10-byte signature within handshake_ms, or the 64-byte greeting
 * within 4 x handshake_ms, is dropped; the target is not even connected
 * until the first bytes arrive, so a silent connection costs the target
 * nothing. At most per_source connections per source address; at
 * max_conns (or what the descriptor limit allows), a new connection
 * replaces the oldest one still in its greeting (one that has sent nothing
 * before one that has sent the signature), else it is closed. What it drops
 * is counted and logged (relay.shed: at once, then at most every 5 s). */
#ifndef KF_RELAY_H
#define KF_RELAY_H

#include "common/err.h"

#include <signal.h>

#define KF_RELAY_SIGNATURE 10 /* ZMTP's signature: the client sends it at once */
#define KF_RELAY_GREETING 64  /* ZMTP 3's whole greeting */

typedef struct kf_relay_opts {
    const char *listen;          /* HOST:PORT to accept on; port 0 = any free one */
    const char *to;              /* HOST:PORT, or unix:PATH, to connect each connection to */
    const char *port_file;       /* the bound port is written here once listening; NULL = none */
    int max_conns;               /* 0 = 1024; lowered to what RLIMIT_NOFILE allows */
    int per_source;              /* connections per source address; 0 = no limit */
    int handshake_ms;            /* 0 = 2000 */
    int any_address;             /* a wildcard listen address (0.0.0.0, ::, *) is allowed */
    volatile sig_atomic_t *stop; /* set: kf_relay_run returns; NULL = never */
} kf_relay_opts;

typedef struct kf_relay kf_relay;

/* Listens (and writes the port file) and resolves the target: a relay to
 * run. o's strings must outlive it. KF_EINVAL for a bad address or a
 * wildcard one not allowed, KF_EIO when it cannot listen. */
int kf_relay_new(const kf_relay_opts *o, kf_relay **out, kf_err *err);
/* The port it listens on. */
int kf_relay_port(const kf_relay *self);
/* Relays until *stop is set (checked at least every 200 ms). KF_OK, or
 * KF_EIO when poll fails. */
int kf_relay_run(kf_relay *self, kf_err *err);
/* Closes every connection and the listener; NULLs *self. */
void kf_relay_destroy(kf_relay **self);

#endif
