/* store — the coordinator's LMDB environment; see store.h for the layout.
 *
 * One environment, its named databases (store_int.h; a problem's seed
 * pools and references in store_problem.c), opened once per process.
 * A sample or result is sealed in the transaction that puts it (seal.h:
 * the seals' key and check are seal.c's, which reads what this file
 * wrote). Records are packed protobuf messages. Keys are big-endian so cursor order is
 * numeric order, which lets "all tasks of sweep S" and "all samples of an
 * attempt" be a single range scan. */
#include "core/store.h"
#include "core/pagecheck.h"
#include "core/store_int.h"
#include "common/xalloc.h"
#include "common/util.h"

#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const char *const kf_store_tables[DB_COUNT] = {
    "meta",   "sweeps", "tasks",     "attempts", "results",   "late", "samples",
    "agents", "builds", "telemetry", "seals",    "seedpools", "refs"};

#define KF_STORE_INITIAL_MAP (256ull << 20)

int kf_store_open(const char *dir, int readonly, kf_store **out, kf_err *err)
{
    long long fsize = -1;
    int crc = kf_pagecheck_file(dir, &fsize, err);
    if (crc)
        return crc;
    kf_store *s = kf_xcalloc(1, sizeof *s);
    s->readonly = readonly;
    int rc = mdb_env_create(&s->env);
    if (rc)
        goto fail;
    mdb_env_set_maxdbs(s->env, DB_COUNT + 2);
    mdb_env_set_maxreaders(s->env, 256);
    if (!readonly) {
        /* A store already larger keeps what it holds: LMDB raises the map to
         * the data's size, and the coordinator grows it before a turn.
         * KF_STORE_MAP_SIZE (bytes) starts a tiny map, for the tests that
         * make it grow. */
        s->map_size = KF_STORE_INITIAL_MAP;
        const char *env_map = getenv("KF_STORE_MAP_SIZE");
        if (env_map && strtoull(env_map, NULL, 10) >= (64u << 10))
            s->map_size = (size_t)strtoull(env_map, NULL, 10);
        if ((rc = mdb_env_set_mapsize(s->env, s->map_size)))
            goto fail;
    }
    rc = mdb_env_open(s->env, dir, readonly ? MDB_RDONLY : 0, 0600);
    if (rc)
        goto fail;
    MDB_envinfo info;
    mdb_env_info(s->env, &info);
    s->map_size = info.me_mapsize;
    /* Damage LMDB does not see is looked for before it reads any table
     * (pagecheck.h): in every table when the coordinator opens the store. */
    if ((crc = kf_pagecheck_open(s->env, dir, fsize, !readonly, err))) {
        mdb_env_close(s->env);
        free(s);
        return crc;
    }

    MDB_txn *txn;
    if ((rc = mdb_txn_begin(s->env, NULL, readonly ? MDB_RDONLY : 0, &txn)))
        goto fail;
    for (int i = 0; i < DB_COUNT; i++) {
        rc = mdb_dbi_open(txn, kf_store_tables[i], readonly ? 0 : MDB_CREATE, &s->dbi[i]);
        if (rc == MDB_NOTFOUND && readonly && i >= DB_FIRST_OPTIONAL) {
            s->absent[i] = 1; /* a store before problems: read as empty */
            continue;
        }
        if (rc == MDB_NOTFOUND && i == DB_SEALS)
            continue; /* a store written before seals, read only: nothing to check */
        s->has_seals |= i == DB_SEALS;
        if (rc) {
            mdb_txn_abort(txn);
            if (rc == MDB_NOTFOUND && readonly) {
                mdb_env_close(s->env);
                free(s);
                return kf_err_set(err, KF_ENOTFOUND,
                                  "store %s has no '%s' table: it was never written by a "
                                  "coordinator",
                                  dir, kf_store_tables[i]);
            }
            goto fail;
        }
    }
    if (!readonly) {
        MDB_val k = {6, (void *)"schema"}, v;
        uint32_t schema = KF_STORE_SCHEMA;
        rc = mdb_get(txn, s->dbi[DB_META], &k, &v);
        if (rc == MDB_NOTFOUND) {
            v.mv_size = sizeof schema;
            v.mv_data = &schema;
            rc = mdb_put(txn, s->dbi[DB_META], &k, &v, 0);
        } else if (rc == 0 && (v.mv_size != sizeof schema || memcmp(v.mv_data, &schema, 4))) {
            mdb_txn_abort(txn);
            mdb_env_close(s->env);
            free(s);
            return kf_err_set(err, KF_ESTORE,
                              "store %s has another schema than this kfleet (%u); use a new "
                              "--home or the kfleet that wrote it",
                              dir, KF_STORE_SCHEMA);
        }
        if (rc) {
            mdb_txn_abort(txn);
            goto fail;
        }
    }
    if ((rc = mdb_txn_commit(txn)))
        goto fail;
    *out = s;
    return KF_OK;
fail:
    kf_err_set(err, rc == EACCES ? KF_EINVAL : kf_store_map_rc(rc), "cannot open store %s: %s%s",
               dir, mdb_strerror(rc),
               rc == MDB_INVALID || rc == MDB_CORRUPTED || rc == MDB_VERSION_MISMATCH
                   ? " (damaged, or not a kfleet store: restore it from a backup, or move the "
                     "directory aside to start a new one)"
               : rc == EACCES ? " (this user may not read it: pass --home DIR, or run as its owner)"
                              : "");
    if (s->env)
        mdb_env_close(s->env);
    free(s);
    return err ? err->code : KF_ESTORE;
}

