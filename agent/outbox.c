/* outbox — the agent's durable message queue; see outbox.h.
 *
 * One LMDB environment with two tables: "out" (oseq u64 big-endian ->
 * packed envelope) and "meta" ("next" -> the next oseq, so numbers are never
 * reused across restarts, which would make the coordinator drop new
 * messages as duplicates of old acks). Each put is its own transaction:
 * a result is on disk before the runner's slot is given up. */
#include "agent/outbox.h"
#include "common/xalloc.h"

#include <lmdb.h>
#include <stdlib.h>
#include <string.h>

struct kf_outbox {
    MDB_env *env;
    MDB_dbi out, meta;
    uint64_t next;
};

static void be64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

int kf_outbox_open(const char *dir, kf_outbox **out, kf_err *err)
{
    kf_outbox *o = kf_xcalloc(1, sizeof *o);
    MDB_txn *txn = NULL;
    int rc = mdb_env_create(&o->env);
    if (!rc)
        rc = mdb_env_set_maxdbs(o->env, 4);
    if (!rc)
        rc = mdb_env_set_mapsize(o->env, 1ull << 30);
    if (!rc)
        rc = mdb_env_open(o->env, dir, 0, 0600);
    if (!rc)
        rc = mdb_txn_begin(o->env, NULL, 0, &txn);
    if (!rc)
        rc = mdb_dbi_open(txn, "out", MDB_CREATE, &o->out);
    if (!rc)
        rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &o->meta);
    if (!rc) {
        MDB_val k = {4, (void *)"next"}, v;
        o->next = 1;
        if (mdb_get(txn, o->meta, &k, &v) == 0 && v.mv_size == 8)
            o->next = rd64(v.mv_data);
        rc = mdb_txn_commit(txn);
        txn = NULL;
    }
    if (rc) {
        if (txn)
            mdb_txn_abort(txn);
        mdb_env_close(o->env);
        free(o);
        return kf_err_set(err, rc == MDB_MAP_FULL || rc == 28 ? KF_EFULL : KF_ESTORE,
                          "cannot open the outbox in %s: %s", dir, mdb_strerror(rc));
    }
    *out = o;
    return KF_OK;
}

void kf_outbox_close(kf_outbox **self)
{
    if (!self || !*self)
        return;
    mdb_env_close((*self)->env);
    free(*self);
    *self = NULL;
}

uint64_t kf_outbox_next(kf_outbox *o)
{
    return o->next++;
}

int kf_outbox_put(kf_outbox *o, uint64_t oseq, const void *data, size_t len, kf_err *err)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(o->env, NULL, 0, &txn);
    if (rc)
        return kf_err_set(err, KF_ESTORE, "outbox: %s", mdb_strerror(rc));
    uint8_t kb[8], nb[8];
    be64(kb, oseq);
    be64(nb, o->next > oseq ? o->next : oseq + 1);
    MDB_val k = {8, kb}, v = {len, (void *)data};
    MDB_val mk = {4, (void *)"next"}, mv = {8, nb};
    rc = mdb_put(txn, o->out, &k, &v, 0);
    if (!rc)
        rc = mdb_put(txn, o->meta, &mk, &mv, 0);
    if (rc) {
        mdb_txn_abort(txn);
        return kf_err_set(err, rc == MDB_MAP_FULL ? KF_EFULL : KF_ESTORE, "outbox put: %s",
                          mdb_strerror(rc));
    }
    rc = mdb_txn_commit(txn);
    if (rc)
        return kf_err_set(err, KF_ESTORE, "outbox commit: %s", mdb_strerror(rc));
    return KF_OK;
}

int kf_outbox_ack(kf_outbox *o, const uint64_t *oseq, size_t n, kf_err *err)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(o->env, NULL, 0, &txn);
    if (rc)
        return kf_err_set(err, KF_ESTORE, "outbox: %s", mdb_strerror(rc));
    for (size_t i = 0; i < n; i++) {
        uint8_t kb[8];
        be64(kb, oseq[i]);
        MDB_val k = {8, kb};
        rc = mdb_del(txn, o->out, &k, NULL);
        if (rc && rc != MDB_NOTFOUND) {
            mdb_txn_abort(txn);
            return kf_err_set(err, KF_ESTORE, "outbox ack: %s", mdb_strerror(rc));
        }
    }
    rc = mdb_txn_commit(txn);
    if (rc)
        return kf_err_set(err, KF_ESTORE, "outbox commit: %s", mdb_strerror(rc));
    return KF_OK;
}

int kf_outbox_foreach(kf_outbox *o, kf_outbox_cb cb, void *ctx)
{
    MDB_txn *txn;
    MDB_cursor *cur;
    int rc = mdb_txn_begin(o->env, NULL, MDB_RDONLY, &txn);
    if (rc)
        return KF_ESTORE;
    if ((rc = mdb_cursor_open(txn, o->out, &cur))) {
        mdb_txn_abort(txn);
        return KF_ESTORE;
    }
    MDB_val k, v;
    int out = 0;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 8)
            continue;
        if ((out = cb(ctx, rd64(k.mv_data), v.mv_data, v.mv_size)))
            break;
    }
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    return out;
}

size_t kf_outbox_count(kf_outbox *o)
{
    MDB_txn *txn;
    MDB_stat st;
    if (mdb_txn_begin(o->env, NULL, MDB_RDONLY, &txn))
        return 0;
    mdb_stat(txn, o->out, &st);
    mdb_txn_abort(txn);
    return st.ms_entries;
}
