/* cmd_verify — `kfleet verify`: the store's own check of a sweep (every
 * task ended in exactly one terminal record, every sample stored once);
 * exit 1 on any violation. The check is coordinator/report/verify.c's. */
#include "cli/cli.h"
#include "cli/options.h"
#include "report/verify.h"
#include "core/seal.h"
#include "common/keys.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The summary as one JSON object (kfleet.verify/1). 0 or 1. */
static int print_json(uint32_t id, const kf_verify_summary *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "schema", json_string("kfleet.verify/1"));
    json_object_set_new(o, "sweep_id", json_integer(id));
    const struct {
        const char *key;
        uint32_t v;
    } counts[] = {
        {"tasks", s->tasks},
        {"terminal", s->terminal},
        {"terminal_records", s->results},
        {"succeeded", s->succeeded},
        {"failed", s->failed},
        {"timed_out", s->timed_out},
        {"cancelled", s->cancelled},
        {"skipped", s->skipped},
        {"profiles", s->profiles},
        {"samples", s->samples},
        {"attempts", s->attempts},
        {"requeued", s->requeued},
        {"late_results", s->late},
        {"violations", s->violations},
        {"sealed_records", s->sealed},
    };
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++)
        json_object_set_new(o, counts[i].key, json_integer(counts[i].v));
    json_object_set_new(o, "seals",
                        json_string(s->seals > 0    ? "checked"
                                    : s->seals == 0 ? "not checked: no key"
                                                    : "sweep older than seals"));
    return kf_cli_print_json(o, 0);
}

static int cmd_verify(int argc, char **argv, const char *home)
{
    const kf_cmd_entry *self = &kf_cmd_verify;
    int json = 0;
    static const struct option opts[] = {
        {"format", required_argument, 0, 'F'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int ch, rc;
    while ((ch = kf_opt_next(self, argc, argv, opts, &rc)) != KF_OPT_END) {
        switch (ch) {
        case KF_OPT_EXIT:
            return rc;
        case 'F':
            if (kf_opt_format(self, optarg, (const char *const[]){"table", "json", NULL}, &json))
                return 2;
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
    }
    kf_paths p;
    if (kf_cli_paths(home, 0, &p))
        return 1;
    kf_err err;
    kf_store *s = NULL;
    if (access(p.store, F_OK) != 0) {
        fprintf(stderr, "kfleet verify: no store at %s: nothing has run with this home yet\n",
                p.store);
        return 1;
    }
    if (kf_store_open(p.store, 1, &s, &err) != KF_OK) {
        fprintf(stderr, "kfleet verify: %s\n", err.msg);
        return 1;
    }
    /* The seals' key comes from the coordinator's secret (store.h). */
    kf_keypair kp;
    char seal_why[600] = "";
    if (kf_keys_load(p.coord_key, 0, &kp, &err) == KF_OK)
        kf_seal_key(s, kp.sec, NULL);
    else
        snprintf(seal_why, sizeof seal_why, "%s", err.msg);
    memset(&kp, 0, sizeof kp);
    kf_txn *t = NULL;
    rc = kf_store_begin(s, 1, &t, &err);
    if (rc == KF_OK && !have_id)
        rc = kf_store_latest_sweep_id(t, &id);
    kf_verify_summary sum;
    kf_buf problems = KF_BUF_INIT;
    if (rc == KF_OK)
        rc = kf_verify_sweep(t, id, &sum, &problems);
    kf_store_abort(&t);
    kf_store_close(&s);
    if (rc == KF_ENOTFOUND) {
        if (have_id)
            fprintf(stderr,
                    "kfleet verify: no sweep %u in this store; `kfleet status` lists the "
                    "sweeps\n",
                    id);
        else
            fprintf(stderr, "kfleet verify: no sweep in %s yet\n", p.store);
        kf_buf_release(&problems);
        return 2;
    }
    if (rc) {
        fprintf(stderr, "kfleet verify: cannot read sweep %u: %s\n", id, kf_strerror(rc));
        kf_buf_release(&problems);
        return 1;
    }
    int failed = 0;
    if (json) {
        failed = print_json(id, &sum);
    } else {
        printf("sweep %u: %u tasks, %u ended, %u terminal records (%u succeeded, %u failed, %u "
               "timed out, %u cancelled, %u skipped)\n"
               "  %u successful profiles with %u samples; %u attempts, %u requeued, %u late "
               "results kept\n"
               "  violations: %u\n",
               id, sum.tasks, sum.terminal, sum.results, sum.succeeded, sum.failed, sum.timed_out,
               sum.cancelled, sum.skipped, sum.profiles, sum.samples, sum.attempts, sum.requeued,
               sum.late, sum.violations);
        if (sum.seals > 0)
            printf("  %u samples and results checked against their seals\n", sum.sealed);
        else if (sum.seals == 0)
            printf("  seals not checked: %s\n",
                   seal_why[0] ? seal_why : "the store has no seal key");
        else
            printf("  seals not checked: the sweep is older than seals\n");
    }
    if (problems.len)
        fputs(problems.data, stderr);
    kf_buf_release(&problems);
    return sum.violations || failed ? 1 : 0;
}

const kf_cmd_entry kf_cmd_verify = {
    "verify",
    cmd_verify,
    "Checks a sweep's records in the store; exit 1 on any violation.",
    "verify [SWEEP_ID] [--format table|json]",
    "Checks a sweep's records in the store (the latest when no id is given): every task\n"
    "ended in exactly one terminal record, every successful profile has all its samples\n"
    "stored once with contiguous sequence numbers. Exit 1 on any violation.\n\n"
    "  --format FMT   table or json",
};
