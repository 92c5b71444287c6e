/* test_seal — the seals of samples stored a batch at a time
 * (kf_store_put_samples): sealed by runs of consecutive seqs, resent
 * samples neither stored again nor folded in twice; a sample changed,
 * removed or added, or a run's seal removed, found; a store sealed before
 * runs sealing its sweeps sample by sample as before (one seal update per
 * batch, the same seal as one per sample). test_store's test_seals covers
 * what a rewritten record does to them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/store.h"
#include "core/seal.h"

#include <ftw.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char dir[64];

static int rm_cb(const char *p, const struct stat *s, int f, struct FTW *w)
{
    (void)s;
    (void)f;
    (void)w;
    return remove(p);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/kf-test-seal.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

/* Stores the samples seq[0..n) of (task, attempt 1) as one batch, in a
 * transaction of their own; returns how many were already stored. */
static size_t put_batch(kf_store *s, uint64_t task, const uint32_t *seq, size_t n)
{
    kf_err err;
    kf_txn *t = NULL;
    assert_int_equal(kf_store_begin(s, 0, &t, &err), 0);
    Kfleet__Sample smp[16], *ptr[16];
    assert_true(n <= 16);
    for (size_t i = 0; i < n; i++) {
        kfleet__sample__init(&smp[i]);
        smp[i].seq = seq[i];
        smp[i].seconds = 1e-3 * (seq[i] + 1);
        ptr[i] = &smp[i];
    }
    size_t dups = 99;
    assert_int_equal(kf_store_put_samples(t, task, 1, (const Kfleet__Sample *const *)ptr, n, &dups),
                     0);
    assert_int_equal(kf_store_commit(&t, &err), 0);
    return dups;
}

static int count_sample(void *ctx, const Kfleet__Sample *smp)
{
    (void)smp;
    (*(size_t *)ctx)++;
    return 0;
}

static kf_seal_count check(kf_store *s, uint64_t task, size_t *stored)
{
    kf_err err;
    kf_txn *t = NULL;
    kf_seal_count sc = {0, 0, 0, 0, 0};
    assert_int_equal(kf_store_begin(s, 1, &t, &err), 0);
    assert_int_equal(kf_seal_check(t, task, 1, &sc), 0);
    *stored = 0;
    assert_int_equal(kf_store_foreach_sample(t, task, 1, count_sample, stored), 0);
    kf_store_abort(&t);
    return sc;
}

/* Two batches, the second a resend overlapping the first (seq 4 and 5)
 * and holding one sample twice (9): ten samples stored, their one seal
 * matching, as kfleet verify recomputes it sample by sample. */
static void test_batches_sealed_once(void **state)
{
    (void)state;
    kf_err err;
    kf_store *s = NULL;
    assert_int_equal(kf_store_open(dir, 0, &s, &err), 0);
    assert_int_equal(kf_seal_key(s, "secret-one", &err), 0);
    uint64_t task = kf_task_id(1, 0);
    const uint32_t a[] = {0, 1, 2, 3, 4, 5};
    const uint32_t b[] = {4, 5, 6, 7, 8, 9, 9};
    assert_int_equal(put_batch(s, task, a, 6), 0);
    assert_int_equal(put_batch(s, task, b, 7), 3);
    size_t stored;
    kf_seal_count sc = check(s, task, &stored);
    assert_int_equal(stored, 10);
    assert_int_equal(sc.checked, 10);
    assert_int_equal(sc.changed + sc.unsealed, 0);
    /* A resend of everything changes nothing. */
    const uint32_t all[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    assert_int_equal(put_batch(s, task, all, 10), 10);
    sc = check(s, task, &stored);
    assert_int_equal(sc.checked, 10);
    assert_int_equal(sc.changed + sc.unsealed, 0);
    kf_store_close(&s);
}

/* Every record of the seals table of the store in d, keys and values one
 * after the other, into out (at most cap bytes); returns the length. */
static size_t seals_of(const char *d, uint8_t *out, size_t cap)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *c;
    assert_int_equal(mdb_env_create(&env), 0);
    assert_int_equal(mdb_env_set_maxdbs(env, 32), 0);
    assert_int_equal(mdb_env_open(env, d, MDB_RDONLY, 0600), 0);
    assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
    assert_int_equal(mdb_dbi_open(txn, "seals", 0, &dbi), 0);
    assert_int_equal(mdb_cursor_open(txn, dbi, &c), 0);
    MDB_val k, v;
    size_t n = 0;
    for (int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        assert_true(n + k.mv_size + v.mv_size <= cap);
        memcpy(out + n, k.mv_data, k.mv_size);
        n += k.mv_size;
        memcpy(out + n, v.mv_data, v.mv_size);
        n += v.mv_size;
    }
    mdb_cursor_close(c);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return n;
}

