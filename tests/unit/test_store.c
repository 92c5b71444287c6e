/* Tests for coordinator/core/store.c: records round-trip, duplicates are refused by
 * key, range scans stay within their prefix, the map grows, a batch that
 * overflows the map fails whole and names the cause, and a reader in
 * another environment handle sees committed data. And the damage checks
 * (store_check.c, pagecheck.c, issue 44): a store whose pages were
 * scribbled on is refused at open with what, where and what to do, and
 * kfleet verify --store's check lists every problem, records included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/store.h"
#include "core/seal.h"

#include <lmdb.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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
    snprintf(dir, sizeof dir, "/tmp/kf-test-store.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

static int count_task(void *ctx, const Kfleet__Task *t)
{
    (void)t;
    (*(int *)ctx)++;
    return 0;
}

static int sum_seq(void *ctx, const Kfleet__Sample *s)
{
    *(uint32_t *)ctx += s->seq;
    return 0;
}

/* Sums the SM clocks of the readings, checking they come in seq order. */
static int sum_clock(void *ctx, const Kfleet__Telemetry *r)
{
    uint32_t *x = ctx; /* x[0]: clock sum, x[1]: next expected seq */
    assert_int_equal(r->seq, x[1]);
    x[1]++;
    x[0] += r->sm_clock_mhz;
    return 0;
}

