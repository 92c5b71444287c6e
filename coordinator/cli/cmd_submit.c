/* cmd_submit — `kfleet submit`: a sweep file to the running coordinator,
 * and with --follow its progress until it ends. The file is parsed here,
 * so its errors are FILE:LINE:COL before anything is sent. */
#include "cli/cli.h"
#include "common/json.h"
#include "cli/client.h"
#include "cli/follow.h"
#include "common/util.h"
#include "cli/options.h"
#include "common/xalloc.h"
#include "report/report_stream.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --format jsonl: the rows that finished since the last call, on stdout
 * (report_stream.h), read from the coordinator's store. */
typedef struct jsonl_ctx {
    const char *store_dir;
    kf_report_stream *stream;
} jsonl_ctx;

static int stream_rows(void *ctx, uint32_t sweep_id, int finished, kf_err *err)
{
    (void)sweep_id;
    (void)finished;
    jsonl_ctx *j = ctx;
    kf_store *s = NULL;
    kf_txn *t = NULL;
    int rc = kf_store_open(j->store_dir, 1, &s, err);
    if (rc == KF_OK)
        rc = kf_store_begin(s, 1, &t, err);
    kf_buf out = KF_BUF_INIT;
    size_t n = 0;
    if (rc == KF_OK)
        rc = kf_report_stream_poll(j->stream, t, &out, &n, err);
    if (t)
        kf_store_abort(&t);
    kf_store_close(&s);
    if (rc == KF_OK && out.len) {
        fwrite(out.data, 1, out.len, stdout);
        fflush(stdout);
    }
    kf_buf_release(&out);
    return rc;
}

/* The receipt: one line for people, or one JSON object. 0 or 1. */
static int print_receipt(int json, uint32_t id, const char *name, size_t ntasks)
{
    if (json)
        return kf_cli_print_json(json_pack("{s:I,s:o,s:I}", "sweep_id", (json_int_t)id, "name",
                                           kf_json_str(name), "configurations", (json_int_t)ntasks),
                                 0);
    printf("submitted sweep %u (%s): %zu configurations; `kfleet report %u` when done\n", id, name,
           ntasks, id);
    return 0;
}

