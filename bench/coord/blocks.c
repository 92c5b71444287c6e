/* blocks — the ceilings the coordinator is measured against, on the same
 * machine: how fast ZeroMQ alone turns messages around over CURVE on
 * loopback, and how fast LMDB alone commits durably.
 *
 *   zmq:  a ROUTER (CURVE server, echoing) and a DEALER (CURVE client) in two
 *         threads of one process, each with its own context (so its own I/O
 *         thread, as two processes would have), over tcp://127.0.0.1.
 *         Round trips/s with one message in flight, then with 64.
 *   lmdb: an environment opened as the coordinator opens its store (no
 *         MDB_NOSYNC: every commit is fsync'd); puts/s in transactions of
 *         `batch` puts, and commits/s (with the median commit time) of one put
 *         a transaction. Keys are big-endian counters as in the store.
 *   open: the store of a home opened as `kfleet serve` opens it
 *         (kf_store_open, writable: the file, its length and its pages
 *         checked before any table is read), `runs` times, closed after
 *         each; the median time, with the store's size. Run after ingest,
 *         on its store: what the check at open costs a large store. */
#include "coordbench.h"
#include "common/paths.h"
#include "common/util.h"
#include "core/store.h"

#include <errno.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zmq.h>

#define ZMQ_PAYLOAD 128 /* about a Result envelope */

typedef struct kecho {
    char sec[41];
    char endpoint[128];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int ready;
    volatile int stop;
} kecho;

static void *echo_main(void *arg)
{
    kecho *e = arg;
    void *ctx = zmq_ctx_new();
    void *s = zmq_socket(ctx, ZMQ_ROUTER);
    int one = 1, zero = 0, tmo = 100;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(s, ZMQ_CURVE_SERVER, &one, sizeof one);
    zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, e->sec, 41);
    zmq_setsockopt(s, ZMQ_RCVTIMEO, &tmo, sizeof tmo);
    zmq_bind(s, "tcp://127.0.0.1:*");
    size_t len = sizeof e->endpoint;
    zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, e->endpoint, &len);
    pthread_mutex_lock(&e->mu);
    e->ready = 1;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    zmq_msg_t id, body;
    zmq_msg_init(&id);
    zmq_msg_init(&body);
    while (!e->stop) {
        if (zmq_msg_recv(&id, s, 0) < 0)
            continue;
        zmq_msg_recv(&body, s, 0);
        zmq_msg_send(&id, s, ZMQ_SNDMORE);
        zmq_msg_send(&body, s, 0);
    }
    zmq_msg_close(&id);
    zmq_msg_close(&body);
    zmq_close(s);
    zmq_ctx_term(ctx);
    return NULL;
}

/* Round trips/s for `secs` seconds with `window` messages in flight. */
static double rtt_rate(void *s, int window, double secs)
{
    char buf[ZMQ_PAYLOAD];
    memset(buf, 'x', sizeof buf);
    for (int i = 0; i < window; i++)
        zmq_send(s, buf, sizeof buf, 0);
    uint64_t n = 0, t0 = kf_mono_ns(), end = t0 + (uint64_t)(secs * 1e9);
    while (kf_mono_ns() < end) {
        if (zmq_recv(s, buf, sizeof buf, 0) < 0)
            break;
        n++;
        zmq_send(s, buf, sizeof buf, 0);
    }
    double rate = (double)n / ((double)(kf_mono_ns() - t0) / 1e9);
    for (int i = 0; i < window; i++) /* drain what is in flight */
        zmq_recv(s, buf, sizeof buf, 0);
    return rate;
}

int kfb_zmq(const kfb_opts *o, kf_err *err)
{
    kecho e;
    memset(&e, 0, sizeof e);
    pthread_mutex_init(&e.mu, NULL);
    pthread_cond_init(&e.cv, NULL);
    char spub[41], cpub[41], csec[41];
    if (zmq_curve_keypair(spub, e.sec) || zmq_curve_keypair(cpub, csec))
        return kf_err_set(err, KF_EIO, "zmq_curve_keypair: %s", zmq_strerror(errno));
    pthread_t th;
    pthread_create(&th, NULL, echo_main, &e);
    pthread_mutex_lock(&e.mu);
    while (!e.ready)
        pthread_cond_wait(&e.cv, &e.mu);
    pthread_mutex_unlock(&e.mu);
    void *ctx = zmq_ctx_new();
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    int zero = 0, tmo = 5000;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(s, ZMQ_RCVTIMEO, &tmo, sizeof tmo);
    zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, spub, 41);
    zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, cpub, 41);
    zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, csec, 41);
    zmq_connect(s, e.endpoint);
    double secs = o->seconds > 0 ? o->seconds : 2;
    rtt_rate(s, 1, 0.2); /* handshake and warm-up */
    double one = rtt_rate(s, 1, secs / 2);
    double many = rtt_rate(s, 64, secs / 2);
    zmq_close(s);
    zmq_ctx_term(ctx);
    e.stop = 1;
    pthread_join(th, NULL);
    if (one <= 0)
        return kf_err_set(err, KF_EIO, "no round trip completed over %s", e.endpoint);
    printf("RESULT bench=zmq payload=%d roundtrips_per_s_window1=%.0f rtt_us=%.1f "
           "roundtrips_per_s_window64=%.0f\n",
           ZMQ_PAYLOAD, one, 1e6 / one, many);
    return KF_OK;
}