void kf_store_close(kf_store **self)
{
    if (!self || !*self)
        return;
    mdb_env_close((*self)->env);
    free(*self);
    *self = NULL;
}

int kf_store_grow(kf_store *s, kf_err *err)
{
    size_t next = s->map_size * 2;
    int rc = mdb_env_set_mapsize(s->env, next);
    if (rc)
        return kf_err_set(err, kf_store_map_rc(rc), "cannot grow the store map to %zu MiB: %s",
                          next >> 20, mdb_strerror(rc));
    s->map_size = next;
    return KF_OK;
}

size_t kf_store_map_size(const kf_store *s)
{
    return s->map_size;
}

size_t kf_store_used(const kf_store *s)
{
    MDB_envinfo info;
    MDB_stat st;
    mdb_env_info(s->env, &info);
    mdb_env_stat(s->env, &st);
    return (size_t)(info.me_last_pgno + 1) * st.ms_psize;
}

int kf_store_begin(kf_store *s, int readonly, kf_txn **out, kf_err *err)
{
    kf_txn *t = kf_xcalloc(1, sizeof *t);
    t->s = s;
    int rc = mdb_txn_begin(s->env, NULL, readonly || s->readonly ? MDB_RDONLY : 0, &t->txn);
    if (rc == MDB_MAP_RESIZED) {
        /* Another process grew the map: adopt its size and retry. */
        mdb_env_set_mapsize(s->env, 0);
        rc = mdb_txn_begin(s->env, NULL, readonly || s->readonly ? MDB_RDONLY : 0, &t->txn);
    }
    if (rc) {
        free(t);
        return kf_err_set(err, kf_store_map_rc(rc), "cannot begin a store transaction: %s",
                          mdb_strerror(rc));
    }
    *out = t;
    return KF_OK;
}

int kf_store_commit(kf_txn **txn, kf_err *err)
{
    kf_txn *t = *txn;
    *txn = NULL;
    int rc;
    if (t->failed) {
        rc = t->failed;
        mdb_txn_abort(t->txn);
    } else {
        rc = mdb_txn_commit(t->txn);
    }
    free(t);
    if (rc)
        return kf_err_set(err, kf_store_map_rc(rc), "store commit failed: %s%s", mdb_strerror(rc),
                          rc == MDB_MAP_FULL ? " (the map is full)" : "");
    return KF_OK;
}

void kf_store_abort(kf_txn **txn)
{
    if (!txn || !*txn)
        return;
    mdb_txn_abort((*txn)->txn);
    free(*txn);
    *txn = NULL;
}

/* ---- keys ---- */

/* mdb_put into table db through the transaction's cursor on it (opened on
 * first use; LMDB frees it with the transaction). A turn's puts into one
 * table are mostly neighbours (the tasks in flight, the results and seals
 * appended at the end), and LMDB starts a cursor's search from the page the
 * cursor is on when the key falls there, where mdb_put searches from the
 * root each time: 2,760 instructions a sample, 1,376 through a cursor
 * (`kfbench ingest`). The first error but MDB_KEYEXIST is kept in
 * t->failed. */
