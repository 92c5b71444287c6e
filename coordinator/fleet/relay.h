/* relay — a TCP relay: accepts on one address and pipes each connection,
 * byte for byte, to another. It is what lets Slurm compute nodes reach the
 * coordinator: the coordinator's SSH tunnel to the login node ends on the
 * login node's 127.0.0.1 (sshd binds remote forwards to loopback unless
 * GatewayPorts allows more, and clusters rarely do), so `kfleet relay` runs
 * on the login node, listens where the compute nodes can connect, and
 * forwards to the tunnel's port. It sees only ciphertext: the agents'
 * connections are CurveZMQ end to end, authenticated by the coordinator. */
#ifndef KF_RELAY_H
#define KF_RELAY_H

#include "common/err.h"

#include <signal.h>

typedef struct kf_relay_opts {
    const char *listen;          /* HOST:PORT to accept on; port 0 = any free one */
    const char *to;              /* HOST:PORT to connect each connection to */
    const char *port_file;       /* the bound port is written here once listening; NULL = none */
    int max_conns;               /* 0 = 256 */
    volatile sig_atomic_t *stop; /* set: return; NULL = never */
} kf_relay_opts;

/* Runs until *stop is set (checked at least every 200 ms). KF_EINVAL for a
 * bad address, KF_EIO when it cannot listen. */
int kf_relay_run(const kf_relay_opts *o, kf_err *err);

#endif
