/* cmd_run — `kfleet run SWEEP`: the whole sweep on this machine, start to
 * end, with nothing left running; the fleet itself is run.c's. */
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/follow.h"
#include "cli/options.h"
#include "cli/run.h"

#include <limits.h>
#include <stdlib.h>

static int cmd_run(int argc, char **argv, const char *home)
{
    const kf_cmd_entry *self = &kf_cmd_run;
    kf_run_options o = {.stall_s = KF_FOLLOW_STALL_S, .format = KF_REPORT_TABLE};
    double price = 0;
    int no_sandbox = 0, keep_going = 0;
    const kf_option opts[] = {
        KF_OPT_INT("agents", &o.agents, 1, 64, "a number from 1 to 64"),
        KF_OPT_CHOICE("format", &o.format, kf_report_format_names),
        KF_OPT_STRING('o', "output", &o.output),
        KF_OPT_DURATION("stall-timeout", &o.stall_s, 0, KF_OPT_ANY, 0,
                        "a duration (90s, 5m, 0: never)"),
        KF_OPT_FLAG("no-shared-builds", &o.no_shared_builds),
        KF_OPT_NUMBER("price", &price, 0, KF_OPT_ANY, KF_OPT_ABOVE_MIN,
                      "the price of one GPU-hour, a number above 0 (like 2.49)"),
        KF_OPT_FLAG("no-sandbox", &no_sandbox),
        KF_OPT_FLAG("keep-going", &keep_going),
        KF_OPT_END,
    };
    int rc = kf_opt_parse(self, argc, argv, opts);
    if (rc != KF_OPT_GO)
        return rc;
    if (no_sandbox) /* the local agents inherit it (agent/runner/sandbox.h) */
        setenv("KF_SANDBOX", "0", 1);
    if (optind != argc - 1)
        return kf_opt_error(self, "wants exactly one sweep file");
    kf_sweep_spec *spec = NULL;
    char kdir[PATH_MAX];
    rc = kf_cli_parse_sweep("run", argv[optind], keep_going, &spec, kdir, sizeof kdir);
    if (rc)
        return rc;
    spec->price_per_gpu_hour = price;
    for (size_t i = 0; i < spec->nparts; i++)
        spec->parts[i]->price_per_gpu_hour = price;
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
    "[--stall-timeout DUR] [--no-shared-builds] [--no-sandbox] [--price P] [--keep-going]",
    "Runs a sweep on this machine, start to end: an embedded coordinator and local agents\n"
    "(one per GPU, or CPU agents where there is none), progress while it runs, then the\n"
    "report. Nothing is left running. Exit 1 if any task failed. The coordinator's and the\n"
    "agents' logs are kept in the home's run directory (printed at the start).\n\n"
    "A sweep names kernels (kernels:), or a problem and the candidates judged against it\n"
    "(problem:, candidates:; docs/problems.md), or many problems with candidates matched by\n"
    "name (problems: DIR or GLOB, candidates: [\"gen/{name}/*.py\"]; docs/sweep-format.md):\n"
    "a sweep per problem, a report each, and a line per problem left without candidates.\n\n"
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
    "                    network (the same as KF_SANDBOX=0; for a before/after timing)\n"
    "  --keep-going      candidates refused at submit (they declare a reference, tolerances,\n"
    "                    seeds, or lack run) become failed rows while the others run, as the\n"
    "                    sweep's refused: fail; without it every refusal is named and nothing\n"
    "                    runs (for training loops: one bad sample never stops the batch)",
};
