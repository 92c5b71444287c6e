/* cmd_run — `kfleet run SWEEP`: the whole sweep on this machine, start to
 * end, with nothing left running; the fleet itself is run.c's. */
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/follow.h"
#include "cli/options.h"
#include "common/util.h"
#include "cli/run.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>

static int cmd_run(int argc, char **argv, const char *home)
{
    const kf_cmd_entry *self = &kf_cmd_run;
    kf_run_options o = {.stall_s = KF_FOLLOW_STALL_S};
    int fmt = KF_REPORT_TABLE;
    double price = 0;
    static const struct option opts[] = {{"agents", required_argument, 0, 'a'},
                                         {"format", required_argument, 0, 'F'},
                                         {"output", required_argument, 0, 'o'},
                                         {"stall-timeout", required_argument, 0, 's'},
                                         {"no-shared-builds", no_argument, 0, 'n'},
                                         {"price", required_argument, 0, 'p'},
                                         {"no-sandbox", no_argument, 0, 'S'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int ch, rc;
    while ((ch = kf_opt_next(self, argc, argv, opts, &rc)) != KF_OPT_END) {
        switch (ch) {
        case KF_OPT_EXIT:
            return rc;
        case 'a': {
            char *end;
            long n = strtol(optarg, &end, 10);
            if (*end || n < 1 || n > 64)
                return kf_opt_error(self, "--agents wants a number from 1 to 64, got '%s'", optarg);
            o.agents = (int)n;
            break;
        }
        case 'F':
            if (kf_opt_format(self, optarg, kf_report_format_names, &fmt))
                return 2;
            break;
        case 'o':
            o.output = optarg;
            break;
        case 's':
            if (kf_parse_duration(optarg, &o.stall_s) != 0)
                return kf_opt_error(self,
                                    "--stall-timeout wants a duration (90s, 5m, 0: never), "
                                    "got '%s'",
                                    optarg);
            break;
        case 'n':
            o.no_shared_builds = 1;
            break;
        case 'p': {
            char *end;
            price = strtod(optarg, &end);
            if (end == optarg || *end || !(price > 0) || !isfinite(price))
                return kf_opt_error(self,
                                    "--price wants the price of one GPU-hour, a number above 0 "
                                    "(like 2.49), got '%s'",
                                    optarg);
            break;
        }
        case 'S':
            /* The local agents inherit it (agent/runner/sandbox.h). */
            setenv("KF_SANDBOX", "0", 1);
            break;
        default:
            return kf_opt_error(self, "unexpected option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return kf_opt_error(self, "wants exactly one sweep file");
    o.format = fmt;
    kf_sweep_spec *spec = NULL;
    char kdir[PATH_MAX];
    rc = kf_cli_parse_sweep("run", argv[optind], &spec, kdir, sizeof kdir);
    if (rc)
        return rc;
    spec->price_per_gpu_hour = price;
    kf_paths p;
    if (kf_cli_paths(home, 1, &p)) {
        kf_sweep_destroy(&spec);
        return 1;
    }
    volatile sig_atomic_t *stop = kf_cli_catch_signals();
    o.kernels_dir = kdir;
    rc = kf_run(&p, spec, &o, stop);
    kf_sweep_destroy(&spec);
    return rc;
}

const kf_cmd_entry kf_cmd_run = {
    "run",
    cmd_run,
    "Runs a sweep on this machine, start to end, and prints its report.",
    "run SWEEP.yaml [--agents N] [--format table|md|json|html|csv] [-o FILE] "
    "[--stall-timeout DUR] [--no-shared-builds] [--no-sandbox] [--price P]",
    "Runs a sweep on this machine, start to end: an embedded coordinator and local agents\n"
    "(one per GPU, or CPU agents where there is none), progress while it runs, then the\n"
    "report. Nothing is left running. Exit 1 if any task failed. The coordinator's and the\n"
    "agents' logs are kept in the home's run directory (printed at the start).\n\n"
    "  --agents N        local agents to start (default: one per GPU, else 2)\n"
    "  --format FMT      report format: table, md, json, html or csv (default table)\n"
    "  -o, --output FILE write the report to FILE instead of stdout\n"
    "  --stall-timeout DUR  when no local agent can take the pending tasks (none registered,\n"
    "                    all gone) for DUR, print why with the agents' last errors and exit 1\n"
    "                    (default 60s; 0: wait)\n"
    "  --no-shared-builds  each agent compiles its own kernels (by default agents with one\n"
    "                    toolchain install the artifact one of them compiled)\n"
    "  --price P         what one GPU-hour costs (one CPU slot-hour on a machine without\n"
    "                    GPUs): the report adds the sweep's cost and cost per evaluation\n"
    "                    beside its evaluations per GPU-hour\n"
    "  --no-sandbox      run kernels unconfined, with the agents' files, environment and\n"
    "                    network (the same as KF_SANDBOX=0; for a before/after timing)",
};
