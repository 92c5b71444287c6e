/* seal — see seal.h: the seals' key and their check. A seal is put by
 * store.c, in the transaction that puts its record (store_int.h); this
 * file reads them back. */
#include "core/seal.h"
#include "core/store_int.h"

#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* 1: the stored seal of slot is want, 0: another, -1: none. */
static int seal_is(kf_txn *t, const uint8_t *slot, size_t len, const uint8_t want[SEAL_LEN])
{
    MDB_val k = {len, (void *)slot}, got;
    if (mdb_get(t->txn, t->s->dbi[DB_SEALS], &k, &got) != 0 || got.mv_size != SEAL_LEN)
        return -1;
    return sodium_memcmp(want, got.mv_data, SEAL_LEN) == 0;
}

#define SEALED_SINCE "sealed_since"
#define RUNS_SINCE "seal_runs_since"

int kf_seal_key(kf_store *s, const char *secret_z85, kf_err *err)
{
    static const char ctx[] = "kfleet store seals v1";
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, sizeof s->seal_key);
    crypto_generichash_update(&st, (const unsigned char *)ctx, sizeof ctx);
    crypto_generichash_update(&st, (const unsigned char *)secret_z85, strlen(secret_z85));
    crypto_generichash_final(&st, s->seal_key, sizeof s->seal_key);
    crypto_generichash_init(&st, s->seal_key, sizeof s->seal_key, SEAL_LEN);
    memcpy(s->seal_init, &st, sizeof st);
    s->sealing = 1;
    /* A store sealed before runs keeps its samples' per-sample seals; its
     * runs start at the next sweep a writer creates. */
    s->runs_since = UINT32_MAX;
    MDB_txn *txn;
    int rc = mdb_txn_begin(s->env, NULL, s->readonly ? MDB_RDONLY : 0, &txn);
    if (rc)
        return kf_err_set(err, kf_store_map_rc(rc), "cannot seal the store: %s", mdb_strerror(rc));
    MDB_val rk = {sizeof RUNS_SINCE - 1, (void *)RUNS_SINCE}, v;
    if (mdb_get(txn, s->dbi[DB_META], &rk, &v) == 0 && v.mv_size == 4)
        s->runs_since = rd32(v.mv_data);
    if (s->readonly) {
        mdb_txn_abort(txn);
        return KF_OK;
    }
    /* From the next sweep on, everything is sealed, its samples by runs. */
    MDB_val nk = {10, (void *)"next_sweep"};
    uint8_t buf[4];
    be32(buf, 1);
    if (mdb_get(txn, s->dbi[DB_META], &nk, &v) == 0 && v.mv_size == 4)
        memcpy(buf, v.mv_data, 4);
    MDB_val k = {sizeof SEALED_SINCE - 1, (void *)SEALED_SINCE}, nv = {4, buf};
    if ((rc = mdb_get(txn, s->dbi[DB_META], &k, &v)) == MDB_NOTFOUND)
        rc = mdb_put(txn, s->dbi[DB_META], &k, &nv, 0);
    if (!rc && s->runs_since == UINT32_MAX &&
        (rc = mdb_put(txn, s->dbi[DB_META], &rk, &nv, 0)) == 0)
        s->runs_since = rd32(buf);
    if (rc) {
        mdb_txn_abort(txn);
        return kf_err_set(err, kf_store_map_rc(rc), "cannot seal the store: %s", mdb_strerror(rc));
    }
    if ((rc = mdb_txn_commit(txn)))
        return kf_err_set(err, kf_store_map_rc(rc), "cannot seal the store: %s", mdb_strerror(rc));
    return KF_OK;
}

struct seal_walk {
    const kf_store *s;
    uint8_t acc[SEAL_LEN];
    uint32_t n;
    int count_only; /* sealed by runs: the samples are only counted here */
};

static int seal_sample_cb(void *c, const MDB_val *k, const MDB_val *v)
{
    struct seal_walk *w = c;
    if (w->count_only) {
        w->n++;
        return 0;
    }
    uint8_t mac[SEAL_LEN];
    store_seal_mac(w->s, DB_SAMPLES, k, v, mac);
    for (int i = 0; i < SEAL_LEN; i++)
        w->acc[i] ^= mac[i];
    w->n++;
    return 0;
}

/* One verdict into *out: ok adds n checked, else changed or unsealed. */
static void tally(kf_seal_count *out, int verdict, uint32_t n, int *bad)
{
    if (verdict == 1) {
        out->checked += n;
        return;
    }
    *bad = verdict == 0 ? 1 : 2;
    if (verdict == 0)
        out->changed++;
    else
        out->unsealed++;
}

/* The runs of the attempt with key ak (12 bytes) against its samples:
 * each run's MAC recomputed from the samples lo..hi it names into acc
 * (the XOR of them all); *bad when a run's samples are missing or its MAC
 * is not the one stored; *covered the samples the runs name. 0, or an
 * LMDB error. */