static void test_records(void **state)
{
    (void)state;
    kf_err err;
    kf_store *s = NULL;
    assert_int_equal(kf_store_open(dir, 0, &s, &err), 0);
    kf_txn *t = NULL;
    assert_int_equal(kf_store_begin(s, 0, &t, &err), 0);
    uint32_t id1, id2;
    assert_int_equal(kf_store_next_sweep_id(t, &id1), 0);
    assert_int_equal(kf_store_next_sweep_id(t, &id2), 0);
    assert_int_equal(id2, id1 + 1);
    Kfleet__Sweep sw = KFLEET__SWEEP__INIT;
    sw.sweep_id = id2;
    sw.name = "s";
    assert_int_equal(kf_store_put_sweep(t, &sw), 0);
    /* Tasks of sweep id2 and of a neighbour sweep: the scan must not leak. */
    for (uint32_t i = 0; i < 5; i++) {
        Kfleet__Task task = KFLEET__TASK__INIT;
        task.task_id = kf_task_id(id2, i);
        task.state = i < 3 ? KFLEET__TASK_STATE__SUCCEEDED : KFLEET__TASK_STATE__PENDING;
        assert_int_equal(kf_store_put_task(t, &task), 0);
        task.task_id = kf_task_id(id2 + 1, i);
        assert_int_equal(kf_store_put_task(t, &task), 0);
    }
    Kfleet__Result r = KFLEET__RESULT__INIT;
    r.task_id = kf_task_id(id2, 0);
    r.state = KFLEET__TASK_STATE__SUCCEEDED;
    int dup = -1;
    assert_int_equal(kf_store_put_result(t, &r, &dup), 0);
    assert_int_equal(dup, 0);
    r.attempt = 2;
    assert_int_equal(kf_store_put_result(t, &r, &dup), 0);
    assert_int_equal(dup, 1);
    for (uint32_t q = 0; q < 10; q++) {
        Kfleet__Sample smp = KFLEET__SAMPLE__INIT;
        smp.seq = q;
        smp.seconds = 1e-3 * q;
        assert_int_equal(kf_store_put_sample(t, r.task_id, 1, &smp, &dup), 0);
        assert_int_equal(dup, 0);
    }
    for (uint32_t q = 0; q < 3; q++) {
        Kfleet__Telemetry tel = KFLEET__TELEMETRY__INIT;
        tel.seq = q;
        tel.sm_clock_mhz = 1000 + q;
        tel.throttled = q == 2;
        assert_int_equal(kf_store_put_telemetry(t, r.task_id, 1, &tel, &dup), 0);
        assert_int_equal(dup, 0);
    }
    Kfleet__Telemetry tel_again = KFLEET__TELEMETRY__INIT;
    tel_again.seq = 1;
    tel_again.sm_clock_mhz = 9999; /* a resend must not replace the stored reading */
    assert_int_equal(kf_store_put_telemetry(t, r.task_id, 1, &tel_again, &dup), 0);
    assert_int_equal(dup, 1);
    Kfleet__Sample again = KFLEET__SAMPLE__INIT;
    again.seq = 4;
    assert_int_equal(kf_store_put_sample(t, r.task_id, 1, &again, &dup), 0);
    assert_int_equal(dup, 1);
    assert_int_equal(kf_store_commit(&t, &err), 0);
    assert_null(t);

    /* A second, read-only handle (as `kfleet report` opens it) sees it all. */
    kf_store *ro = NULL;
    assert_int_equal(kf_store_open(dir, 1, &ro, &err), 0);
    assert_int_equal(kf_store_begin(ro, 1, &t, &err), 0);
    int n = 0;
    assert_int_equal(kf_store_foreach_task(t, id2, count_task, &n), 0);
    assert_int_equal(n, 5);
    n = 0;
    assert_int_equal(kf_store_foreach_open_task(t, count_task, &n), 0);
    assert_int_equal(n, 4); /* 2 pending in each sweep */
    Kfleet__Result *got = NULL;
    assert_int_equal(kf_store_get_result(t, r.task_id, &got), 0);
    assert_int_equal(got->attempt, 0); /* the first one stayed */
    kfleet__result__free_unpacked(got, NULL);
    uint32_t cnt = 0, seqsum = 0;
    assert_int_equal(kf_store_count_samples(t, r.task_id, 1, &cnt), 0);
    assert_int_equal(cnt, 10);
    assert_int_equal(kf_store_foreach_sample(t, r.task_id, 1, sum_seq, &seqsum), 0);
    assert_int_equal(seqsum, 45);
    assert_int_equal(kf_store_count_samples(t, r.task_id, 2, &cnt), 0);
    assert_int_equal(cnt, 0);
    uint32_t tel_sum[2] = {0, 0};
    assert_int_equal(kf_store_foreach_telemetry(t, r.task_id, 1, sum_clock, tel_sum), 0);
    assert_int_equal(tel_sum[1], 3);
    assert_int_equal(tel_sum[0], 1000 + 1001 + 1002);
    uint32_t latest = 0;
    assert_int_equal(kf_store_latest_sweep_id(t, &latest), 0);
    assert_int_equal(latest, id2);
    Kfleet__Task *missing = NULL;
    assert_int_equal(kf_store_get_task(t, kf_task_id(id2, 99), &missing), KF_ENOTFOUND);
    assert_null(missing);
    kf_store_abort(&t);
    kf_store_close(&ro);
    kf_store_close(&s);
    assert_null(s);
}

static void test_grow(void **state)
{
    (void)state;
    kf_err err;
    kf_store *s = NULL;
    assert_int_equal(kf_store_open(dir, 0, &s, &err), 0);
    size_t before = kf_store_map_size(s);
    assert_int_equal(kf_store_grow(s, &err), 0);
    assert_int_equal(kf_store_map_size(s), before * 2);
    assert_true(kf_store_used(s) > 0);
    kf_store_close(&s);
}

/* A batch that outgrows a tiny map: the put reports KF_EFULL, the commit
 * names the map as the cause (not LMDB's bare "invalid transaction" that
 * every later call gets), what was committed before is intact, and after
 * kf_store_grow the same batch fits. */