static int lmdb_fail(kf_err *err, const char *what, int rc)
{
    return kf_err_set(err, KF_ESTORE, "lmdb %s: %s", what, mdb_strerror(rc));
}

int kfb_lmdb(const kfb_opts *o, kf_err *err)
{
    if (!o->dir)
        return kf_err_set(err, KF_EINVAL, "lmdb: --dir DIR (a scratch directory) is needed");
    if (kf_mkdirs(o->dir, 0700, err))
        return err->code;
    MDB_env *env;
    MDB_dbi dbi;
    MDB_txn *t;
    int rc = mdb_env_create(&env);
    if (rc)
        return lmdb_fail(err, "env_create", rc);
    mdb_env_set_mapsize(env, 4ull << 30);
    if ((rc = mdb_env_open(env, o->dir, 0, 0600))) {
        mdb_env_close(env);
        return lmdb_fail(err, "env_open", rc);
    }
    mdb_txn_begin(env, NULL, 0, &t);
    mdb_dbi_open(t, NULL, 0, &dbi);
    mdb_txn_commit(t);
    unsigned batch = o->batch ? o->batch : 1000;
    double secs = o->seconds > 0 ? o->seconds : 2;
    uint8_t key[16], val[48];
    memset(val, 7, sizeof val);
    memset(key, 0, sizeof key);
    uint64_t seq = 0, puts = 0, t0 = kf_mono_ns(), end = t0 + (uint64_t)(secs / 2 * 1e9);
    while (kf_mono_ns() < end) {
        if ((rc = mdb_txn_begin(env, NULL, 0, &t)))
            break;
        for (unsigned i = 0; i < batch && rc == 0; i++, seq++) {
            for (int b = 0; b < 8; b++)
                key[8 + b] = (uint8_t)(seq >> (56 - 8 * b));
            MDB_val k = {sizeof key, key}, v = {sizeof val, val};
            rc = mdb_put(t, dbi, &k, &v, MDB_NOOVERWRITE);
        }
        if (rc || (rc = mdb_txn_commit(t)))
            break;
        puts += batch;
    }
    double put_rate = (double)puts / ((double)(kf_mono_ns() - t0) / 1e9);
    /* One put a transaction: the cost of a durable commit itself. */
    size_t cap = 100000, n = 0;
    double *lat = calloc(cap, sizeof *lat);
    t0 = kf_mono_ns();
    end = t0 + (uint64_t)(secs / 2 * 1e9);
    while (rc == 0 && n < cap && kf_mono_ns() < end) {
        uint64_t a = kf_mono_ns();
        if ((rc = mdb_txn_begin(env, NULL, 0, &t)))
            break;
        for (int b = 0; b < 8; b++)
            key[8 + b] = (uint8_t)(seq >> (56 - 8 * b));
        seq++;
        MDB_val k = {sizeof key, key}, v = {sizeof val, val};
        if ((rc = mdb_put(t, dbi, &k, &v, MDB_NOOVERWRITE)) || (rc = mdb_txn_commit(t)))
            break;
        lat[n++] = (double)(kf_mono_ns() - a) / 1e3;
    }
    double commit_rate = (double)n / ((double)(kf_mono_ns() - t0) / 1e9);
    double p50 = kfb_percentile(lat, n, 50), p99 = kfb_percentile(lat, n, 99);
    free(lat);
    mdb_env_close(env);
    if (rc)
        return lmdb_fail(err, "put/commit", rc);
    printf("RESULT bench=lmdb batch=%u value_bytes=%zu puts_per_s=%.0f commits_per_s=%.0f "
           "commit_p50_us=%.0f commit_p99_us=%.0f\n",
           batch, sizeof val, put_rate, commit_rate, p50, p99);
    return KF_OK;
}

int kfb_open(const kfb_opts *o, kf_err *err)
{
    kf_paths p;
    struct stat st;
    int rc = kf_paths_resolve(&p, o->home, 0, err);
    if (rc)
        return rc;
    char data[PATH_MAX + 16];
    snprintf(data, sizeof data, "%s/data.mdb", p.store);
    if (stat(data, &st) != 0)
        return kf_err_set(err, KF_ENOTFOUND, "no store at %s (run ingest on this home first)",
                          data);
    unsigned runs = o->runs ? o->runs : 5;
    double *ms = calloc(runs, sizeof *ms);
    for (unsigned i = 0; i < runs && rc == KF_OK; i++) {
        kf_store *s = NULL;
        uint64_t t0 = kf_mono_ns();
        rc = kf_store_open(p.store, 0, &s, err);
        ms[i] = (double)(kf_mono_ns() - t0) / 1e6;
        kf_store_close(&s);
    }
    double p50 = kfb_percentile(ms, runs, 50), max = kfb_percentile(ms, runs, 100);
    free(ms);
    if (rc)
        return rc;
    printf("RESULT bench=open store_mib=%.1f runs=%u open_ms_p50=%.2f open_ms_max=%.2f\n",
           (double)st.st_size / (1 << 20), runs, p50, max);
    return KF_OK;
}