static int kf_txn_put(kf_txn *t, int db, MDB_val *k, MDB_val *v, unsigned flags)
{
    int rc = 0;
    if (!t->put[db])
        rc = mdb_cursor_open(t->txn, t->s->dbi[db], &t->put[db]);
    if (rc == 0)
        rc = mdb_cursor_put(t->put[db], k, v, flags);
    if (rc && rc != MDB_KEYEXIST && !t->failed)
        t->failed = rc;
    return rc;
}

/* ---- seals (seal.h): each sample and result sealed as it is put ---- */

/* It starts from a copy of the state kf_seal_key keyed once: keying a
 * state costs about a fifth of a sample's MAC, and an ingest makes one MAC
 * per sample. */
void store_seal_mac(const kf_store *s, int db, const MDB_val *k, const MDB_val *v,
                    uint8_t mac[SEAL_LEN])
{
    uint8_t tb = (uint8_t)db;
    crypto_generichash_state st;
    if (s->sealing)
        memcpy(&st, s->seal_init, sizeof st);
    else
        crypto_generichash_init(&st, s->seal_key, sizeof s->seal_key, SEAL_LEN);
    crypto_generichash_update(&st, &tb, 1);
    crypto_generichash_update(&st, k->mv_data, k->mv_size);
    crypto_generichash_update(&st, v->mv_data, v->mv_size);
    crypto_generichash_final(&st, mac, SEAL_LEN);
}

/* A result's (and a late result's) seal lives under its own key; an
 * attempt's samples share one, (samples, task, attempt), the XOR of their
 * MACs, so a seal costs one small record per attempt rather than one per
 * sample (a full-disk store must still fit its sweep). */
size_t store_seal_slot(int db, const void *key, size_t klen, uint8_t out[32])
{
    out[0] = (uint8_t)db;
    if (db == DB_SAMPLES && klen == 16)
        klen = 12;
    memcpy(out + 1, key, klen);
    return klen + 1;
}

void store_run_begin(const kf_store *s, store_run *r, const uint8_t attempt_key[12], uint32_t lo)
{
    uint8_t tag = RUN_TAG, b[4];
    memcpy(&r->st, s->seal_init, sizeof r->st);
    crypto_generichash_update(&r->st, &tag, 1);
    crypto_generichash_update(&r->st, attempt_key, 12);
    be32(b, lo);
    crypto_generichash_update(&r->st, b, 4);
    r->lo = r->next = lo;
}

void store_run_add(store_run *r, const MDB_val *v)
{
    uint8_t b[4];
    be32(b, (uint32_t)v->mv_size);
    crypto_generichash_update(&r->st, b, 4);
    crypto_generichash_update(&r->st, v->mv_data, v->mv_size);
    r->next++;
}

void store_run_end(store_run *r, const uint8_t attempt_key[12], uint8_t mac[SEAL_LEN],
                   uint8_t slot[RUN_SLOT_LEN])
{
    uint8_t b[4];
    be32(b, r->next - 1);
    crypto_generichash_update(&r->st, b, 4);
    crypto_generichash_final(&r->st, mac, SEAL_LEN);
    if (!slot)
        return;
    slot[0] = RUN_TAG;
    memcpy(slot + 1, attempt_key, 12);
    be32(slot + 13, r->lo);
    be32(slot + 17, r->next - 1);
}

/* Adds mac to the seals table: a result's is its own seal; a sample's is
 * folded (XOR) into its attempt's, so mac may be the XOR of several
 * samples of one attempt (key any of theirs): one seal update a batch. */
static int seal_add(kf_txn *t, int db, const void *key, size_t klen, const uint8_t mac[SEAL_LEN])
{
    uint8_t slot[32], seal[SEAL_LEN];
    memcpy(seal, mac, SEAL_LEN);
    MDB_val k = {store_seal_slot(db, key, klen, slot), slot}, old;
    if (db == DB_SAMPLES && mdb_get(t->txn, t->s->dbi[DB_SEALS], &k, &old) == 0 &&
        old.mv_size == SEAL_LEN)
        for (int i = 0; i < SEAL_LEN; i++)
            seal[i] ^= ((const uint8_t *)old.mv_data)[i];
    MDB_val sv = {SEAL_LEN, seal};
    return kf_store_map_rc(kf_txn_put(t, DB_SEALS, &k, &sv, 0));
}