static void test_map_full(void **state)
{
    (void)state;
    kf_err err;
    kf_store *s = NULL;
    setenv("KF_STORE_MAP_SIZE", "131072", 1);
    int rc = kf_store_open(dir, 0, &s, &err);
    unsetenv("KF_STORE_MAP_SIZE");
    assert_int_equal(rc, 0);
    assert_int_equal(kf_store_map_size(s), 131072);

    Kfleet__Sample sm = KFLEET__SAMPLE__INIT;
    kf_txn *t = NULL;
    int dup = 0;
    assert_int_equal(kf_store_begin(s, 0, &t, &err), 0);
    sm.seq = 0;
    assert_int_equal(kf_store_put_sample(t, 7, 1, &sm, &dup), 0);
    assert_int_equal(kf_store_commit(&t, &err), 0);

    assert_int_equal(kf_store_begin(s, 0, &t, &err), 0);
    rc = 0;
    uint32_t n;
    for (n = 1; n < 100000 && rc == 0; n++) {
        sm.seq = n;
        sm.seconds = n;
        rc = kf_store_put_sample(t, 8, 1, &sm, &dup);
    }
    assert_int_equal(rc, KF_EFULL);
    sm.seq = n + 1;
    kf_store_put_sample(t, 8, 1, &sm, &dup); /* refused by LMDB: the txn is dead */
    assert_int_equal(kf_store_commit(&t, &err), KF_EFULL);
    assert_null(t);
    assert_non_null(strstr(err.msg, "map is full"));

    uint32_t count = 0;
    assert_int_equal(kf_store_begin(s, 1, &t, &err), 0);
    assert_int_equal(kf_store_count_samples(t, 7, 1, &count), 0);
    assert_int_equal(count, 1);
    assert_int_equal(kf_store_count_samples(t, 8, 1, &count), 0);
    assert_int_equal(count, 0);
    kf_store_abort(&t);

    while (kf_store_map_size(s) < (8u << 20))
        assert_int_equal(kf_store_grow(s, &err), 0);
    assert_int_equal(kf_store_begin(s, 0, &t, &err), 0);
    for (uint32_t i = 1; i < n; i++) {
        sm.seq = i;
        assert_int_equal(kf_store_put_sample(t, 8, 1, &sm, &dup), 0);
    }
    assert_int_equal(kf_store_commit(&t, &err), 0);
    kf_store_close(&s);
}

static void test_readonly_missing(void **state)
{
    (void)state;
    kf_err err;
    kf_store *s = NULL;
    assert_int_not_equal(kf_store_open("/nonexistent/kfleet/store", 1, &s, &err), 0);
    assert_null(s);
    assert_non_null(strstr(err.msg, "/nonexistent/kfleet/store"));
}

/* A store whose data file lost its second half (a bad copy, a full disk
 * mid-truncate) or all of it is refused with a message naming the file and
 * what to do: never SIGBUS at the first read past the end, never taken for
 * a new store that reuses sweep ids. */
static void test_damaged_refused(void **state)
{
    (void)state;
    kf_err err;
    kf_store *s = NULL;
    assert_int_equal(kf_store_open(dir, 0, &s, &err), 0);
    kf_txn *t = NULL;
    assert_int_equal(kf_store_begin(s, 0, &t, &err), 0);
    for (uint32_t i = 0; i < 2000; i++) { /* a few hundred KiB of records */
        Kfleet__Task task = KFLEET__TASK__INIT;
        task.task_id = kf_task_id(1, i);
        task.error = "padding padding padding padding padding padding padding padding";
        assert_int_equal(kf_store_put_task(t, &task), 0);
    }
    assert_int_equal(kf_store_commit(&t, &err), 0);
    kf_store_close(&s);

    char path[128];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(truncate(path, st.st_size / 2), 0);
    for (int ro = 0; ro < 2; ro++) {
        kf_err_clear(&err);
        assert_int_equal(kf_store_open(dir, ro, &s, &err), KF_ESTORE);
        assert_null(s);
        assert_non_null(strstr(err.msg, "data.mdb is damaged"));
        assert_non_null(strstr(err.msg, "move the directory aside"));
    }
    assert_int_equal(truncate(path, 0), 0);
    for (int ro = 0; ro < 2; ro++) {
        kf_err_clear(&err);
        assert_int_equal(kf_store_open(dir, ro, &s, &err), KF_ESTORE);
        assert_non_null(strstr(err.msg, "data.mdb is empty"));
    }
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 0); /* refused, not written over as a new store */
}