/* Puts (val) or deletes (val NULL) the record key of table `table` in the
 * store in d, through liblmdb as anyone without the key could. */
static void lmdb_edit(const char *d, const char *table, const void *key, size_t klen,
                      const void *val, size_t vlen)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    assert_int_equal(mdb_env_create(&env), 0);
    assert_int_equal(mdb_env_set_maxdbs(env, 32), 0);
    assert_int_equal(mdb_env_open(env, d, 0, 0600), 0);
    assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
    assert_int_equal(mdb_dbi_open(txn, table, 0, &dbi), 0);
    MDB_val k = {klen, (void *)key}, v = {vlen, (void *)val};
    assert_int_equal(val ? mdb_put(txn, dbi, &k, &v, 0) : mdb_del(txn, dbi, &k, NULL), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
}

/* The record key of table `table` of the store in d into out (its
 * length), or 0 when there is none. */
static size_t lmdb_get(const char *d, const char *table, const void *key, size_t klen, uint8_t *out,
                       size_t cap)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    assert_int_equal(mdb_env_create(&env), 0);
    assert_int_equal(mdb_env_set_maxdbs(env, 32), 0);
    assert_int_equal(mdb_env_open(env, d, MDB_RDONLY, 0600), 0);
    assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
    assert_int_equal(mdb_dbi_open(txn, table, 0, &dbi), 0);
    MDB_val k = {klen, (void *)key}, v;
    size_t n = 0;
    if (mdb_get(txn, dbi, &k, &v) == 0) {
        assert_true(v.mv_size <= cap);
        memcpy(out, v.mv_data, v.mv_size);
        n = v.mv_size;
    }
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return n;
}

static void sample_key(uint64_t task, uint32_t seq, uint8_t k[16])
{
    for (int i = 0; i < 8; i++)
        k[i] = (uint8_t)(task >> (56 - 8 * i));
    const uint8_t rest[8] = {
        0, 0, 0, 1, (uint8_t)(seq >> 24), (uint8_t)(seq >> 16), (uint8_t)(seq >> 8), (uint8_t)seq};
    memcpy(k + 8, rest, 8);
}

/* The seals of store d against its samples of (task, attempt 1). */
static kf_seal_count check_dir(const char *d, uint64_t task, size_t *stored)
{
    kf_err err;
    kf_store *s = NULL;
    assert_int_equal(kf_store_open(d, 1, &s, &err), 0);
    assert_int_equal(kf_seal_key(s, "secret-one", &err), 0);
    kf_seal_count sc = check(s, task, stored);
    kf_store_close(&s);
    return sc;
}

/* Samples 0..11 sealed by runs in batches of four (the second with a gap:
 * 4, 5, 7, then 6), each then damaged through liblmdb in turn: a sample's
 * byte changed, a sample removed, a sample added, a run's seal removed,
 * each found as changed; put back, the store checks again. */