/* The seal of a record just put into table db, in the same transaction. */
static int seal_put(kf_txn *t, int db, const void *key, size_t klen, const MDB_val *v)
{
    uint8_t mac[SEAL_LEN];
    MDB_val rk = {klen, (void *)key};
    store_seal_mac(t->s, db, &rk, v, mac);
    return seal_add(t, db, key, klen, mac);
}

/* ---- generic put/get of packed messages ---- */

/* Packs m into table db under key; *stored (when given) is where its bytes
 * went. The seal is the caller's (store_put_msg). */
static int put_packed(kf_txn *t, int db, const void *key, size_t klen, const ProtobufCMessage *m,
                      unsigned flags, int *dup, MDB_val *stored)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    MDB_val k = {klen, (void *)key}, v = {n, NULL};
    /* MDB_RESERVE: pack straight into the page, no intermediate buffer. */
    int rc = kf_txn_put(t, db, &k, &v, flags | MDB_RESERVE);
    if (rc == MDB_KEYEXIST && dup) {
        *dup = 1;
        return KF_OK;
    }
    if (dup)
        *dup = 0;
    if (rc) {
        if (!t->failed)
            t->failed = rc;
        return kf_store_map_rc(rc);
    }
    protobuf_c_message_pack(m, v.mv_data);
    if (stored)
        *stored = v;
    return KF_OK;
}

static int sealed_table(int db)
{
    return db == DB_SAMPLES || db == DB_RESULTS || db == DB_LATE;
}

int store_put_msg(kf_txn *t, int db, const void *key, size_t klen, const ProtobufCMessage *m,
                  unsigned flags, int *dup)
{
    MDB_val v;
    int d = 0;
    int rc = put_packed(t, db, key, klen, m, flags, dup ? &d : NULL, &v);
    if (dup)
        *dup = d;
    if (rc || d)
        return rc;
    if (t->s->sealing && sealed_table(db))
        return seal_put(t, db, key, klen, &v);
    return KF_OK;
}

int store_get_raw(kf_txn *t, int db, const void *key, size_t klen, MDB_val *v)
{
    MDB_val k = {klen, (void *)key};
    if (t->s->absent[db])
        return KF_ENOTFOUND;
    return kf_store_map_rc(mdb_get(t->txn, t->s->dbi[db], &k, v));
}

/* ---- meta ---- */

int kf_store_next_sweep_id(kf_txn *t, uint32_t *id)
{
    MDB_val v;
    uint32_t next = 1;
    int rc = store_get_raw(t, DB_META, "next_sweep", 10, &v);
    if (rc == KF_OK && v.mv_size == 4)
        next = rd32(v.mv_data);
    else if (rc != KF_ENOTFOUND && rc != KF_OK)
        return rc;
    uint8_t buf[4];
    be32(buf, next + 1);
    MDB_val k = {10, (void *)"next_sweep"}, nv = {4, buf};
    if ((rc = mdb_put(t->txn, t->s->dbi[DB_META], &k, &nv, 0))) {
        if (!t->failed)
            t->failed = rc;
        return kf_store_map_rc(rc);
    }
    *id = next;
    return KF_OK;
}

int kf_store_latest_sweep_id(kf_txn *t, uint32_t *id)
{
    MDB_cursor *c;
    int rc = mdb_cursor_open(t->txn, t->s->dbi[DB_SWEEPS], &c);
    if (rc)
        return kf_store_map_rc(rc);
    MDB_val k, v;
    rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
    if (rc == 0 && k.mv_size == 4)
        *id = rd32(k.mv_data);
    mdb_cursor_close(c);
    return kf_store_map_rc(rc);
}

/* ---- records ---- */

int kf_store_put_sweep(kf_txn *t, const Kfleet__Sweep *sw)
{
    uint8_t k[4];
    be32(k, sw->sweep_id);
    return store_put_msg(t, DB_SWEEPS, k, 4, &sw->base, 0, NULL);
}

