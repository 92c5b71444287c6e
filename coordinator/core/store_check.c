/* store_check — the whole store's check for damage, `kfleet verify --store`
 * (issue 44): the pages, as an open checks them (pagecheck.h) but listing
 * every problem, then what the page structure cannot show: every record's
 * key has its table's layout and its value decodes as its table's message,
 * and each sealed result and its samples match their seals. */
#include "core/store.h"
#include "core/pagecheck.h"
#include "core/seal.h"
#include "core/store_int.h"

#include <stdio.h>
#include <string.h>

/* What each table's records are: a key of klen bytes (0: any length), and
 * a value that decodes as msg, or (msg NULL) is vlen bytes. */
static const struct {
    size_t klen;
    const ProtobufCMessageDescriptor *msg;
    size_t vlen;
} layout[DB_COUNT] = {
    [DB_META] = {0, NULL, 4},
    [DB_SWEEPS] = {4, &kfleet__sweep__descriptor, 0},
    [DB_TASKS] = {8, &kfleet__task__descriptor, 0},
    [DB_ATTEMPTS] = {12, &kfleet__attempt__descriptor, 0},
    [DB_RESULTS] = {8, &kfleet__result__descriptor, 0},
    [DB_LATE] = {12, &kfleet__result__descriptor, 0},
    [DB_SAMPLES] = {16, &kfleet__sample__descriptor, 0},
    [DB_AGENTS] = {0, &kfleet__agent_info__descriptor, 0},
    [DB_BUILDS] = {0, &kfleet__build_record__descriptor, 0},
    [DB_TELEMETRY] = {16, &kfleet__telemetry__descriptor, 0},
    [DB_SEALS] = {0, NULL, SEAL_LEN},
    [DB_SEEDPOOLS] = {0, &kfleet__seed_pool__descriptor, 0},
    [DB_REFS] = {0, &kfleet__reference__descriptor, 0},
};

typedef struct deep {
    kf_txn *t;
    unsigned max;
    kf_buf *problems;
    kf_store_check_stats *out;
} deep;

static void record_problem(deep *d, int db, const MDB_val *k, const char *what)
{
    if (d->out->damaged++ >= d->max)
        return;
    kf_buf_addf(d->problems, "table '%s': the record with key ", kf_store_tables[db]);
    for (size_t i = 0; i < k->mv_size && i < 24; i++)
        kf_buf_addf(d->problems, "%02x", ((const unsigned char *)k->mv_data)[i]);
    kf_buf_addf(d->problems, "%s %s\n", k->mv_size > 24 ? "..." : "", what);
}

/* A sealed result and the samples of its attempt, against their seals. */
static void check_seals(deep *d, const MDB_val *k, const Kfleet__Result *r)
{
    kf_seal_count c = {0};
    uint64_t id = 0;
    for (int i = 0; i < 8; i++)
        id = id << 8 | ((const uint8_t *)k->mv_data)[i];
    if (kf_seal_check(d->t, id, r->attempt, &c) != KF_OK)
        return; /* no key, or a sweep older than seals */
    d->out->sealed += c.checked;
    if (c.result_bad)
        record_problem(d, DB_RESULTS, k,
                       c.result_bad == 1 ? "was changed after it was written (its seal does "
                                           "not match)"
                                         : "has no seal, in a sealed sweep");
    if (c.samples_bad)
        record_problem(d, DB_RESULTS, k,
                       c.samples_bad == 1 ? "has samples that were changed, added or removed "
                                            "after they were written (their seal does not match)"
                                          : "has samples without a seal, in a sealed sweep");
}

static void check_record(deep *d, int db, const MDB_val *k, const MDB_val *v)
{
    d->out->decoded++;
    if (layout[db].klen && k->mv_size != layout[db].klen) {
        record_problem(d, db, k, "has a key of another length than the table's");
        return;
    }
    if (!layout[db].msg) {
        if (v->mv_size != layout[db].vlen)
            record_problem(d, db, k, "has a value of another length than the table's");
        return;
    }
    ProtobufCMessage *m = protobuf_c_message_unpack(layout[db].msg, NULL, v->mv_size, v->mv_data);
    if (!m) {
        record_problem(d, db, k, "does not decode: its bytes were changed");
        return;
    }
    if (db == DB_RESULTS)
        check_seals(d, k, (const Kfleet__Result *)m);
    protobuf_c_message_free_unpacked(m, NULL);
}

/* The page walk of the store in dir, on an environment of its own that
 * reads no table (kf_store_open would refuse a damaged store at its first
 * problem; this lists them all). */
static int check_pages(const char *dir, unsigned max, kf_buf *problems, kf_store_check_stats *out,
                       kf_err *err)
{
    long long fsize;
    int rc = kf_pagecheck_file(dir, &fsize, err);
    if (rc)
        return rc;
    if (fsize < 0)
        return kf_err_set(err, KF_ENOTFOUND, "no store at %s: nothing has run with this home yet",
                          dir);
    MDB_env *env = NULL;
    if ((rc = mdb_env_create(&env)) == 0)
        rc = mdb_env_open(env, dir, MDB_RDONLY, 0600);
    if (rc) {
        mdb_env_close(env);
        return kf_err_set(err, KF_ESTORE,
                          "cannot open the store %s: %s (its meta pages are damaged, or it is "
                          "not a kfleet store)",
                          dir, mdb_strerror(rc));
    }
    kf_pagecheck pc;
    if ((rc = kf_pagecheck_length(env, dir, fsize, err)) == KF_OK)
        rc = kf_pagecheck_run(env, 1, max, problems, &pc, err);
    mdb_env_close(env);
    if (rc == KF_OK) {
        out->pages = pc.pages;
        out->records = pc.records;
        out->free_pages = pc.free_pages;
        out->tables = pc.tables;
        out->damaged = pc.damaged;
        out->pages_unchecked = pc.unsupported;
    }
    return rc;
}

int kf_store_check(const char *dir, int records, const char *seal_secret, unsigned max,
                   kf_buf *problems, kf_store_check_stats *out, kf_err *err)
{
    memset(out, 0, sizeof *out);
    int rc = check_pages(dir, max, problems, out, err);
    if (rc || out->damaged || !records)
        return rc; /* LMDB would read damaged pages as they are: no record is read */
    kf_store *s;
    kf_txn *t = NULL;
    if ((rc = kf_store_open(dir, 1, &s, err)))
        return rc;
    if (seal_secret)
        kf_seal_key(s, seal_secret, NULL);
    out->seals_checked = seal_secret != NULL;
    if ((rc = kf_store_begin(s, 1, &t, err))) {
        kf_store_close(&s);
        return rc;
    }
    deep d = {t, max, problems, out};
    for (int db = 0; db < DB_COUNT && rc == KF_OK; db++) {
        if (s->absent[db] || (db == DB_SEALS && !s->has_seals))
            continue;
        MDB_cursor *c;
        MDB_val k, v;
        if ((rc = mdb_cursor_open(t->txn, s->dbi[db], &c)))
            break;
        while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0)
            check_record(&d, db, &k, &v);
        mdb_cursor_close(c);
        rc = rc == MDB_NOTFOUND ? KF_OK : rc;
    }
    kf_store_abort(&t);
    kf_store_close(&s);
    if (rc)
        return kf_err_set(err, KF_ESTORE, "cannot read the records of the store %s: %s", dir,
                          mdb_strerror(rc));
    return KF_OK;
}