/* A store read while another process commits to it (kfleet verify or
 * report mid-sweep) is never taken for a damaged one: the file grows
 * between the reader's first look at its size and its read of the meta. */
static void test_read_while_written(void **state)
{
    (void)state;
    kf_err err;
    kf_store *s = NULL;
    assert_int_equal(kf_store_open(dir, 0, &s, &err), 0);
    kf_store_close(&s);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        kf_store *w = NULL;
        if (kf_store_open(dir, 0, &w, &err) != KF_OK)
            _exit(3);
        for (uint32_t c = 0; c < 400; c++) {
            kf_txn *t = NULL;
            if (kf_store_begin(w, 0, &t, &err) != KF_OK)
                _exit(4);
            for (uint32_t i = 0; i < 50; i++) {
                Kfleet__Task task = KFLEET__TASK__INIT;
                task.task_id = kf_task_id(1, c * 50 + i);
                task.error = "padding padding padding padding padding padding padding";
                if (kf_store_put_task(t, &task) != KF_OK)
                    _exit(5);
            }
            if (kf_store_commit(&t, &err) != KF_OK)
                _exit(6);
        }
        kf_store_close(&w);
        _exit(0);
    }
    int opens = 0, status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        kf_store *ro = NULL;
        kf_err_clear(&err);
        int rc = kf_store_open(dir, 1, &ro, &err);
        if (rc == KF_ENOTFOUND) /* before the writer's first commit */
            continue;
        if (rc != KF_OK)
            fail_msg("open %d while written: %s", opens, err.msg);
        kf_store_close(&ro);
        opens++;
    }
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_true(opens > 0);
}

/* liblmdb itself on the test's store, as a program that is not kfleet
 * would use it: the environment, a transaction (read-only when flags has
 * MDB_RDONLY) and table's handle. */
static void raw_open(unsigned flags, const char *table, MDB_env **env, MDB_txn **txn, MDB_dbi *dbi)
{
    assert_int_equal(mdb_env_create(env), 0);
    mdb_env_set_maxdbs(*env, 32);
    assert_int_equal(mdb_env_open(*env, dir, flags, 0600), 0);
    assert_int_equal(mdb_txn_begin(*env, NULL, flags, txn), 0);
    assert_int_equal(mdb_dbi_open(*txn, table, 0, dbi), 0);
}

/* Seals: a sealed store's samples and result check out; samples whose
 * bytes are changed, or one added, through liblmdb afterwards are found;
 * another key finds nothing matching; a store opened without the key says
 * so rather than passing. */
