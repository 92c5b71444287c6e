/* test_problem — a problem's secret seed pool and its references in the
 * store (core/problem.c): 1,000 candidates over two configurations make one
 * reference computation per configuration and seed, a later sweep makes
 * none, the pool is renewed when old (new seeds, the retired seeds'
 * references deleted), and a reference for a seed outside the pool is not
 * kept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/problem.h"

#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HASH "9f0a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5061728394a5b6c7d8e"
#define NCAND 1000
#define POOL 3
#define RENEW_S 3600.0
#define T0 (1800000000ull * 1000000000ull)

static char dir[PATH_MAX];
static kf_store *store;

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/kf-problem-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    kf_err err;
    return kf_store_open(dir, 0, &store, &err) == KF_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    kf_store_close(&store);
    nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
    return 0;
}

static kf_txn *begin(void)
{
    kf_txn *t = NULL;
    kf_err err;
    assert_int_equal(kf_store_begin(store, 0, &t, &err), KF_OK);
    return t;
}

static void commit(kf_txn **t)
{
    kf_err err;
    assert_int_equal(kf_store_commit(t, &err), KF_OK);
}

/* Two configurations of the problem: rows 64 and rows 256, cols 1024. */
static void config_key(int which, uint8_t key[KF_STORE_CONFIG_KEY])
{
    Kfleet__Param rows = KFLEET__PARAM__INIT, cols = KFLEET__PARAM__INIT;
    rows.name = "rows";
    rows.value = which ? 256 : 64;
    cols.name = "cols";
    cols.value = 1024;
    Kfleet__Param *params[] = {&rows, &cols};
    kf_problem_config_key(params, 2, key);
}

/* "Computes" the reference of (config, seed): what a reference task would
 * send back. */
static int store_ref(kf_txn *t, const Kfleet__SeedPool *p, const uint8_t *key, uint64_t seed,
                     int *dup)
{
    char digest[65];
    snprintf(digest, sizeof digest, "%064llx", (unsigned long long)seed);
    Kfleet__Reference r = KFLEET__REFERENCE__INIT;
    r.problem_hash = HASH;
    r.config_key.data = (uint8_t *)key;
    r.config_key.len = KF_STORE_CONFIG_KEY;
    r.seed = seed;
    r.digest = digest;
    r.count = 4;
    return kf_problem_store_ref(t, p, &r, dup);
}

static int count_cb(void *ctx, const Kfleet__Reference *r)
{
    (void)r;
    (*(int *)ctx)++;
    return 0;
}

static int stored_refs(kf_txn *t)
{
    int n = 0;
    assert_int_equal(kf_store_foreach_reference(t, HASH, count_cb, &n), KF_OK);
    return n;
}

/* One sweep of NCAND candidates over both configurations, as the scheduler
 * runs it: each candidate's configuration asks which seeds still need a
 * reference, and a reference task computes each of those once. Returns the
 * number of reference computations. */
static int sweep(uint64_t now_ns, Kfleet__SeedPool **pool, int *renewed)
{
    kf_txn *t = begin();
    assert_int_equal(kf_problem_seed_pool(t, HASH, POOL, RENEW_S, now_ns, pool, renewed), KF_OK);
    int computed = 0;
    for (int c = 0; c < NCAND; c++)
        for (int cfg = 0; cfg < 2; cfg++) {
            uint8_t key[KF_STORE_CONFIG_KEY];
            uint64_t missing[POOL];
            size_t nmissing = 0;
            config_key(cfg, key);
            assert_int_equal(kf_problem_missing_refs(t, *pool, key, missing, &nmissing), KF_OK);
            for (size_t i = 0; i < nmissing; i++) {
                int dup = 1;
                assert_int_equal(store_ref(t, *pool, key, missing[i], &dup), KF_OK);
                assert_false(dup);
                computed++;
            }
        }
    commit(&t);
    return computed;
}