int kf_store_get_sweep(kf_txn *t, uint32_t id, Kfleet__Sweep **out)
{
    uint8_t k[4];
    be32(k, id);
    GET_MSG(t, DB_SWEEPS, k, 4, kfleet__sweep, out);
}

int kf_store_put_task(kf_txn *t, const Kfleet__Task *task)
{
    uint8_t k[8];
    be64(k, task->task_id);
    return store_put_msg(t, DB_TASKS, k, 8, &task->base, 0, NULL);
}

int kf_store_get_task(kf_txn *t, uint64_t task_id, Kfleet__Task **out)
{
    uint8_t k[8];
    be64(k, task_id);
    GET_MSG(t, DB_TASKS, k, 8, kfleet__task, out);
}

int kf_store_put_attempt(kf_txn *t, const Kfleet__Attempt *a)
{
    uint8_t k[12];
    be64(k, a->task_id);
    be32(k + 8, a->attempt);
    return store_put_msg(t, DB_ATTEMPTS, k, 12, &a->base, 0, NULL);
}

int kf_store_get_attempt(kf_txn *t, uint64_t task_id, uint32_t attempt, Kfleet__Attempt **out)
{
    uint8_t k[12];
    be64(k, task_id);
    be32(k + 8, attempt);
    GET_MSG(t, DB_ATTEMPTS, k, 12, kfleet__attempt, out);
}

int kf_store_put_result(kf_txn *t, const Kfleet__Result *r, int *dup)
{
    uint8_t k[8];
    be64(k, r->task_id);
    return store_put_msg(t, DB_RESULTS, k, 8, &r->base, MDB_NOOVERWRITE, dup);
}

int kf_store_get_result(kf_txn *t, uint64_t task_id, Kfleet__Result **out)
{
    uint8_t k[8];
    be64(k, task_id);
    GET_MSG(t, DB_RESULTS, k, 8, kfleet__result, out);
}

int kf_store_put_late(kf_txn *t, const Kfleet__Result *r, int *dup)
{
    uint8_t k[12];
    be64(k, r->task_id);
    be32(k + 8, r->attempt);
    return store_put_msg(t, DB_LATE, k, 12, &r->base, MDB_NOOVERWRITE, dup);
}

int kf_store_put_sample(kf_txn *t, uint64_t task_id, uint32_t attempt, const Kfleet__Sample *s,
                        int *dup)
{
    size_t dups = 0;
    int rc = kf_store_put_samples(t, task_id, attempt, &s, 1, &dups);
    if (dup)
        *dup = dups > 0;
    return rc;
}

/* The run r of the attempt keyed ak ends: its seal put, its MAC folded
 * into acc (the attempt's seal's update). */
static int run_close(kf_txn *t, store_run *r, const uint8_t ak[12], uint8_t acc[SEAL_LEN])
{
    uint8_t mac[SEAL_LEN], slot[RUN_SLOT_LEN];
    store_run_end(r, ak, mac, slot);
    for (int j = 0; j < SEAL_LEN; j++)
        acc[j] ^= mac[j];
    MDB_val k = {RUN_SLOT_LEN, slot}, v = {SEAL_LEN, mac};
    return kf_store_map_rc(kf_txn_put(t, DB_SEALS, &k, &v, 0));
}