static void test_seals(void **state)
{
    (void)state;
    kf_err err;
    kf_store *s = NULL;
    assert_int_equal(kf_store_open(dir, 0, &s, &err), 0);
    assert_int_equal(kf_seal_key(s, "secret-one", &err), 0);
    kf_txn *t = NULL;
    assert_int_equal(kf_store_begin(s, 0, &t, &err), 0);
    uint32_t id;
    assert_int_equal(kf_store_next_sweep_id(t, &id), 0);
    uint64_t task = kf_task_id(id, 0);
    Kfleet__Result r = KFLEET__RESULT__INIT;
    r.task_id = task;
    r.attempt = 1;
    r.state = KFLEET__TASK_STATE__SUCCEEDED;
    int dup;
    assert_int_equal(kf_store_put_result(t, &r, &dup), 0);
    for (uint32_t q = 0; q < 4; q++) {
        Kfleet__Sample smp = KFLEET__SAMPLE__INIT;
        smp.seq = q;
        smp.seconds = 1e-3 * (q + 1);
        assert_int_equal(kf_store_put_sample(t, task, 1, &smp, &dup), 0);
    }
    assert_int_equal(kf_store_commit(&t, &err), 0);
    kf_seal_count sc = {0, 0, 0, 0, 0};
    assert_int_equal(kf_store_begin(s, 1, &t, &err), 0);
    assert_int_equal(kf_seal_check(t, task, 1, &sc), 0);
    kf_store_abort(&t);
    assert_int_equal(sc.checked, 5);
    assert_int_equal(sc.changed + sc.unsealed, 0);
    kf_store_close(&s);

    /* Sample 2's time rewritten to 1 ns, outside kfleet; and one added. */
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    raw_open(0, "samples", &env, &txn, &dbi);
    uint8_t key[16] = {0};
    for (int i = 0; i < 8; i++)
        key[i] = (uint8_t)(task >> (56 - 8 * i));
    key[11] = 1;
    key[15] = 2;
    Kfleet__Sample fake = KFLEET__SAMPLE__INIT;
    fake.seq = 2;
    fake.seconds = 1e-9;
    uint8_t buf[64];
    MDB_val k = {16, key}, v = {kfleet__sample__pack(&fake, buf), buf};
    assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
    key[15] = 9;
    fake.seq = 9;
    v.mv_size = kfleet__sample__pack(&fake, buf);
    assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);

    assert_int_equal(kf_store_open(dir, 1, &s, &err), 0);
    assert_int_equal(kf_store_begin(s, 1, &t, &err), 0);
    memset(&sc, 0, sizeof sc);
    assert_int_equal(kf_seal_check(t, task, 1, &sc), KF_EINVAL); /* no key: no verdict */
    kf_store_abort(&t);
    assert_int_equal(kf_seal_key(s, "secret-one", &err), 0);
    assert_int_equal(kf_store_begin(s, 1, &t, &err), 0);
    assert_int_equal(kf_seal_check(t, task, 1, &sc), 0);
    kf_store_abort(&t);
    assert_int_equal(sc.checked, 1); /* the result */
    assert_int_equal(sc.changed, 1); /* the samples, sealed together */
    assert_int_equal(sc.result_bad, 0);
    assert_int_equal(sc.samples_bad, 1);
    /* Another key: nothing matches. */
    assert_int_equal(kf_seal_key(s, "secret-two", &err), 0);
    memset(&sc, 0, sizeof sc);
    assert_int_equal(kf_store_begin(s, 1, &t, &err), 0);
    assert_int_equal(kf_seal_check(t, task, 1, &sc), 0);
    kf_store_abort(&t);
    assert_int_equal(sc.checked, 0);
    assert_int_equal(sc.changed, 2);
    assert_int_equal(sc.result_bad, 1);
    kf_store_close(&s);
    /* kfleet verify --store's check finds the same, with the key only. */
    kf_buf problems = KF_BUF_INIT;
    kf_store_check_stats st;
    assert_int_equal(kf_store_check(dir, 1, NULL, 10, &problems, &st, &err), KF_OK);
    assert_int_equal(st.damaged, 0);
    assert_int_equal(st.seals_checked, 0);
    assert_int_equal(kf_store_check(dir, 1, "secret-one", 10, &problems, &st, &err), KF_OK);
    assert_int_equal(st.damaged, 1);
    assert_int_equal(st.sealed, 1);
    assert_non_null(strstr(problems.data, "table 'results': the record with key "));
    assert_non_null(strstr(problems.data, "has samples that were changed, added or removed"));
    kf_buf_release(&problems);
}

/* ---- damage (issue 44) ----
 * The tests write into data.mdb as the issue did, and find the pages to
 * damage the way pagecheck.c reads them: LMDB 0.9's layout on a 64-bit
 * host (a 16-byte page header; the meta's main table record at byte 88,
 * its root at +40; txnid at byte 144; 8-byte nodes). */

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static uint16_t rd16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

