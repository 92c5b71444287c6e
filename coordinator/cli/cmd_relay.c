/* cmd_relay — `kfleet relay`: fleet/relay.h's TCP relay as a command, the
 * one a Slurm launch starts on the cluster's login node (from the bundle)
 * so that compute nodes reach the coordinator's tunnel there. */
#include "cli/cli.h"
#include "cli/options.h"
#include "fleet/relay.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmd_relay(int argc, char **argv, const char *home)
{
    (void)home;
    const kf_cmd_entry *self = &kf_cmd_relay;
    kf_relay_opts o = {0};
    static const struct option opts[] = {{"listen", required_argument, 0, 'l'},
                                         {"to", required_argument, 0, 't'},
                                         {"port-file", required_argument, 0, 'p'},
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
    if ((rc = kf_relay_run(&o, &err)) != KF_OK) {
        fprintf(stderr, "kfleet relay: %s\n", err.msg);
        return kf_cli_status(rc);
    }
    return 0;
}

const kf_cmd_entry kf_cmd_relay = {
    "relay",
    cmd_relay,
    "Relays TCP connections (a Slurm login node's way to the coordinator).",
    "relay --listen HOST:PORT --to HOST:PORT [--port-file FILE]",
    "Accepts TCP connections on --listen and pipes each to --to, byte for byte,\n"
    "until SIGTERM. `kfleet launch` starts it on a Slurm cluster's login node: the\n"
    "coordinator's SSH tunnel ends on the login node's 127.0.0.1, and compute nodes\n"
    "reach it through this relay. It sees only the agents' CurveZMQ ciphertext.\n"
    "  --listen HOST:PORT  where to accept; port 0 takes any free port\n"
    "  --to HOST:PORT      where each connection goes\n"
    "  --port-file FILE    write the port listened on here once listening\n",
};
