/* store_problem — a problem's records in the store (store.h; docs/problems.md):
 * its secret seed pool, one per problem hash, and its references, one per
 * (problem, configuration, seed), under keys that keep a problem's
 * references together so that a renewal retires them in one range. Built
 * on store.c's record layer (store_int.h); store.c calls nothing here. */
#include "core/store.h"
#include "core/store_int.h"

#include <lmdb.h>
#include <string.h>

#define HASH_MAX 128 /* a problem hash, hex */

int kf_store_put_seedpool(kf_txn *t, const Kfleet__SeedPool *p)
{
    size_t n = strlen(p->problem_hash);
    if (n == 0 || n > HASH_MAX)
        return KF_EINVAL;
    return store_put_msg(t, DB_SEEDPOOLS, p->problem_hash, n, &p->base, 0, NULL);
}

int kf_store_get_seedpool(kf_txn *t, const char *problem_hash, Kfleet__SeedPool **out)
{
    size_t n = strlen(problem_hash);
    if (n == 0 || n > HASH_MAX)
        return KF_EINVAL;
    GET_MSG(t, DB_SEEDPOOLS, problem_hash, n, kfleet__seed_pool, out);
}

/* problem hash, 0, config key (KF_STORE_CONFIG_KEY bytes), seed (be64). */
static size_t ref_key(uint8_t *k, const char *hash, const uint8_t *cfg, size_t cfglen,
                      uint64_t seed)
{
    size_t h = strlen(hash);
    if (h == 0 || h > HASH_MAX || cfglen != KF_STORE_CONFIG_KEY)
        return 0;
    memcpy(k, hash, h);
    k[h] = 0;
    memcpy(k + h + 1, cfg, cfglen);
    be64(k + h + 1 + cfglen, seed);
    return h + 1 + cfglen + 8;
}

int kf_store_put_reference(kf_txn *t, const Kfleet__Reference *r, int *dup)
{
    uint8_t k[HASH_MAX + 1 + KF_STORE_CONFIG_KEY + 8];
    size_t n = ref_key(k, r->problem_hash, r->config_key.data, r->config_key.len, r->seed);
    if (!n)
        return KF_EINVAL;
    return store_put_msg(t, DB_REFS, k, n, &r->base, MDB_NOOVERWRITE, dup);
}

int kf_store_get_reference(kf_txn *t, const char *problem_hash, const uint8_t *config_key,
                           uint64_t seed, Kfleet__Reference **out)
{
    uint8_t k[HASH_MAX + 1 + KF_STORE_CONFIG_KEY + 8];
    size_t n = ref_key(k, problem_hash, config_key, KF_STORE_CONFIG_KEY, seed);
    if (!n)
        return KF_EINVAL;
    GET_MSG(t, DB_REFS, k, n, kfleet__reference, out);
}

/* The key prefix of a problem's references: its hash and a NUL; 0 for a
 * hash that cannot be one. */
static size_t ref_prefix(uint8_t *p, const char *hash)
{
    size_t h = strlen(hash);
    if (h == 0 || h > HASH_MAX)
        return 0;
    memcpy(p, hash, h);
    p[h] = 0;
    return h + 1;
}

DECODE_CB(reference_cb, kfleet__reference, Kfleet__Reference, kf_store_reference_cb)

int kf_store_foreach_reference(kf_txn *t, const char *problem_hash, kf_store_reference_cb cb,
                               void *ctx)
{
    uint8_t p[HASH_MAX + 1];
    size_t plen = ref_prefix(p, problem_hash);
    if (!plen)
        return KF_EINVAL;
    struct reference_cb_ctx x = {cb, ctx};
    return store_walk(t, DB_REFS, p, plen, reference_cb, &x);
}

int kf_store_retire_references(kf_txn *t, const char *problem_hash, uint32_t generation,
                               uint32_t *removed)
{
    uint8_t p[HASH_MAX + 1];
    size_t plen = ref_prefix(p, problem_hash);
    *removed = 0;
    if (!plen)
        return KF_EINVAL;
    MDB_cursor *c;
    int rc = mdb_cursor_open(t->txn, t->s->dbi[DB_REFS], &c);
    if (rc)
        return kf_store_map_rc(rc);
    MDB_val k = {plen, p}, v;
    rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
    while (rc == 0 && k.mv_size > plen && memcmp(k.mv_data, p, plen) == 0) {
        Kfleet__Reference *r = kfleet__reference__unpack(NULL, v.mv_size, v.mv_data);
        int stale = !r || r->generation != generation;
        if (r)
            kfleet__reference__free_unpacked(r, NULL);
        if (stale) {
            if ((rc = mdb_cursor_del(c, 0)) != 0)
                break;
            (*removed)++;
            /* After a delete, MDB_NEXT gives the record after the deleted one. */
            rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
            continue;
        }
        rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(c);
    if (rc && rc != MDB_NOTFOUND && !t->failed)
        t->failed = rc;
    return rc == MDB_NOTFOUND || rc == 0 ? KF_OK : kf_store_map_rc(rc);
}
