/* tables — the store's insides, shared by store.c and seal.c (the seals
 * live in the store's environment and transactions): the tables, the two
 * structs, the big-endian key helpers. Nobody else includes it. */
#ifndef KF_TABLES_H
#define KF_TABLES_H

#include "common/err.h"

#include <errno.h>
#include <lmdb.h>
#include <sodium.h>
#include <stddef.h>
#include <stdint.h>

enum {
    DB_META,
    DB_SWEEPS,
    DB_TASKS,
    DB_ATTEMPTS,
    DB_RESULTS,
    DB_LATE,
    DB_SAMPLES,
    DB_AGENTS,
    DB_BUILDS,
    DB_TELEMETRY,
    DB_SEALS,     /* (table byte, record key) -> keyed BLAKE2b of its stored bytes */
    DB_SEEDPOOLS, /* a problem's secret seeds (docs/problems.md) */
    DB_REFS,      /* a problem's references per configuration and seed */
    DB_COUNT
};
/* Tables added after the first stores were written: a read-only open of an
 * older store finds none, and reads them as empty. */
#define DB_FIRST_OPTIONAL DB_SEEDPOOLS

#define SEAL_LEN 16

/* The tables' names in the environment, by DB_ index. */
extern const char *const kf_store_tables[DB_COUNT];

struct kf_store {
    MDB_env *env;
    MDB_dbi dbi[DB_COUNT];
    int absent[DB_COUNT]; /* an optional table an older store does not have */
    int readonly;
    size_t map_size;
    int sealing;   /* seal_key is set */
    int has_seals; /* the seals table exists (a store before them has none) */
    unsigned char seal_key[32];
    /* The BLAKE2b state right after its init with seal_key (set with
     * it): a MAC starts from a copy instead of keying a state anew
     * (seal.c). Bytes, copied in and out of an aligned state. */
    unsigned char seal_init[sizeof(crypto_generichash_state)];
};

struct kf_txn {
    struct kf_store *s;
    MDB_txn *txn;
    /* Each table's cursor for puts, opened on first use and freed by LMDB
     * with the transaction (kf_txn_put). */
    MDB_cursor *put[DB_COUNT];
    /* The first LMDB error a put met. LMDB then refuses the rest of the
     * transaction with a bare MDB_BAD_TXN; the commit reports this cause
     * (map full, disk full) instead. */
    int failed;
};

static inline int kf_store_map_rc(int rc)
{
    if (rc == 0)
        return KF_OK;
    if (rc == MDB_NOTFOUND)
        return KF_ENOTFOUND;
    if (rc == MDB_MAP_FULL || rc == ENOSPC || rc == MDB_TXN_FULL)
        return KF_EFULL;
    return KF_ESTORE;
}

static inline void be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline void be64(uint8_t *p, uint64_t v)
{
    be32(p, (uint32_t)(v >> 32));
    be32(p + 4, (uint32_t)v);
}

static inline uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* seal.c's hooks, called by store.c in the transaction that puts the
 * record. kf_seal_mac: the MAC of record (key, v) of table db (samples,
 * results, late results). kf_seal_add: adds a MAC to the seals table: a
 * result's (and a late result's) is its own seal; a sample's is folded
 * (XOR) into its attempt's, and so may be the XOR of several samples of
 * one attempt (key any of theirs), which costs one seal update for a whole
 * batch. kf_seal_put: both, for one record. 0 or a store error. */
void kf_seal_mac(const struct kf_store *s, int db, const void *key, size_t klen, const MDB_val *v,
                 uint8_t mac[SEAL_LEN]);
int kf_seal_add(struct kf_txn *t, int db, const void *key, size_t klen,
                const uint8_t mac[SEAL_LEN]);
int kf_seal_put(struct kf_txn *t, int db, const void *key, size_t klen, const MDB_val *v);

/* mdb_put into table db through the transaction's cursor on it (opened on
 * first use; LMDB frees it with the transaction). A turn's puts into one
 * table are mostly neighbours (the tasks in flight, the results and seals
 * appended at the end), and LMDB starts a cursor's search from the page the
 * cursor is on when the key falls there, where mdb_put searches from the
 * root each time: 2,760 instructions a sample, 1,376 through a cursor
 * (`kfbench ingest`). The first error but MDB_KEYEXIST is kept in
 * t->failed. Here, not in store.c, as both store.c and seal.c put. */
static inline int kf_txn_put(struct kf_txn *t, int db, MDB_val *k, MDB_val *v, unsigned flags)
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

#endif