int kf_store_put_samples(kf_txn *t, uint64_t task_id, uint32_t attempt,
                         const Kfleet__Sample *const *s, size_t n, size_t *dups)
{
    uint8_t k[16], seal[SEAL_LEN] = {0};
    be64(k, task_id);
    be32(k + 8, attempt);
    size_t sealed = 0, d = 0;
    int rc = KF_OK;
    /* Sealed by runs (seal.h): one MAC over each run of consecutive seqs
     * as they come, a few bytes of hashing a sample instead of a keyed
     * BLAKE2b of its own (two compressions, 0.44 us: a third of ingest's
     * coordinator CPU). */
    int by_runs = t->s->sealing && kf_task_sweep(task_id) >= t->s->runs_since, open = 0;
    store_run run;
    for (size_t i = 0; i < n; i++) {
        be32(k + 12, s[i]->seq);
        MDB_val v;
        int dup = 0;
        if ((rc = put_packed(t, DB_SAMPLES, k, 16, &s[i]->base, MDB_NOOVERWRITE, &dup, &v)))
            break; /* the transaction is failed: its commit stores none of it */
        if (dup) {
            d++;
            continue;
        }
        if (by_runs) {
            if (open && (s[i]->seq != run.next || run.next == 0)) {
                if ((rc = run_close(t, &run, k, seal)))
                    break;
                open = 0;
            }
            if (!open)
                store_run_begin(t->s, &run, k, s[i]->seq);
            open = 1;
            store_run_add(&run, &v);
            sealed++;
        } else if (t->s->sealing) {
            /* The attempt's seal is the XOR of its samples' MACs: the
             * batch's XOR is folded in once, not once per sample. */
            uint8_t mac[SEAL_LEN];
            MDB_val rk = {16, k};
            store_seal_mac(t->s, DB_SAMPLES, &rk, &v, mac);
            for (int j = 0; j < SEAL_LEN; j++)
                seal[j] ^= mac[j];
            sealed++;
        }
    }
    if (!rc && open)
        rc = run_close(t, &run, k, seal);
    if (rc)
        return rc;
    if (dups)
        *dups = d;
    return sealed ? seal_add(t, DB_SAMPLES, k, 16, seal) : KF_OK;
}

int kf_store_put_telemetry(kf_txn *t, uint64_t task_id, uint32_t attempt,
                           const Kfleet__Telemetry *r, int *dup)
{
    uint8_t k[16];
    be64(k, task_id);
    be32(k + 8, attempt);
    be32(k + 12, r->seq);
    return store_put_msg(t, DB_TELEMETRY, k, 16, &r->base, MDB_NOOVERWRITE, dup);
}

int kf_store_put_agent(kf_txn *t, const Kfleet__AgentInfo *a)
{
    return store_put_msg(t, DB_AGENTS, a->agent_id, strlen(a->agent_id), &a->base, 0, NULL);
}

int kf_store_get_agent(kf_txn *t, const char *agent_id, Kfleet__AgentInfo **out)
{
    GET_MSG(t, DB_AGENTS, agent_id, strlen(agent_id), kfleet__agent_info, out);
}

static size_t build_key(uint8_t *k, size_t cap, const char *agent, const char *hash)
{
    size_t a = strlen(agent), h = strlen(hash);
    if (a + 1 + h > cap)
        return 0;
    memcpy(k, agent, a);
    k[a] = 0;
    memcpy(k + a + 1, hash, h);
    return a + 1 + h;
}

int kf_store_put_build(kf_txn *t, const Kfleet__BuildRecord *b)
{
    uint8_t k[400];
    size_t n = build_key(k, sizeof k, b->agent_id, b->kernel_hash);
    if (!n)
        return KF_EINVAL;
    return store_put_msg(t, DB_BUILDS, k, n, &b->base, 0, NULL);
}

int kf_store_get_build(kf_txn *t, const char *agent_id, const char *kernel_hash,
                       Kfleet__BuildRecord **out)
{
    uint8_t k[400];
    size_t n = build_key(k, sizeof k, agent_id, kernel_hash);
    if (!n)
        return KF_EINVAL;
    GET_MSG(t, DB_BUILDS, k, n, kfleet__build_record, out);
}

/* ---- iteration ---- */