static void test_config_key(void **state)
{
    (void)state;
    Kfleet__Param a = KFLEET__PARAM__INIT, b = KFLEET__PARAM__INIT;
    a.name = "rows";
    a.value = 64;
    b.name = "cols";
    b.value = 1024;
    Kfleet__Param *ab[] = {&a, &b}, *ba[] = {&b, &a};
    uint8_t k1[KF_STORE_CONFIG_KEY], k2[KF_STORE_CONFIG_KEY], k3[KF_STORE_CONFIG_KEY];
    kf_problem_config_key(ab, 2, k1);
    kf_problem_config_key(ba, 2, k2);
    assert_memory_equal(k1, k2, sizeof k1); /* order does not matter */
    a.value = 65;
    kf_problem_config_key(ab, 2, k3);
    assert_memory_not_equal(k1, k3, sizeof k1);
    /* A problem without parameters has a key too (no parameter array). */
    kf_problem_config_key(NULL, 0, k3);
    assert_memory_not_equal(k1, k3, sizeof k1);
}

static void test_one_reference_per_config_and_seed(void **state)
{
    (void)state;
    Kfleet__SeedPool *p1 = NULL, *p2 = NULL, *p3 = NULL;
    int renewed = 0;
    /* The first sweep: the pool is drawn, and 1,000 candidates over two
     * configurations cost 2 x 3 reference computations. */
    int computed = sweep(T0, &p1, &renewed);
    printf("sweep 1: %d candidates x 2 configurations, %d reference computations, pool "
           "generation %u\n",
           NCAND, computed, p1->generation);
    assert_true(renewed);
    assert_int_equal(p1->generation, 1);
    assert_int_equal(p1->n_seeds, POOL);
    assert_true(p1->seeds[0] != p1->seeds[1] && p1->seeds[1] != p1->seeds[2]);
    assert_int_equal(computed, 2 * POOL);
    kf_txn *t = begin();
    assert_int_equal(stored_refs(t), 2 * POOL);
    /* A second computation of a stored one is refused as a duplicate. */
    uint8_t key[KF_STORE_CONFIG_KEY];
    config_key(0, key);
    int dup = 0;
    assert_int_equal(store_ref(t, p1, key, p1->seeds[0], &dup), KF_OK);
    assert_true(dup);
    /* A reference for a seed outside the pool is not kept. */
    assert_int_equal(store_ref(t, p1, key, p1->seeds[0] ^ 1, &dup), KF_EINVAL);
    assert_int_equal(stored_refs(t), 2 * POOL);
    commit(&t);

    /* A later sweep of the same problem, seeds still in the pool: no
     * reference computed, the same seeds. */
    computed = sweep(T0 + 10ull * 1000000000ull, &p2, &renewed);
    printf("sweep 2 (10 s later): %d reference computations\n", computed);
    assert_false(renewed);
    assert_int_equal(computed, 0);
    assert_memory_equal(p1->seeds, p2->seeds, POOL * sizeof *p1->seeds);

    /* After the renew period: a new generation with new seeds, the retired
     * seeds' references gone, and the references computed again, once. */
    computed = sweep(T0 + (uint64_t)(RENEW_S + 1) * 1000000000ull, &p3, &renewed);
    printf("sweep 3 (after renew): %d reference computations, pool generation %u\n", computed,
           p3->generation);
    assert_true(renewed);
    assert_int_equal(p3->generation, 2);
    for (size_t i = 0; i < POOL; i++)
        for (size_t j = 0; j < POOL; j++)
            assert_true(p3->seeds[i] != p1->seeds[j]);
    assert_int_equal(computed, 2 * POOL);
    t = begin();
    assert_int_equal(stored_refs(t), 2 * POOL);
    Kfleet__Reference *r = NULL;
    assert_int_equal(kf_store_get_reference(t, HASH, key, p1->seeds[0], &r), KF_ENOTFOUND);
    assert_int_equal(kf_store_get_reference(t, HASH, key, p3->seeds[0], &r), KF_OK);
    assert_int_equal(r->generation, 2);
    assert_int_equal(r->count, 4);
    kfleet__reference__free_unpacked(r, NULL);
    uint32_t removed = 9;
    assert_int_equal(kf_store_retire_references(t, HASH, 2, &removed), KF_OK);
    assert_int_equal(removed, 0);
    kf_store_abort(&t);
    kfleet__seed_pool__free_unpacked(p1, NULL);
    kfleet__seed_pool__free_unpacked(p2, NULL);
    kfleet__seed_pool__free_unpacked(p3, NULL);
}

