/* cmd_relay — `kfleet relay`: fleet/relay.h's TCP relay as a command, the
 * one a Slurm launch starts on the cluster's login node (from the bundle)
 * so that compute nodes reach the coordinator's tunnel there. */
#include "cli/cli.h"
#include "cli/options.h"
#include "common/util.h"
#include "fleet/relay.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmd_relay(int argc, char **argv, const char *home)
{
    (void)home;
    const kf_cmd_entry *self = &kf_cmd_relay;
    kf_relay_opts o = {.per_source = 32, .max_conns = 1024};
    static const struct option opts[] = {{"listen", required_argument, 0, 'l'},
                                         {"to", required_argument, 0, 't'},
                                         {"port-file", required_argument, 0, 'p'},
                                         {"per-source", required_argument, 0, 's'},
                                         {"max-conns", required_argument, 0, 'm'},
                                         {"handshake-timeout", required_argument, 0, 'H'},
                                         {"any-address", no_argument, 0, 'a'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int ch, rc;
    while ((ch = kf_opt_next(self, argc, argv, opts, &rc)) != KF_OPT_END) {
        switch (ch) {
        case KF_OPT_EXIT:
            return rc;
        case 'l':
            o.listen = optarg;
            break;
        case 't':
            o.to = optarg;
            break;
        case 'p':
            o.port_file = optarg;
            break;
        case 's':
        case 'm': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || end == optarg || v < (ch == 's' ? 0 : 1) || v > 100000)
                return kf_opt_error(self, "--%s takes a count, not '%s'",
                                    ch == 's' ? "per-source" : "max-conns", optarg);
            *(ch == 's' ? &o.per_source : &o.max_conns) = (int)v;
            break;
        }
        case 'H': {
            double sec;
            if (kf_parse_duration(optarg, &sec) != 0 || sec < 0.1 || sec > 600)
                return kf_opt_error(self, "--handshake-timeout takes a duration like 2s, not '%s'",
                                    optarg);
            o.handshake_ms = (int)(sec * 1000);
            break;
        }
        case 'a':
            o.any_address = 1;
            break;
        default:
            return kf_opt_error(self, "unexpected option '%s'", argv[optind - 1]);
        }
    }
    if (!o.listen || !o.to)
        return kf_opt_error(self, "--listen HOST:PORT and --to HOST:PORT are both needed");
    if (optind < argc)
        return kf_opt_error(self, "unexpected argument '%s'", argv[optind]);
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
