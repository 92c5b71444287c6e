/* cmd_verify — `kfleet verify`: the store's own check of a sweep (every
 * task ended in exactly one terminal record, every sample stored once);
 * exit 1 on any violation. The check is coordinator/report/verify.c's.
 * `kfleet verify --store` checks the whole store for damage instead (its
 * pages, every record, the seals: kf_store_check). */
#include "cli/cli.h"
#include "cli/options.h"
#include "report/verify.h"
#include "core/seal.h"
#include "common/json.h"
#include "common/keys.h"

#include <jansson.h>
#include <sodium.h>
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

/* The seals' key comes from the coordinator's secret (store.h): 1 and
 * sec filled, or 0 with why. */
static int seal_secret(const kf_paths *p, char *sec, size_t len, char *why, size_t wlen)
{
    kf_keypair kp;
    kf_err err;
    int ok = kf_keys_load(p->coord_key, 0, &kp, &err) == KF_OK;
    if (ok)
        snprintf(sec, len, "%s", kp.sec);
    else
        snprintf(why, wlen, "%s", err.msg);
    memset(&kp, 0, sizeof kp);
    return ok;
}

/* Problems --store lists; past them, it counts. */
#define LISTED 1000u

/* --store's findings as one JSON object (kfleet.verify-store/1). */
static int print_store_json(const kf_paths *p, const kf_store_check_stats *st, int have_key,
                            const kf_buf *problems)
{
    json_t *o = json_pack(
        "{s:s,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:I}", "schema", "kfleet.verify-store/1", "store",
        kf_json_str(p->store), "tables", (json_int_t)st->tables, "pages", (json_int_t)st->pages,
        "records", (json_int_t)st->records, "decoded", (json_int_t)st->decoded, "free_pages",
        (json_int_t)st->free_pages, "sealed_records", (json_int_t)st->sealed, "seals",
        !have_key     ? "not checked: no key"
        : st->damaged ? "not checked: damaged pages"
                      : "checked",
        "damaged", (json_int_t)st->damaged);
    json_t *list = json_array();
    for (const char *line = problems->data, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        json_array_append_new(list, json_stringn(line, (size_t)(nl - line)));
    }
    json_object_set_new(o, "problems", list);
    return kf_cli_print_json(o, JSON_INDENT(2));
}

/* --store's findings for a person: the counts, then each problem and what
 * to do. why: why the seals were not checked ("" when they were). */
static void print_store_table(const kf_paths *p, const kf_store_check_stats *st, const char *why,
                              const kf_buf *problems)
{
    printf("store %s: %u tables, %llu pages, %llu records%s\n", p->store, st->tables,
           (unsigned long long)st->pages, (unsigned long long)st->records,
           st->pages_unchecked ? " (pages not checked: this host's LMDB layout is not the one "
                                 "kfleet knows)"
                               : "");
    if (!st->damaged) {
        printf("  every record decoded (%llu)\n", (unsigned long long)st->decoded);
        if (*why)
            printf("  seals not checked: %s\n", why);
        else
            printf("  %llu samples and results matched their seals\n",
                   (unsigned long long)st->sealed);
        printf("  damage: none\n");
        return;
    }
    printf("  damage: %u problem%s\n", st->damaged, st->damaged == 1 ? "" : "s");
    for (const char *line = problems->data, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        printf("    %.*s\n", (int)(nl - line), line);
    }
    if (st->damaged > LISTED)
        printf("    (and %u more)\n", st->damaged - LISTED);
    printf("The store is damaged: kfleet will not serve it. Restore it from a backup, or move it "
           "aside (mv %s %s.damaged) to start a new one.\n",
           p->store, p->store);
}

/* --store: the whole store's check; 0 whole, 1 damaged or unreadable. */
static int verify_store(const kf_paths *p, int json)
{
    char sec[128] = "", why[600] = "";
    int have_key = seal_secret(p, sec, sizeof sec, why, sizeof why);
    kf_buf problems = KF_BUF_INIT;
    kf_store_check_stats st;
    kf_err err;
    int rc = kf_store_check(p->store, 1, have_key ? sec : NULL, LISTED, &problems, &st, &err);
    sodium_memzero(sec, sizeof sec);
    if (rc)
        fprintf(stderr, "kfleet verify --store: %s\n", err.msg);
    else if (json)
        rc = print_store_json(p, &st, have_key, &problems);
    else
        print_store_table(p, &st, why, &problems);
    kf_buf_release(&problems);
    return rc || st.damaged ? 1 : 0;
}

static int cmd_verify(int argc, char **argv, const char *home)
{
    const kf_cmd_entry *self = &kf_cmd_verify;
    int json = 0, whole = 0;
    const kf_option opts[] = {
        KF_OPT_CHOICE("format", &json, ((const char *const[]){"table", "json", NULL})),
        KF_OPT_FLAG("store", &whole),
        KF_OPT_END,
    };
    int rc = kf_opt_parse(self, argc, argv, opts);
    if (rc != KF_OPT_GO)
        return rc;
    if (whole && optind < argc)
        return kf_opt_error(self, "--store checks the whole store: it takes no sweep id");
    uint32_t id = 0; /* 0: the latest */
    if ((rc = kf_cli_sweep_ids(self, argc, argv, &id, 1)) != KF_OPT_GO)
        return rc;
    int have_id = id != 0;
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
    if (whole)
        return verify_store(&p, json);
    /* A sweep's check reads through LMDB, which reads a damaged page as it
     * is: the pages are checked first, as the coordinator's open does. */
    kf_store_check_stats st;
    kf_buf first = KF_BUF_INIT;
    if (kf_store_check(p.store, 0, NULL, 1, &first, &st, &err) == KF_OK && st.damaged) {
        fprintf(stderr,
                "kfleet verify: the store %s is damaged: %s`kfleet verify --store` lists all the "
                "damage\n",
                p.store, first.data);
        kf_buf_release(&first);
        return 1;
    }
    kf_buf_release(&first);
    if (kf_store_open(p.store, 1, &s, &err) != KF_OK) {
        fprintf(stderr, "kfleet verify: %s\n", err.msg);
        return 1;
    }
    char sec[128], seal_why[600] = "";
    if (seal_secret(&p, sec, sizeof sec, seal_why, sizeof seal_why))
        kf_seal_key(s, sec, NULL);
    sodium_memzero(sec, sizeof sec);
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
    "verify [SWEEP_ID | --store] [--format table|json]",
    "Checks a sweep's records in the store (the latest when no id is given): every task\n"
    "ended in exactly one terminal record, every successful profile has all its samples\n"
    "stored once with contiguous sequence numbers. Exit 1 on any violation.\n\n"
    "  --store        check the whole store for damage instead: every page of every table,\n"
    "                 every record decoded, the seals; lists what is damaged; exit 1 if any\n"
    "  --format FMT   table or json",
};