static uint8_t *slurp(const char *d, size_t *len)
{
    char path[128];
    snprintf(path, sizeof path, "%s/data.mdb", d);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*len);
    assert_int_equal(fread(b, 1, *len, f), *len);
    fclose(f);
    return b;
}

static void spill(const char *d, const uint8_t *b, size_t len)
{
    char path[128];
    snprintf(path, sizeof path, "%s/data.mdb", d);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, len, f), len);
    fclose(f);
}

/* A store of one sweep, 300 tasks and 30,000 samples (a few hundred
 * pages, a samples tree with branch pages), written by kfleet in dir. */
static void fill(void)
{
    kf_err err;
    kf_store *s = NULL;
    assert_int_equal(kf_store_open(dir, 0, &s, &err), 0);
    kf_txn *t = NULL;
    assert_int_equal(kf_store_begin(s, 0, &t, &err), 0);
    uint32_t id;
    assert_int_equal(kf_store_next_sweep_id(t, &id), 0);
    Kfleet__Sweep sw = KFLEET__SWEEP__INIT;
    sw.sweep_id = id;
    sw.name = "damage";
    assert_int_equal(kf_store_put_sweep(t, &sw), 0);
    int dup;
    for (uint32_t i = 0; i < 300; i++) {
        Kfleet__Task task = KFLEET__TASK__INIT;
        task.task_id = kf_task_id(id, i);
        assert_int_equal(kf_store_put_task(t, &task), 0);
        for (uint32_t q = 0; q < 100; q++) {
            Kfleet__Sample smp = KFLEET__SAMPLE__INIT;
            smp.seq = q;
            smp.seconds = 1e-6 * (q + i);
            assert_int_equal(kf_store_put_sample(t, task.task_id, 1, &smp, &dup), 0);
        }
    }
    assert_int_equal(kf_store_commit(&t, &err), 0);
    kf_store_close(&s);
}

/* The live meta page's main table record, and the named table `name`'s
 * record in the main table's root leaf (13 tables: one page). */
static uint8_t *table_record(uint8_t *f, const char *name)
{
    uint32_t psize;
    memcpy(&psize, f + 40, 4);
    const uint8_t *meta = rd64(f + psize + 144) > rd64(f + 144) ? f + psize : f;
    uint8_t *leaf = f + rd64(meta + 128) * psize;
    assert_int_equal(rd16(leaf + 10) & 0x2, 0x2);
    for (unsigned i = 0; i < (rd16(leaf + 12) - 16u) / 2; i++) {
        uint8_t *node = leaf + rd16(leaf + 16 + 2 * i);
        uint16_t ks = rd16(node + 6);
        if (ks == strlen(name) && memcmp(node + 8, name, ks) == 0)
            return node + 8 + ks;
    }
    fail_msg("no table '%s'", name);
    return NULL;
}

/* Child i of a branch page. */
static uint64_t child(const uint8_t *branch, unsigned i)
{
    const uint8_t *node = branch + rd16(branch + 16 + 2 * i);
    return rd16(node) | (uint64_t)rd16(node + 2) << 16 | (uint64_t)rd16(node + 4) << 32;
}

/* The leftmost branch page right above the leaves of `table`. */
static uint8_t *lowest_branch(uint8_t *f, const char *table)
{
    uint32_t psize;
    memcpy(&psize, f + 40, 4);
    uint8_t *p = f + rd64(table_record(f, table) + 40) * psize;
    assert_int_equal(rd16(p + 10), 0x1); /* the root is a branch */
    while (rd16(f + child(p, 0) * psize + 10) == 0x1)
        p = f + child(p, 0) * psize;
    return p;
}

