/* cmd_report — `kfleet report`: a sweep's report, read from the store, so
 * it works whether or not a coordinator runs. The rendering is
 * coordinator/report's; this file is the flags. */
#include "cli/cli.h"
#include "cli/options.h"
#include "report/report.h"

#include <stdio.h>

static int cmd_report(int argc, char **argv, const char *home)
{
    const kf_cmd_entry *self = &kf_cmd_report;
    kf_report_opts ro = {.fmt = KF_REPORT_TABLE};
    int fmt = KF_REPORT_TABLE, group;
    const char *out = NULL;
    static const struct option opts[] = {{"format", required_argument, 0, 'F'},
                                         {"output", required_argument, 0, 'o'},
                                         {"baseline", required_argument, 0, 'b'},
                                         {"group-by", required_argument, 0, 'g'},
                                         {"provenance", no_argument, 0, 'P'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int ch, rc;
    while ((ch = kf_opt_next(self, argc, argv, opts, &rc)) != KF_OPT_END) {
        switch (ch) {
        case KF_OPT_EXIT:
            return rc;
        case 'F':
            if (kf_opt_format(self, optarg, kf_report_format_names, &fmt))
                return 2;
            break;
        case 'o':
            out = optarg;
            break;
        case 'b':
            ro.baseline = optarg;
            break;
        case 'g':
            if ((group = kf_report_parse_group(optarg)) < 0)
                return kf_opt_error(self, "--group-by wants gpu, node, kernel or config, got '%s'",
                                    optarg);
            ro.group_by = (kf_report_group)group;
            ro.group_set = 1;
            break;
        case 'P':
            ro.provenance = 1;
            break;
        default:
            return kf_opt_error(self, "unexpected option '%s'", argv[optind - 1]);
        }
    }
    uint32_t id = 0;
    int have_id = 0;
    if (optind < argc) {
        if (kf_cli_sweep_id(argv[optind], &id))
            return kf_opt_error(self, "a sweep id is a positive number, got '%s'", argv[optind]);
        have_id = 1;
        if (optind + 1 < argc)
            return kf_opt_error(self, "unexpected argument '%s'", argv[optind + 1]);
    }
    kf_paths p;
    if (kf_cli_paths(home, 0, &p))
        return 1;
    ro.fmt = (kf_report_format)fmt;
    return kf_cli_render_report(p.store, id, have_id, &ro, out);
}

const kf_cmd_entry kf_cmd_report = {
    "report",
    cmd_report,
    "Prints a sweep's report, read from the store.",
    "report [SWEEP_ID] [--format table|md|json|html|csv] [-o FILE] [--baseline KERNEL]\n"
    "       [--group-by gpu|node|kernel|config] [--provenance]",
    "Prints the report of a sweep (the latest when no id is given), read from the store:\n"
    "works whether or not a coordinator is running.\n\n"
    "  --format FMT       table, md, json (schema in docs/report-json.md), html (one\n"
    "                     self-contained page with charts) or csv\n"
    "  -o, --output FILE  write to FILE instead of stdout\n"
    "  --baseline KERNEL  compare against this kernel of the sweep instead of its own\n"
    "                     baseline (speedup per matching configuration and node)\n"
    "  --group-by KEY     order rows by gpu, node or kernel (the default), or config: a\n"
    "                     leaderboard, each configuration's rows on a device ranked by\n"
    "                     median (failed, impossible or unprofiled rows unranked, last):\n"
    "                     a problem sweep's default\n"
    "  --provenance       table, md, csv: each row's node, GPU UUID, driver, clocks seen,\n"
    "                     compiler, source and binary hashes (JSON always has them)",
};