static void test_runs_find_damage(void **state)
{
    (void)state;
    kf_err err;
    kf_store *s = NULL;
    uint64_t task = kf_task_id(1, 0);
    assert_int_equal(kf_store_open(dir, 0, &s, &err), 0);
    assert_int_equal(kf_seal_key(s, "secret-one", &err), 0);
    const uint32_t a[] = {0, 1, 2, 3}, b[] = {4, 5, 7, 6}, c[] = {8, 9, 10, 11};
    assert_int_equal(put_batch(s, task, a, 4), 0);
    assert_int_equal(put_batch(s, task, b, 4), 0);
    assert_int_equal(put_batch(s, task, c, 4), 0);
    kf_store_close(&s);
    size_t stored;
    kf_seal_count sc = check_dir(dir, task, &stored);
    assert_int_equal(stored, 12);
    assert_int_equal(sc.checked, 12);
    assert_int_equal(sc.changed + sc.unsealed, 0);
    /* Runs, not one seal a sample: 0-3, 4-5, 7, 6, 8-11 and the attempt's. */
    uint8_t all[8192];
    size_t nall = seals_of(dir, all, sizeof all);
    assert_int_equal(nall, 5 * (21 + 16) + (13 + 16));

    uint8_t k[16], old[256];
    sample_key(task, 5, k);
    size_t n = lmdb_get(dir, "samples", k, 16, old, sizeof old);
    assert_true(n > 0);
    uint8_t changed[256];
    memcpy(changed, old, n);
    changed[n - 1] ^= 0x01; /* the seconds' last byte */
    lmdb_edit(dir, "samples", k, 16, changed, n);
    sc = check_dir(dir, task, &stored);
    assert_int_equal(sc.changed, 1);
    assert_int_equal(sc.samples_bad, 1);
    lmdb_edit(dir, "samples", k, 16, NULL, 0); /* removed */
    sc = check_dir(dir, task, &stored);
    assert_int_equal(stored, 11);
    assert_int_equal(sc.changed, 1);
    lmdb_edit(dir, "samples", k, 16, old, n); /* put back */
    sc = check_dir(dir, task, &stored);
    assert_int_equal(sc.checked, 12);
    assert_int_equal(sc.changed + sc.unsealed, 0);

    uint8_t k12[16];
    sample_key(task, 12, k12); /* added after the last run */
    lmdb_edit(dir, "samples", k12, 16, old, n);
    sc = check_dir(dir, task, &stored);
    assert_int_equal(stored, 13);
    assert_int_equal(sc.changed, 1);
    lmdb_edit(dir, "samples", k12, 16, NULL, 0);

    uint8_t run[21] = {0xF0}, mac[64];
    memcpy(run + 1, k, 12);
    const uint8_t lohi[8] = {0, 0, 0, 8, 0, 0, 0, 11};
    memcpy(run + 13, lohi, 8);
    size_t m = lmdb_get(dir, "seals", run, 21, mac, sizeof mac);
    assert_int_equal(m, 16);
    lmdb_edit(dir, "seals", run, 21, NULL, 0); /* the run 8-11's seal removed */
    sc = check_dir(dir, task, &stored);
    assert_int_equal(sc.changed, 1);
    lmdb_edit(dir, "seals", run, 21, mac, m);
    sc = check_dir(dir, task, &stored);
    assert_int_equal(sc.checked, 12);
    assert_int_equal(sc.changed + sc.unsealed, 0);
}

/* A store sealed before runs (its meta names a later first sweep for
 * them): the same samples stored one at a time in one such store and as
 * one batch in another (same key, same task) seal sample by sample, the
 * two seals tables byte for byte the same, so a store written before
 * batches checks as it did. */
static void test_batch_seal_is_per_sample_seal(void **state)
{
    (void)state;
    kf_err err;
    char other[80];
    snprintf(other, sizeof other, "%s/other", dir);
    assert_int_equal(mkdir(other, 0700), 0);
    uint64_t task = kf_task_id(1, 0);
    const uint32_t seq[] = {3, 1, 4, 0, 5, 9, 2, 6};
    const uint8_t later[4] = {0, 0, 0, 100};
    kf_store *s = NULL;
    assert_int_equal(kf_store_open(other, 0, &s, &err), 0);
    kf_store_close(&s);
    lmdb_edit(other, "meta", "seal_runs_since", 15, later, 4);
    assert_int_equal(kf_store_open(other, 0, &s, &err), 0);
    assert_int_equal(kf_seal_key(s, "secret-one", &err), 0);
    for (size_t i = 0; i < 8; i++) {
        kf_txn *t = NULL;
        int dup = 1;
        Kfleet__Sample smp = KFLEET__SAMPLE__INIT;
        smp.seq = seq[i];
        smp.seconds = 1e-3 * (seq[i] + 1);
        assert_int_equal(kf_store_begin(s, 0, &t, &err), 0);
        assert_int_equal(kf_store_put_sample(t, task, 1, &smp, &dup), 0);
        assert_int_equal(dup, 0);
        assert_int_equal(kf_store_commit(&t, &err), 0);
    }
    kf_store_close(&s);
    char batched[80];
    snprintf(batched, sizeof batched, "%s/batched", dir);
    assert_int_equal(mkdir(batched, 0700), 0);
    assert_int_equal(kf_store_open(batched, 0, &s, &err), 0);
    kf_store_close(&s);
    lmdb_edit(batched, "meta", "seal_runs_since", 15, later, 4);
    assert_int_equal(kf_store_open(batched, 0, &s, &err), 0);
    assert_int_equal(kf_seal_key(s, "secret-one", &err), 0);
    assert_int_equal(put_batch(s, task, seq, 8), 0);
    kf_store_close(&s);
    uint8_t a[4096], b[4096];
    size_t na = seals_of(other, a, sizeof a), nb = seals_of(batched, b, sizeof b);
    assert_int_equal(na, 13 + 16); /* one seal, the attempt's: no runs */
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na);
    size_t stored;
    kf_seal_count sc = check_dir(other, task, &stored);
    assert_int_equal(sc.checked, 8);
    assert_int_equal(sc.changed + sc.unsealed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_batches_sealed_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_seal_is_per_sample_seal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_runs_find_damage, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
