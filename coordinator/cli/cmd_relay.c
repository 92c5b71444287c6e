/* cmd_relay — `kfleet relay`: fleet/relay.h's TCP relay as a command, the
 * one a cluster's launch starts on its login node (from the bundle) so
 * that compute nodes reach the coordinator's tunnel there. */
#include "cli/cli.h"
#include "cli/options.h"
#include "fleet/relay.h"

#include <stdio.h>

static int cmd_relay(int argc, char **argv, const char *home)
{
    (void)home;
    const kf_cmd_entry *self = &kf_cmd_relay;
    kf_relay_opts o = {.per_source = 32, .max_conns = 1024};
    double handshake_s = 0;
    const kf_option opts[] = {
        KF_OPT_STRING(0, "listen", &o.listen),
        KF_OPT_STRING(0, "to", &o.to),
        KF_OPT_STRING(0, "port-file", &o.port_file),
        KF_OPT_INT("per-source", &o.per_source, 0, 100000, "a count from 0 to 100000"),
        KF_OPT_INT("max-conns", &o.max_conns, 1, 100000, "a count from 1 to 100000"),
        KF_OPT_DURATION("handshake-timeout", &handshake_s, 0.1, 600, 0,
                        "a duration from 0.1s to 10m, like 2s"),
        KF_OPT_FLAG("any-address", &o.any_address),
        KF_OPT_END,
    };
    int rc = kf_opt_parse(self, argc, argv, opts);
    if (rc != KF_OPT_GO)
        return rc;
    if (!o.listen || !o.to)
        return kf_opt_error(self, "--listen HOST:PORT and --to HOST:PORT are both needed");
    if ((rc = kf_opt_no_args(self, argc, argv)) != KF_OPT_GO)
        return rc;
    if (handshake_s > 0) /* given: else the relay's own default */
        o.handshake_ms = (int)(handshake_s * 1000);
    o.stop = kf_cli_catch_signals();
    kf_err err;
    kf_err_clear(&err);
    kf_relay *r = NULL;
    if ((rc = kf_relay_new(&o, &r, &err)) == KF_OK)
        rc = kf_relay_run(r, &err);
    kf_relay_destroy(&r);
    if (rc != KF_OK) {
        fprintf(stderr, "kfleet relay: %s\n", err.msg);
        return kf_cli_status(rc);
    }
    return 0;
}

const kf_cmd_entry kf_cmd_relay = {
    "relay",
    cmd_relay,
    "Relays TCP connections (a cluster login node's way to the coordinator).",
    "relay --listen HOST:PORT --to HOST:PORT [--port-file FILE] [--per-source N]\n"
    "      [--max-conns N] [--handshake-timeout DURATION] [--any-address]",
    "Accepts TCP connections on --listen and pipes each to --to, byte for byte,\n"
    "until SIGTERM. `kfleet launch` starts it on a cluster's login node: the\n"
    "coordinator's SSH tunnel ends on the login node's 127.0.0.1, and compute nodes\n"
    "reach it through this relay. It sees only the agents' CurveZMQ ciphertext.\n"
    "The target is connected only once a client has sent its first bytes.\n"
    "  --listen HOST:PORT  where to accept; port 0 takes any free port\n"
    "  --to HOST:PORT      where each connection goes\n"
    "  --port-file FILE    write the port listened on here once listening\n"
    "  --per-source N      at most N connections per source address (default 32; 0: any)\n"
    "  --max-conns N       at most N connections (default 1024, or what the descriptor\n"
    "                      limit allows); when full, the oldest still in its greeting goes\n"
    "  --handshake-timeout DURATION  a connection that has not sent ZMTP's signature in\n"
    "                      this long (default 2s), or its greeting in 4 times it, is closed\n"
    "  --any-address       allow a wildcard --listen (0.0.0.0, ::); by default the relay\n"
    "                      listens only on the address named\n",
};