static void test_pool_size_change_renews(void **state)
{
    (void)state;
    kf_txn *t = begin();
    Kfleet__SeedPool *p = NULL;
    int renewed = 0;
    assert_int_equal(kf_problem_seed_pool(t, "otherproblem", 2, RENEW_S, T0, &p, &renewed), KF_OK);
    assert_true(renewed);
    assert_int_equal(p->n_seeds, 2);
    kfleet__seed_pool__free_unpacked(p, NULL);
    assert_int_equal(kf_problem_seed_pool(t, "otherproblem", 5, RENEW_S, T0, &p, &renewed), KF_OK);
    assert_true(renewed);
    assert_int_equal(p->n_seeds, 5);
    assert_int_equal(p->generation, 2);
    kfleet__seed_pool__free_unpacked(p, NULL);
    assert_int_equal(kf_problem_seed_pool(t, "otherproblem", 0, RENEW_S, T0, &p, &renewed),
                     KF_EINVAL);
    commit(&t);
}

/* A reference task's Result, as the coordinator receives it: the
 * references of the pool's seeds stored with their provenance and digest
 * (the values stay on the agents), one for a seed outside the pool
 * dropped, one without a digest refused. */
static void test_store_result(void **state)
{
    (void)state;
    kf_txn *t = begin();
    Kfleet__SeedPool *p = NULL;
    int renewed = 0;
    assert_int_equal(kf_problem_seed_pool(t, "resultproblem", 2, RENEW_S, T0, &p, &renewed), KF_OK);
    char *d0 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    Kfleet__Reference r0 = KFLEET__REFERENCE__INIT, r1 = KFLEET__REFERENCE__INIT,
                      r2 = KFLEET__REFERENCE__INIT;
    r0.seed = p->seeds[1];
    r0.digest = d0;
    r0.count = 3;
    r0.tol_abs = 1e-4;
    r1.seed = p->seeds[0] + 1; /* not in the pool */
    r1.digest = d0;
    r1.count = 3;
    r2.seed = p->seeds[0];
    r2.digest = "not a digest";
    r2.count = 3;
    Kfleet__Reference *refs[] = {&r0, &r1, &r2};
    Kfleet__Result res = KFLEET__RESULT__INIT;
    res.task_id = 0x700000002ull;
    res.references = refs;
    res.n_references = 3;
    Kfleet__Param n = KFLEET__PARAM__INIT;
    n.name = "n";
    n.value = 4096;
    Kfleet__Param *params[] = {&n};
    size_t stored = 9;
    assert_int_equal(
        kf_problem_store_result(t, "resultproblem", params, 1, "agent-7", T0 + 5, &res, &stored),
        KF_OK);
    assert_int_equal(stored, 1);
    uint8_t key[KF_STORE_CONFIG_KEY];
    kf_problem_config_key(params, 1, key);
    Kfleet__Reference *got = NULL;
    assert_int_equal(kf_store_get_reference(t, "resultproblem", key, p->seeds[1], &got), KF_OK);
    assert_int_equal(got->task_id, 0x700000002ull);
    assert_string_equal(got->agent_id, "agent-7");
    assert_int_equal(got->n_params, 1);
    assert_int_equal(got->generation, 1);
    assert_string_equal(got->digest, d0);
    assert_int_equal(got->count, 3);
    assert_true(got->tol_abs == 1e-4);
    kfleet__reference__free_unpacked(got, NULL);
    assert_int_equal(kf_store_get_reference(t, "resultproblem", key, p->seeds[0], &got),
                     KF_ENOTFOUND);
    /* A problem without a pool: not found. */
    assert_int_equal(kf_problem_store_result(t, "nopool", params, 1, "a", T0, &res, &stored),
                     KF_ENOTFOUND);
    kfleet__seed_pool__free_unpacked(p, NULL);
    kf_store_abort(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_key),
        cmocka_unit_test(test_one_reference_per_config_and_seed),
        cmocka_unit_test(test_pool_size_change_renews),
        cmocka_unit_test(test_store_result),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