/* Walks keys starting with prefix (all keys when plen == 0). */
int store_walk(kf_txn *t, int db, const void *prefix, size_t plen, store_raw_cb cb, void *ctx)
{
    MDB_cursor *c;
    if (t->s->absent[db])
        return KF_OK;
    int rc = mdb_cursor_open(t->txn, t->s->dbi[db], &c);
    if (rc)
        return kf_store_map_rc(rc);
    MDB_val k = {plen, (void *)prefix}, v;
    rc = mdb_cursor_get(c, &k, &v, plen ? MDB_SET_RANGE : MDB_FIRST);
    int out = KF_OK;
    while (rc == 0) {
        if (plen && (k.mv_size < plen || memcmp(k.mv_data, prefix, plen) != 0))
            break;
        if ((out = cb(ctx, &k, &v)) != 0)
            break;
        rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(c);
    if (out)
        return out;
    return rc == MDB_NOTFOUND || rc == 0 ? KF_OK : kf_store_map_rc(rc);
}

DECODE_CB(sweep_cb, kfleet__sweep, Kfleet__Sweep, kf_store_sweep_cb)
DECODE_CB(task_cb, kfleet__task, Kfleet__Task, kf_store_task_cb)
DECODE_CB(sample_cb, kfleet__sample, Kfleet__Sample, kf_store_sample_cb)
DECODE_CB(attempt_cb, kfleet__attempt, Kfleet__Attempt, kf_store_attempt_cb)
DECODE_CB(result_cb, kfleet__result, Kfleet__Result, kf_store_result_cb)
DECODE_CB(agent_cb, kfleet__agent_info, Kfleet__AgentInfo, kf_store_agent_cb)
DECODE_CB(telemetry_cb, kfleet__telemetry, Kfleet__Telemetry, kf_store_telemetry_cb)

int kf_store_foreach_sweep(kf_txn *t, kf_store_sweep_cb cb, void *ctx)
{
    struct sweep_cb_ctx x = {cb, ctx};
    return store_walk(t, DB_SWEEPS, NULL, 0, sweep_cb, &x);
}

int kf_store_foreach_task(kf_txn *t, uint32_t sweep_id, kf_store_task_cb cb, void *ctx)
{
    uint8_t p[4];
    be32(p, sweep_id);
    struct task_cb_ctx x = {cb, ctx};
    return store_walk(t, DB_TASKS, p, 4, task_cb, &x);
}

struct open_ctx {
    kf_store_task_cb cb;
    void *ctx;
};

static int open_task_cb(void *c, const Kfleet__Task *task)
{
    struct open_ctx *x = c;
    return kf_state_terminal(task->state) ? 0 : x->cb(x->ctx, task);
}

int kf_store_foreach_open_task(kf_txn *t, kf_store_task_cb cb, void *ctx)
{
    struct open_ctx oc = {cb, ctx};
    struct task_cb_ctx x = {open_task_cb, &oc};
    return store_walk(t, DB_TASKS, NULL, 0, task_cb, &x);
}

int kf_store_foreach_sample(kf_txn *t, uint64_t task_id, uint32_t attempt, kf_store_sample_cb cb,
                            void *ctx)
{
    uint8_t p[12];
    be64(p, task_id);
    be32(p + 8, attempt);
    struct sample_cb_ctx x = {cb, ctx};
    return store_walk(t, DB_SAMPLES, p, 12, sample_cb, &x);
}

int kf_store_foreach_telemetry(kf_txn *t, uint64_t task_id, uint32_t attempt,
                               kf_store_telemetry_cb cb, void *ctx)
{
    uint8_t p[12];
    be64(p, task_id);
    be32(p + 8, attempt);
    struct telemetry_cb_ctx x = {cb, ctx};
    return store_walk(t, DB_TELEMETRY, p, 12, telemetry_cb, &x);
}

int kf_store_foreach_attempt(kf_txn *t, uint64_t task_id, kf_store_attempt_cb cb, void *ctx)
{
    uint8_t p[8];
    be64(p, task_id);
    struct attempt_cb_ctx x = {cb, ctx};
    return store_walk(t, DB_ATTEMPTS, p, 8, attempt_cb, &x);
}

int kf_store_foreach_late(kf_txn *t, uint64_t task_id, kf_store_result_cb cb, void *ctx)
{
    uint8_t p[8];
    be64(p, task_id);
    struct result_cb_ctx x = {cb, ctx};
    return store_walk(t, DB_LATE, p, 8, result_cb, &x);
}

int kf_store_foreach_agent(kf_txn *t, kf_store_agent_cb cb, void *ctx)
{
    struct agent_cb_ctx x = {cb, ctx};
    return store_walk(t, DB_AGENTS, NULL, 0, agent_cb, &x);
}

static int count_cb(void *ctx, const MDB_val *k, const MDB_val *v)
{
    (void)k;
    (void)v;
    (*(uint32_t *)ctx)++;
    return 0;
}

int kf_store_count_samples(kf_txn *t, uint64_t task_id, uint32_t attempt, uint32_t *n)
{
    uint8_t p[12];
    be64(p, task_id);
    be32(p + 8, attempt);
    *n = 0;
    return store_walk(t, DB_SAMPLES, p, 12, count_cb, n);
}
