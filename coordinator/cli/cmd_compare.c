/* cmd_compare — `kfleet compare A B`: what got faster or slower between
 * two sweeps, beyond the noise; exit 1 on a regression, so it gates CI.
 * The comparison is coordinator/report/compare.c's; this file is the flags
 * and the exit status. */
#include "cli/cli.h"
#include "cli/options.h"
#include "report/compare.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* --threshold: a percentage, "5" or "5%", from 0 to 1000. */
static int percentage(void *threshold, const char *arg)
{
    char *end;
    double v = strtod(arg, &end);
    if (end == arg || (*end && strcmp(end, "%") != 0) || !(v >= 0) || v > 1000)
        return -1;
    *(double *)threshold = v;
    return 0;
}

static int cmd_compare(int argc, char **argv, const char *home)
{
    const kf_cmd_entry *self = &kf_cmd_compare;
    int fmt = KF_COMPARE_TABLE, accept_source = 0;
    double threshold = 5;
    const kf_option opts[] = {
        /* kf_compare_format order. */
        KF_OPT_CHOICE("format", &fmt, ((const char *const[]){"table", "md", "json", NULL})),
        KF_OPT_CALLBACK("threshold", &threshold, percentage, "a percentage >= 0"),
        KF_OPT_FLAG("accept-changed-source", &accept_source),
        KF_OPT_END,
    };
    int rc = kf_opt_parse(self, argc, argv, opts);
    if (rc != KF_OPT_GO)
        return rc;
    unsigned flags = accept_source ? KF_COMPARE_ACCEPT_SOURCE : 0;
    uint32_t ids[2];
    if (argc - optind != 2)
        return kf_opt_error(self, "wants two sweep ids, A (the reference) and B");
    if ((rc = kf_cli_sweep_ids(self, argc, argv, ids, 2)) != KF_OPT_GO)
        return rc;
    kf_paths p;
    if (kf_cli_paths(home, 0, &p))
        return 1;
    kf_err err;
    kf_store *s = NULL;
    kf_txn *t = NULL;
    if (access(p.store, F_OK) != 0) {
        fprintf(stderr, "kfleet compare: no store at %s: nothing has run with this home yet\n",
                p.store);
        return 1;
    }
    if (kf_store_open(p.store, 1, &s, &err) != KF_OK || kf_store_begin(s, 1, &t, &err) != KF_OK) {
        fprintf(stderr, "kfleet compare: %s\n", err.msg);
        kf_store_close(&s);
        return 1;
    }
    kf_buf out = KF_BUF_INIT;
    kf_compare_result res;
    rc = kf_compare_render(t, ids[0], ids[1], threshold, flags, (kf_compare_format)fmt, &out, &res,
                           &err);
    kf_store_abort(&t);
    kf_store_close(&s);
    if (rc != KF_OK) {
        fprintf(stderr, "kfleet compare: %s\n", err.msg);
        kf_buf_release(&out);
        return kf_cli_status(rc);
    }
    fwrite(out.data, 1, out.len, stdout);
    kf_buf_release(&out);
    /* The gate: a configuration broken in B, slower beyond the threshold
     * and the noise, impossible, or judged by a changed check, fails. */
    return res.regressions ? 1 : 0;
}

const kf_cmd_entry kf_cmd_compare = {
    "compare",
    cmd_compare,
    "Compares two sweeps, correctness first; exit 1 on a regression.",
    "compare SWEEP_A SWEEP_B [--threshold PCT] [--format table|md|json]",
    "Compares sweep B with sweep A (the reference), configuration by configuration (same\n"
    "kernel and parameters; same node, else same device). Correctness first: a\n"
    "configuration that passed in A and in B failed validation, crashed, timed out, was\n"
    "skipped or is missing is a regression, listed first with the reason; one failing in\n"
    "both is reported as such. Then for configurations passing in both, the change of\n"
    "the median against the two profiles' combined noise. A row flagged impossible (faster\n"
    "than its node can do), or whose tolerances or kernel source changed between A and B,\n"
    "is never called an improvement: it is a regression that says what changed. Exit 1 on\n"
    "a regression (broken, slower beyond the noise and the threshold, impossible,\n"
    "changed), 0 otherwise, 2 when the sweeps have no configuration in common; so it\n"
    "gates CI.\n\n"
    "Configurations whose kernel source is the same in both tell the machine: three or\n"
    "more give its shift between the runs (every change is judged against it) and the\n"
    "most the same code moved, within which a change of other code is not told apart.\n"
    "The same code on the same machine (host, CPU, GPU, driver, agent and binary the\n"
    "same in both) that moved beyond its noise is \"same code, moved\": the machine's\n"
    "doing, never a regression.\n\n"
    "Two sweeps of a problem (docs/problems.md) are compared candidate by candidate: a\n"
    "row of B is paired with the row of A of the same candidate name and source, then of\n"
    "the same source under another name, then of the same name with an edited source\n"
    "(said as changed); the problem's hash is the check, and another hash in B is a\n"
    "changed check, never an improvement. For a level (problems:), compare the two\n"
    "sweeps of each problem.\n\n"
    "  --threshold PCT  a slowdown must exceed this to count as a regression (default 5)\n"
    "  --accept-changed-source  judge a kernel whose source changed on time (an A/B of two\n"
    "                   versions with the same tolerances)\n"
    "  --format FMT     table, md or json (schema kfleet.compare/2)",
};