static int check_runs(kf_txn *t, const uint8_t ak[12], uint8_t acc[SEAL_LEN], uint32_t *covered,
                      int *bad)
{
    uint8_t pre[13];
    pre[0] = RUN_TAG;
    memcpy(pre + 1, ak, 12);
    MDB_cursor *c;
    int rc = mdb_cursor_open(t->txn, t->s->dbi[DB_SEALS], &c);
    if (rc)
        return rc;
    MDB_val ck = {sizeof pre, pre}, cv;
    for (rc = mdb_cursor_get(c, &ck, &cv, MDB_SET_RANGE);
         rc == 0 && ck.mv_size >= sizeof pre && memcmp(ck.mv_data, pre, sizeof pre) == 0;
         rc = mdb_cursor_get(c, &ck, &cv, MDB_NEXT)) {
        const uint8_t *slot = ck.mv_data;
        uint32_t lo = ck.mv_size == RUN_SLOT_LEN ? rd32(slot + 13) : 1,
                 hi = ck.mv_size == RUN_SLOT_LEN ? rd32(slot + 17) : 0;
        if (hi < lo || cv.mv_size != SEAL_LEN) {
            *bad = 1;
            continue;
        }
        store_run run;
        store_run_begin(t->s, &run, ak, lo);
        uint8_t sk[16];
        memcpy(sk, ak, 12);
        for (uint32_t seq = lo; !*bad; seq++) {
            be32(sk + 12, seq);
            MDB_val k = {16, sk}, v;
            if (mdb_get(t->txn, t->s->dbi[DB_SAMPLES], &k, &v) != 0)
                *bad = 1; /* a sample of the run is gone */
            else
                store_run_add(&run, &v);
            if (seq == hi)
                break;
        }
        uint8_t mac[SEAL_LEN];
        store_run_end(&run, ak, mac, NULL);
        if (sodium_memcmp(mac, cv.mv_data, SEAL_LEN) != 0)
            *bad = 1;
        for (int i = 0; i < SEAL_LEN; i++)
            acc[i] ^= mac[i];
        *covered += hi - lo + 1;
    }
    mdb_cursor_close(c);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

int kf_seal_check(kf_txn *t, uint64_t task_id, uint32_t attempt, kf_seal_count *out)
{
    if (!t->s->sealing)
        return KF_EINVAL;
    MDB_val k = {sizeof SEALED_SINCE - 1, (void *)SEALED_SINCE}, v;
    if (!t->s->has_seals || mdb_get(t->txn, t->s->dbi[DB_META], &k, &v) != 0 || v.mv_size != 4 ||
        kf_task_sweep(task_id) < rd32(v.mv_data))
        return KF_ENOTFOUND;
    uint8_t key[16], slot[32], mac[SEAL_LEN];
    be64(key, task_id);
    MDB_val rk = {8, key}, rv;
    if (mdb_get(t->txn, t->s->dbi[DB_RESULTS], &rk, &rv) == 0) {
        store_seal_mac(t->s, DB_RESULTS, &rk, &rv, mac);
        size_t n = store_seal_slot(DB_RESULTS, key, 8, slot);
        tally(out, seal_is(t, slot, n, mac), 1, &out->result_bad);
    }
    be32(key + 8, attempt);
    struct seal_walk w = {t->s, {0}, 0, kf_task_sweep(task_id) >= t->s->runs_since};
    MDB_cursor *c;
    int rc = mdb_cursor_open(t->txn, t->s->dbi[DB_SAMPLES], &c);
    if (rc)
        return kf_store_map_rc(rc);
    MDB_val ck = {12, key}, cv;
    for (rc = mdb_cursor_get(c, &ck, &cv, MDB_SET_RANGE);
         rc == 0 && ck.mv_size == 16 && memcmp(ck.mv_data, key, 12) == 0;
         rc = mdb_cursor_get(c, &ck, &cv, MDB_NEXT))
        seal_sample_cb(&w, &ck, &cv);
    mdb_cursor_close(c);
    if (rc != 0 && rc != MDB_NOTFOUND)
        return kf_store_map_rc(rc);
    size_t n = store_seal_slot(DB_SAMPLES, key, 12, slot);
    if (kf_task_sweep(task_id) >= t->s->runs_since) {
        /* Sealed by runs: the attempt's seal is its runs' MACs' XOR, each
         * run's recomputed from the samples it names, and every sample is
         * in one (an added one is in none; a run record removed or changed
         * leaves the XOR or its own MAC wrong). */
        uint32_t covered = 0;
        int bad = 0;
        if ((rc = check_runs(t, key, w.acc, &covered, &bad)))
            return kf_store_map_rc(rc);
        int verdict = seal_is(t, slot, n, w.acc);
        if (verdict == 1 && (bad || covered != w.n))
            verdict = 0;
        if (verdict != -1 || w.n > 0)
            tally(out, verdict, w.n, &out->samples_bad);
        return KF_OK;
    }
    int verdict = seal_is(t, slot, n, w.acc);
    if (verdict != -1 || w.n > 0) /* no samples and no seal: nothing to judge */
        tally(out, verdict, w.n, &out->samples_bad);
    return KF_OK;
}
