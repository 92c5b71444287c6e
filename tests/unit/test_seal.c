/* test_seal — the seals of samples stored a batch at a time
 * (kf_store_put_samples): one seal update per batch, the same seal as one
 * per sample, resent samples neither stored again nor folded in twice.
 * test_store's test_seals covers what a rewritten record does to them. */
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

/* The same samples stored one at a time in one store and as one batch in
 * another (same key, same task): the two seals tables are byte for byte
 * the same, so a store written before batches checks as it did. */
static void test_batch_seal_is_per_sample_seal(void **state)
{
    (void)state;
    kf_err err;
    char other[80];
    snprintf(other, sizeof other, "%s/other", dir);
    assert_int_equal(mkdir(other, 0700), 0);
    uint64_t task = kf_task_id(1, 0);
    const uint32_t seq[] = {3, 1, 4, 0, 5, 9, 2, 6};
    kf_store *s = NULL;
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
    assert_int_equal(kf_seal_key(s, "secret-one", &err), 0);
    assert_int_equal(put_batch(s, task, seq, 8), 0);
    kf_store_close(&s);
    uint8_t a[4096], b[4096];
    size_t na = seals_of(other, a, sizeof a), nb = seals_of(batched, b, sizeof b);
    assert_true(na > 16);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_batches_sealed_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_seal_is_per_sample_seal, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
