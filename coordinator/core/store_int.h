/* store_int — the store module's insides, shared by its files: store.c
 * (the environment, transactions and records, each sealed as it is put),
 * seal.c (the seals' key and their check, seal.h) and store_check.c (the
 * whole store's check): the tables, the two structs, the big-endian key
 * helpers and a record's seal. Arrows run one way: seal.c and
 * store_check.c use store.c, which uses neither. Nobody else includes it. */
#ifndef KF_STORE_INT_H
#define KF_STORE_INT_H

#include "common/err.h"

#include <errno.h>
#include <lmdb.h>
#include <protobuf-c/protobuf-c.h>
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
    /* The first sweep whose samples are sealed by runs (seal.h); UINT32_MAX
     * in a store sealed before runs, opened read-only. */
    uint32_t runs_since;
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

/* A record's MAC (seal.h): keyed BLAKE2b, with the store's seal key, of
 * its table's byte, its key k and its stored bytes v. */
void store_seal_mac(const struct kf_store *s, int db, const MDB_val *k, const MDB_val *v,
                    uint8_t mac[SEAL_LEN]);

/* Where the seal of the record with key (klen bytes) of table db lives in
 * the seals table: its key, written to out, and its length. */
size_t store_seal_slot(int db, const void *key, size_t klen, uint8_t out[32]);

/* A run of an attempt's samples (seal.h), seqs lo..hi one after another:
 * its MAC is keyed BLAKE2b of RUN_TAG, the attempt's key (task, attempt:
 * 12 bytes), lo, then each sample's stored length and bytes in seq order,
 * then hi; its seal lives under run_slot (RUN_TAG, the attempt's key, lo,
 * hi: RUN_SLOT_LEN bytes; slot NULL: not wanted) and the attempt's seal is
 * the XOR of its runs'. */
#define RUN_TAG 0xF0
#define RUN_SLOT_LEN 21
typedef struct store_run {
    crypto_generichash_state st;
    uint32_t lo, next;
} store_run;
void store_run_begin(const struct kf_store *s, store_run *r, const uint8_t attempt_key[12],
                     uint32_t lo);
void store_run_add(store_run *r, const MDB_val *v);
void store_run_end(store_run *r, const uint8_t attempt_key[12], uint8_t mac[SEAL_LEN],
                   uint8_t slot[RUN_SLOT_LEN]);

/* store.c's record layer, for the store's other files (store_problem.c):
 * m packed into table db under key (sealed where the table is; *dup set,
 * nothing written, when flags has MDB_NOOVERWRITE and the key is there);
 * a record's stored bytes; a walk over the keys starting with prefix (all
 * when plen is 0), cb's non-zero return stopping it and returned. */
int store_put_msg(struct kf_txn *t, int db, const void *key, size_t klen, const ProtobufCMessage *m,
                  unsigned flags, int *dup);
int store_get_raw(struct kf_txn *t, int db, const void *key, size_t klen, MDB_val *v);
typedef int (*store_raw_cb)(void *ctx, const MDB_val *k, const MDB_val *v);
int store_walk(struct kf_txn *t, int db, const void *prefix, size_t plen, store_raw_cb cb,
               void *ctx);

/* A getter's body: the record of db under key decoded into *out. */
#define GET_MSG(t, db, key, klen, type, out)                                                       \
    do {                                                                                           \
        MDB_val v_;                                                                                \
        int rc_ = store_get_raw(t, db, key, klen, &v_);                                            \
        if (rc_)                                                                                   \
            return rc_;                                                                            \
        *(out) = type##__unpack(NULL, v_.mv_size, v_.mv_data);                                     \
        return *(out) ? KF_OK : KF_ESTORE;                                                         \
    } while (0)

/* A walk callback fname that decodes each record and hands it to a
 * cbtype callback. */
#define DECODE_CB(fname, type, ctype, cbtype)                                                      \
    struct fname##_ctx {                                                                           \
        cbtype cb;                                                                                 \
        void *ctx;                                                                                 \
    };                                                                                             \
    static int fname(void *c, const MDB_val *k, const MDB_val *v)                                  \
    {                                                                                              \
        (void)k;                                                                                   \
        struct fname##_ctx *x = c;                                                                 \
        ctype *m = type##__unpack(NULL, v->mv_size, v->mv_data);                                   \
        if (!m)                                                                                    \
            return KF_ESTORE;                                                                      \
        int rc = x->cb(x->ctx, m);                                                                 \
        type##__free_unpacked(m, NULL);                                                            \
        return rc;                                                                                 \
    }

#endif