static unsigned long long next_random(unsigned long long *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* The damage: random bytes over one page of the store. The copy
 * is compacted (mdb_env_copy2) so that every page past the two meta pages
 * belongs to a table: whichever page the bytes land on, the store is
 * damaged. Each of 12 pages, one at a time, is refused at open, naming
 * the page; the refused open changes nothing in the file; the whole copy
 * opens. */
static void test_scribbled_refused(void **state)
{
    (void)state;
    fill();
    char dir2[64];
    snprintf(dir2, sizeof dir2, "%s/compact", dir);
    assert_int_equal(mkdir(dir2, 0700), 0);
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    raw_open(MDB_RDONLY, "samples", &env, &txn, &dbi);
    mdb_txn_abort(txn); /* the copy reads under a transaction of its own */
    assert_int_equal(mdb_env_copy2(env, dir2, MDB_CP_COMPACT), 0);
    mdb_env_close(env);

    size_t len;
    uint8_t *orig = slurp(dir2, &len), *bad = malloc(len);
    uint32_t psize;
    memcpy(&psize, orig + 40, 4);
    size_t npages = len / psize;
    assert_true(npages > 100);
    unsigned long long x = 0x9E3779B97F4A7C15ull;
    kf_err err;
    kf_store *s = NULL;
    for (int k = 0; k < 12; k++) {
        size_t pg = 2 + next_random(&x) % (npages - 2);
        memcpy(bad, orig, len);
        for (size_t i = 0; i < psize; i++)
            bad[pg * psize + i] = (uint8_t)next_random(&x);
        spill(dir2, bad, len);
        kf_err_clear(&err);
        assert_int_equal(kf_store_open(dir2, 0, &s, &err), KF_ESTORE);
        assert_null(s);
        char where[64];
        snprintf(where, sizeof where, "page %zu (byte %zu): its header says page", pg, pg * psize);
        if (!strstr(err.msg, where) || !strstr(err.msg, "data.mdb is damaged") ||
            !strstr(err.msg, "Nothing in it was changed") ||
            !strstr(err.msg, "kfleet verify --store") || !strstr(err.msg, "move the directory"))
            fail_msg("page %zu scribbled, open said: %s", pg, err.msg);
        size_t after;
        uint8_t *now = slurp(dir2, &after);
        assert_int_equal(after, len);
        assert_memory_equal(now, bad, len);
        free(now);
    }
    spill(dir2, orig, len);
    assert_int_equal(kf_store_open(dir2, 0, &s, &err), KF_OK);
    kf_store_close(&s);
    free(orig);
    free(bad);
}

/* Damage LMDB serves without a word: a table's record that lost its root
 * (LMDB reads the table as empty: the "no sweep yet"), and a
 * branch page whose child pointer now names its neighbour (LMDB serves
 * one leaf twice and loses the other). Both are refused at open. */
static void test_silent_damage_refused(void **state)
{
    (void)state;
    fill();
    size_t len;
    uint8_t *orig = slurp(dir, &len), *bad = malloc(len);
    memcpy(bad, orig, len);
    memset(table_record(bad, "sweeps") + 40, 0xff, 8); /* root: none */
    spill(dir, bad, len);
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *c;
    MDB_val k, v;
    raw_open(MDB_RDONLY, "sweeps", &env, &txn, &dbi);
    assert_int_equal(mdb_cursor_open(txn, dbi, &c), 0);
    assert_int_equal(mdb_cursor_get(c, &k, &v, MDB_FIRST), MDB_NOTFOUND); /* LMDB: empty */
    mdb_cursor_close(c);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    kf_err err;
    kf_store *s = NULL;
    for (int ro = 0; ro < 2; ro++) { /* a reader's open checks the tables' records too */
        kf_err_clear(&err);
        assert_int_equal(kf_store_open(dir, ro, &s, &err), KF_ESTORE);
        assert_non_null(strstr(err.msg, "table 'sweeps': its record names no root page, yet "
                                        "counts 1 records"));
    }

    memcpy(bad, orig, len);
    uint8_t *branch = lowest_branch(bad, "samples");
    uint8_t *n0 = branch + rd16(branch + 16), *n1 = branch + rd16(branch + 18);
    memcpy(n0, n1, 6); /* child 0 := child 1 */
    spill(dir, bad, len);
    kf_err_clear(&err);
    assert_int_equal(kf_store_open(dir, 0, &s, &err), KF_ESTORE);
    if (!strstr(err.msg, "table 'samples': page ") || !strstr(err.msg, "is damaged"))
        fail_msg("open said: %s", err.msg);
    spill(dir, orig, len);
    assert_int_equal(kf_store_open(dir, 0, &s, &err), KF_OK);
    kf_store_close(&s);
    free(orig);
    free(bad);
}

/* kfleet verify --store's check: a whole store has no problem and every
 * record decodes; a record written through liblmdb that does not decode
 * passes the open (its pages are whole) and is named by the records'
 * check; two scribbled pages are both listed (the open names the first). */
static void test_store_check(void **state)
{
    (void)state;
    fill();
    kf_err err;
    kf_buf problems = KF_BUF_INIT;
    kf_store_check_stats st;
    assert_int_equal(kf_store_check(dir, 1, NULL, 10, &problems, &st, &err), KF_OK);
    assert_int_equal(st.damaged, 0);
    assert_int_equal(st.tables, 13);
    assert_true(st.records >= 30000 + 300 + 1);
    assert_int_equal(st.decoded, st.records);
    assert_int_equal(problems.len, 0);

    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    raw_open(0, "tasks", &env, &txn, &dbi);
    uint8_t key[8] = {0, 0, 0, 9, 0, 0, 0, 1}, junk[8];
    memset(junk, 0xff, sizeof junk);
    MDB_val k = {8, key}, v = {8, junk};
    assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
    kf_store *s = NULL;
    assert_int_equal(kf_store_open(dir, 0, &s, &err), KF_OK); /* the pages are whole */
    kf_store_close(&s);
    assert_int_equal(kf_store_check(dir, 0, NULL, 10, &problems, &st, &err), KF_OK);
    assert_int_equal(st.damaged, 0); /* pages only */
    assert_int_equal(kf_store_check(dir, 1, NULL, 10, &problems, &st, &err), KF_OK);
    assert_int_equal(st.damaged, 1);
    assert_string_equal(problems.data,
                        "table 'tasks': the record with key 0000000900000001 does not decode: its "
                        "bytes were changed\n");

    size_t len;
    uint8_t *f = slurp(dir, &len);
    uint32_t psize;
    memcpy(&psize, f + 40, 4);
    const uint8_t *branch = lowest_branch(f, "samples");
    uint64_t leaf[2] = {child(branch, 0), child(branch, 1)};
    for (int i = 0; i < 2; i++)
        memset(f + leaf[i] * psize, 0x5a, 64);
    spill(dir, f, len);
    free(f);
    kf_buf_reset(&problems);
    assert_int_equal(kf_store_check(dir, 1, NULL, 10, &problems, &st, &err), KF_OK);
    if (st.damaged != 2)
        fail_msg("%u problems: %s", st.damaged, problems.data);
    assert_int_equal(st.decoded, 0); /* damaged pages: no record is read through LMDB */
    for (int i = 0; i < 2; i++) {
        char where[64];
        snprintf(where, sizeof where, "table 'samples': page %llu ", (unsigned long long)leaf[i]);
        assert_non_null(strstr(problems.data, where));
    }
    kf_buf_release(&problems);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_map_full, setup, teardown),
        cmocka_unit_test(test_readonly_missing),
        cmocka_unit_test_setup_teardown(test_damaged_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_while_written, setup, teardown),
        cmocka_unit_test_setup_teardown(test_seals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scribbled_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_silent_damage_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_check, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
