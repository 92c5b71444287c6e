/* cmd_report — `kfleet report`: a sweep's report, read from the store, so
 * it works whether or not a coordinator runs. The rendering is
 * coordinator/report's; this file is the flags. */
#include "cli/cli.h"
#include "cli/options.h"
#include "report/report.h"

#include <stdio.h>

/* --group-by: the report's own names (kf_report_parse_group) into opts. */
static int group_by(void *opts, const char *arg)
{
    kf_report_opts *ro = opts;
    int group = kf_report_parse_group(arg);
    if (group < 0)
        return -1;
    ro->group_by = (kf_report_group)group;
    ro->group_set = 1;
    return 0;
}

static int cmd_report(int argc, char **argv, const char *home)
{
    const kf_cmd_entry *self = &kf_cmd_report;
    kf_report_opts ro = {.fmt = KF_REPORT_TABLE};
    int fmt = KF_REPORT_TABLE;
    const char *out = NULL;
    const kf_option opts[] = {
        KF_OPT_CHOICE("format", &fmt, kf_report_format_names),
        KF_OPT_STRING('o', "output", &out),
        KF_OPT_STRING(0, "baseline", &ro.baseline),
        KF_OPT_CALLBACK("group-by", &ro, group_by, "gpu, node, kernel or config"),
        KF_OPT_FLAG("provenance", &ro.provenance),
        KF_OPT_END,
    };
    int rc = kf_opt_parse(self, argc, argv, opts);
    if (rc != KF_OPT_GO)
        return rc;
    uint32_t id = 0; /* 0: the latest */
    if ((rc = kf_cli_sweep_ids(self, argc, argv, &id, 1)) != KF_OPT_GO)
        return rc;
    kf_paths p;
    if (kf_cli_paths(home, 0, &p))
        return 1;
    ro.fmt = (kf_report_format)fmt;
    return kf_cli_render_report(p.store, id, id != 0, &ro, out);
}

const kf_cmd_entry kf_cmd_report = {
    "report",
    cmd_report,
    "Prints a sweep's report, read from the store.",
    "report [SWEEP_ID] [--format table|md|json|html|csv] [-o FILE] [--baseline KERNEL]\n"
    "       [--group-by gpu|node|kernel|config] [--provenance]",
    "Prints the report of a sweep (the latest when no id is given), read from the store:\n"
    "works whether or not a coordinator is running. A problem sweep's report\n"
    "(docs/problems.md) is a leaderboard of its candidates, with the problem's hash and\n"
    "seed policy (never a seed); a refused candidate kept by --keep-going is a failed row\n"
    "that says why. A level (problems:) is a sweep per problem: `kfleet run` prints each.\n\n"
    "  --format FMT       table, md, json (schema in docs/report-json.md), html (one\n"
    "                     self-contained page with charts) or csv\n"
    "  -o, --output FILE  write to FILE instead of stdout\n"
    "  --baseline KERNEL  compare against this kernel (or candidate) of the sweep instead\n"
    "                     of its own baseline (speedup per matching configuration and node)\n"
    "  --group-by KEY     order rows by gpu, node or kernel (the default), or config: a\n"
    "                     leaderboard, each configuration's rows on a device ranked by\n"
    "                     median (failed, impossible or unprofiled rows unranked, last):\n"
    "                     a problem sweep's default\n"
    "  --provenance       table, md, csv: each row's node, GPU UUID, driver, clocks seen,\n"
    "                     compiler, source and binary hashes (JSON always has them)",
};