static int cmd_submit(int argc, char **argv, const char *home)
{
    const kf_cmd_entry *self = &kf_cmd_submit;
    int follow = 0, format = 0, keep_going = 0;
    kf_follow_opts fo = {.stall_s = KF_FOLLOW_STALL_S};
    const kf_option opts[] = {
        KF_OPT_FLAG("follow", &follow),
        /* jsonl is json, a line per row */
        KF_OPT_CHOICE("format", &format, ((const char *const[]){"table", "json", "jsonl", NULL})),
        KF_OPT_DURATION("stall-timeout", &fo.stall_s, 0, KF_OPT_ANY, 0,
                        "a duration (90s, 5m, 0: never)"),
        KF_OPT_FLAG("keep-going", &keep_going),
        KF_OPT_END,
    };
    int rc = kf_opt_parse(self, argc, argv, opts);
    if (rc != KF_OPT_GO)
        return rc;
    int json = format != 0, jsonl = format == 2;
    if (optind != argc - 1)
        return kf_opt_error(self, "wants exactly one sweep file");
    if (jsonl && !follow)
        return kf_opt_error(self, "--format jsonl streams the rows as they finish: it needs "
                                  "--follow");
    kf_sweep_spec *spec = NULL;
    char kdir[PATH_MAX];
    rc = kf_cli_parse_sweep("submit", argv[optind], keep_going, &spec, kdir, sizeof kdir);
    if (rc)
        return rc;
    kf_paths p;
    if (kf_cli_paths(home, 0, &p)) {
        kf_sweep_destroy(&spec);
        return 1;
    }
    if (!spec->nkernels && !spec->nparts) { /* a level whose problems all lack candidates */
        fprintf(stderr, "kfleet submit: %s: no problem has a candidate; nothing submitted\n",
                spec->file);
        kf_sweep_destroy(&spec);
        return 1;
    }
    /* A level (problems:) is a sweep per problem, each with its receipt.
     * Every request is built (its sources read) before anything is sent:
     * a bad source is bad input, and nothing of the level is submitted. */
    size_t nparts = spec->nparts ? spec->nparts : 1;
    kf_sweep_spec *const *parts = spec->nparts ? spec->parts : &spec;
    Kfleet__SubmitRequest **subs = kf_xcalloc(nparts, sizeof *subs);
    kf_err err;
    kf_client *c = NULL;
    rc = KF_OK;
    for (size_t i = 0; i < nparts && rc == KF_OK; i++)
        rc = kf_client_build_submit(parts[i], kdir, &subs[i], &err);
    if (rc || (rc = kf_client_open(&p, &c, &err))) {
        fprintf(stderr, "kfleet submit: %s\n", err.msg);
        for (size_t i = 0; i < nparts; i++)
            kf_client_free_submit(&subs[i]);
        free(subs);
        kf_sweep_destroy(&spec);
        return rc == KF_EINVAL ? 2 : 1;
    }
    uint32_t ids[64];
    int exit_code = 0;
    for (size_t i = 0; i < nparts && exit_code == 0; i++) {
        Kfleet__ControlReply *rep = NULL;
        Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
        req.body_case = KFLEET__CONTROL_REQUEST__BODY_SUBMIT;
        req.submit = subs[i];
        rc = kf_client_call(c, &req, KF_CLI_SWEEP_REQUEST_MS, &rep, &err);
        kf_client_free_submit(&subs[i]);
        if (rc) {
            fprintf(stderr, "kfleet submit: %s\n", err.msg);
            exit_code = kf_cli_status(rc); /* a sweep too large to send is bad input: 2 */
            break;
        }
        size_t ntasks = 0;
        for (size_t k = 0; k < parts[i]->nkernels; k++)
            ntasks += kf_sweep_kernel_configs(&parts[i]->kernels[k]);
        uint32_t id = rep->sweep_id;
        kfleet__control_reply__free_unpacked(rep, NULL);
        exit_code = print_receipt(json, id, parts[i]->name, ntasks);
        fflush(stdout);
        if (i < sizeof ids / sizeof *ids)
            ids[i] = id;
    }
    for (size_t i = 0; i < nparts; i++)
        kf_client_free_submit(&subs[i]);
    free(subs);
    for (size_t i = 0; i < spec->nmissing; i++)
        fprintf(stderr, "kfleet submit: %s\n", spec->missing[i]);
    /* --follow follows them in turn (a level of more than 64 problems: the
     * first 64; kfleet status shows the rest). */
    int failed = 0;
    for (size_t i = 0; follow && exit_code == 0 && i < nparts && i < sizeof ids / sizeof *ids;
         i++) {
        volatile sig_atomic_t *stop = kf_cli_catch_signals();
        Kfleet__SweepProgress fin = KFLEET__SWEEP_PROGRESS__INIT;
        jsonl_ctx jc = {p.store, jsonl ? kf_report_stream_new(ids[i]) : NULL};
        if (jsonl) {
            fo.on_change = stream_rows;
            fo.ctx = &jc;
        }
        rc = kf_follow(c, ids[i], &fo, (volatile int *)stop, &fin, &err);
        kf_report_stream_destroy(&jc.stream);
        if (rc == KF_ETIMEOUT && *stop) {
            break;
        } else if (rc) {
            fprintf(stderr, "kfleet submit: %s\n", err.msg);
            exit_code = 1;
        } else if (fin.failed + fin.timed_out > 0) {
            failed = 1; /* the level's other problems are still followed */
        }
    }
    if (failed && exit_code == 0)
        exit_code = 1;
    kf_client_close(&c);
    kf_sweep_destroy(&spec);
    return exit_code;
}

const kf_cmd_entry kf_cmd_submit = {
    "submit",
    cmd_submit,
    "Submits a sweep file to the running coordinator.",
    "submit SWEEP.yaml [--follow [--stall-timeout DUR]] [--format table|json|jsonl] "
    "[--keep-going]",
    "Submits a sweep file to the running coordinator and prints its id. A sweep file error\n"
    "is reported as FILE:LINE:COL and nothing is submitted; so are candidates that break\n"
    "the candidate contract, every one of them named (file, line, reason).\n\n"
    "A sweep names kernels, or a problem: and its candidates: (docs/problems.md), or many\n"
    "problems: (a directory or glob) with candidates matched by name, a sweep per problem\n"
    "with a receipt each (docs/sweep-format.md).\n\n"
    "  --follow             show progress until the sweep ends (Ctrl-C detaches; the sweep\n"
    "                       goes on); exit 1 if any task failed\n"
    "  --stall-timeout DUR  with --follow: when tasks are pending, none runs and no agent can\n"
    "                       take them (none registered, all lost, none with a GPU for CUDA\n"
    "                       kernels) for DUR, say why and exit 1 (default 60s; 0: wait)\n"
    "  --format FMT         table or json (the submission receipt); jsonl, with --follow:\n"
    "                       the receipt, then one JSON object a line per row (kernel,\n"
    "                       configuration, node) as it finishes: verdict, median, speedup,\n"
    "                       flags (docs/report-json.md)\n"
    "  --keep-going         refused candidates become failed rows and the others run (the\n"
    "                       sweep's refused: fail), for training loops that submit what a\n"
    "                       model wrote: one bad candidate never stops the batch",
};
