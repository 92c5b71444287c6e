/* peers — the no-op job workload of the dispatch benchmark through the job
 * queues people would otherwise pick, each with a C client of its own
 * protocol: one producer submits `tasks` jobs, `workers` workers (threads,
 * one connection each) take and finish them. jobs/s from the first submit
 * to the last job finished; the median of `runs` runs.
 *
 *   beanstalkd: a text-protocol client over TCP, written here (the protocol
 *     is five commands; no C client library is packaged). The producer
 *     pipelines `put`s 256 at a time (as kfleet's sweep arrives in one
 *     request); a worker does reserve-with-timeout, then delete, and a job
 *     is finished when its DELETED reply arrived. Run with -b DIR -f0, the
 *     binlog is fsync'd before each reply: the durable setting.
 *   gearmand: libgearman. The producer pipelines background jobs
 *     (add_task_background + run_tasks, 1,000 at a time); a worker counts a
 *     job finished when its function returns (libgearman then sends
 *     WORK_COMPLETE). With --queue-type=libsqlite3 background jobs are
 *     written to SQLite before JOB_CREATED: the durable setting. */
#include "coordbench.h"
#include "common/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#ifdef KFB_HAVE_GEARMAN
#include <libgearman/gearman.h>
#endif

typedef struct kpeer_run {
    const kfb_opts *o;
    atomic_ullong done;
    atomic_ullong last_mono;
    atomic_int failed;
    volatile int stop;
} kpeer_run;

static void finished_one(kpeer_run *r)
{
    unsigned long long n = atomic_fetch_add(&r->done, 1) + 1;
    if (n == r->o->tasks)
        atomic_store(&r->last_mono, kf_mono_ns());
}

/* Runs `runs` rounds of body and prints the median rate. */
static int median_of_runs(const kfb_opts *o, const char *name,
                          int (*body)(const kfb_opts *, double *, kf_err *), kf_err *err)
{
    unsigned runs = o->runs ? o->runs : 1;
    double *rates = calloc(runs, sizeof *rates);
    int rc = KF_OK;
    for (unsigned i = 0; i < runs && rc == KF_OK; i++) {
        double secs = 0;
        if ((rc = body(o, &secs, err)) == KF_OK) {
            rates[i] = o->tasks / secs;
            fprintf(stderr,
                    "coordbench: %s %s workers=%u run %u: %u jobs in %.3f s = %.0f jobs/s\n", name,
                    o->label ? o->label : "", o->workers, i + 1, o->tasks, secs, rates[i]);
        }
    }
    if (rc == KF_OK)
        printf("RESULT bench=%s label=%s workers=%u jobs=%u runs=%u jobs_per_s=%.0f\n", name,
               o->label ? o->label : name, o->workers, o->tasks, runs,
               kfb_percentile(rates, runs, 50));
    free(rates);
    return rc;
}

/* ---- beanstalkd ---- */

typedef struct kbs {
    int fd;
    char buf[65536];
    size_t len, off;
} kbs;

static int bs_connect(const kfb_opts *o, kbs *c, kf_err *err)
{
    memset(c, 0, sizeof *c);
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)o->port);
    inet_pton(AF_INET, o->host ? o->host : "127.0.0.1", &sa.sin_addr);
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (c->fd >= 0)
            close(c->fd);
        return kf_err_set(err, KF_EUNAVAIL, "cannot connect to beanstalkd at %s:%d: %s",
                          o->host ? o->host : "127.0.0.1", o->port, strerror(errno));
    }
    return KF_OK;
}

static int bs_write(kbs *c, const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(c->fd, s, n);
        if (w <= 0)
            return KF_EIO;
        s += w;
        n -= (size_t)w;
    }
    return KF_OK;
}

/* One reply line, without its CRLF, into line. */
static int bs_line(kbs *c, char *line, size_t cap)
{
    for (;;) {
        char *nl = memchr(c->buf + c->off, '\n', c->len - c->off);
        if (nl) {
            size_t n = (size_t)(nl - (c->buf + c->off));
            size_t k = n && c->buf[c->off + n - 1] == '\r' ? n - 1 : n;
            if (k >= cap)
                k = cap - 1;
            memcpy(line, c->buf + c->off, k);
            line[k] = '\0';
            c->off += n + 1;
            return KF_OK;
        }
        memmove(c->buf, c->buf + c->off, c->len - c->off);
        c->len -= c->off;
        c->off = 0;
        if (c->len == sizeof c->buf)
            return KF_EPROTO;
        ssize_t r = read(c->fd, c->buf + c->len, sizeof c->buf - c->len);
        if (r <= 0)
            return KF_EIO;
        c->len += (size_t)r;
    }
}

static void *bs_worker(void *arg)
{
    kpeer_run *r = arg;
    kbs c;
    kf_err err;
    if (bs_connect(r->o, &c, &err)) {
        atomic_store(&r->failed, 1);
        return NULL;
    }
    char line[256], cmd[64];
    while (!r->stop) {
        static const char reserve[] = "reserve-with-timeout 1\r\n";
        if (bs_write(&c, reserve, sizeof reserve - 1) || bs_line(&c, line, sizeof line))
            break;
        unsigned long long id;
        unsigned bytes;
        if (sscanf(line, "RESERVED %llu %u", &id, &bytes) != 2)
            continue;                       /* TIMED_OUT: look at stop again */
        if (bs_line(&c, line, sizeof line)) /* the body */
            break;
        int n = snprintf(cmd, sizeof cmd, "delete %llu\r\n", id);
        if (bs_write(&c, cmd, (size_t)n) || bs_line(&c, line, sizeof line))
            break;
        if (strcmp(line, "DELETED") == 0)
            finished_one(r);
    }
    close(c.fd);
    return NULL;
}

static int bs_round(const kfb_opts *o, double *secs, kf_err *err)
{
    kpeer_run r = {0};
    r.o = o;
    kbs prod;
    int rc = bs_connect(o, &prod, err);
    if (rc)
        return rc;
    pthread_t *th = calloc(o->workers, sizeof *th);
    for (unsigned i = 0; i < o->workers; i++)
        pthread_create(&th[i], NULL, bs_worker, &r);
    static const char put[] = "put 0 0 60 4\r\nnoop\r\n";
    enum { CHUNK = 256 };
    char chunk[CHUNK * (sizeof put - 1)], line[128];
    for (int i = 0; i < CHUNK; i++)
        memcpy(chunk + (size_t)i * (sizeof put - 1), put, sizeof put - 1);
    uint64_t t0 = kf_mono_ns();
    for (unsigned sent = 0; sent < o->tasks && rc == KF_OK;) {
        unsigned n = o->tasks - sent < CHUNK ? o->tasks - sent : CHUNK;
        rc = bs_write(&prod, chunk, n * (sizeof put - 1));
        for (unsigned i = 0; i < n && rc == KF_OK; i++)
            if ((rc = bs_line(&prod, line, sizeof line)) == KF_OK && strncmp(line, "INSERTED", 8))
                rc = kf_err_set(err, KF_EPROTO, "beanstalkd answered a put with '%s'", line);
        sent += n;
    }
    while (rc == KF_OK && atomic_load(&r.done) < o->tasks && !atomic_load(&r.failed) &&
           kf_mono_ns() - t0 < 300000000000ull)
        usleep(200);
    r.stop = 1;
    for (unsigned i = 0; i < o->workers; i++)
        pthread_join(th[i], NULL);
    free(th);
    close(prod.fd);
    if (rc == KF_OK && atomic_load(&r.done) < o->tasks)
        rc = kf_err_set(err, KF_ETIMEOUT, "beanstalkd: %llu of %u jobs finished",
                        (unsigned long long)atomic_load(&r.done), o->tasks);
    if (rc == KF_OK)
        *secs = (double)(atomic_load(&r.last_mono) - t0) / 1e9;
    return rc;
}

int kfb_beanstalk(const kfb_opts *o, kf_err *err)
{
    return median_of_runs(o, "beanstalkd", bs_round, err);
}

/* ---- gearmand ---- */

#ifdef KFB_HAVE_GEARMAN
static void *gm_noop(gearman_job_st *job, void *ctx, size_t *size, gearman_return_t *ret)
{
    (void)job;
    finished_one(ctx);
    *size = 0;
    *ret = GEARMAN_SUCCESS;
    return NULL;
}

static void *gm_worker(void *arg)
{
    kpeer_run *r = arg;
    gearman_worker_st *w = gearman_worker_create(NULL);
    if (!w ||
        gearman_worker_add_server(w, r->o->host ? r->o->host : "127.0.0.1",
                                  (in_port_t)r->o->port) != GEARMAN_SUCCESS ||
        gearman_worker_add_function(w, "noop", 0, gm_noop, r) != GEARMAN_SUCCESS) {
        atomic_store(&r->failed, 1);
        if (w)
            gearman_worker_free(w);
        return NULL;
    }
    gearman_worker_set_timeout(w, 200);
    while (!r->stop) {
        gearman_return_t ret = gearman_worker_work(w);
        if (ret != GEARMAN_SUCCESS && ret != GEARMAN_TIMEOUT && ret != GEARMAN_IO_WAIT &&
            ret != GEARMAN_NO_JOBS && ret != GEARMAN_NO_ACTIVE_FDS) {
            atomic_store(&r->failed, 1);
            break;
        }
    }
    gearman_worker_free(w);
    return NULL;
}

static int gm_round(const kfb_opts *o, double *secs, kf_err *err)
{
    kpeer_run r = {0};
    r.o = o;
    gearman_client_st *c = gearman_client_create(NULL);
    if (!c || gearman_client_add_server(c, o->host ? o->host : "127.0.0.1", (in_port_t)o->port) !=
                  GEARMAN_SUCCESS)
        return kf_err_set(err, KF_EUNAVAIL, "gearman client: cannot add server %d", o->port);
    pthread_t *th = calloc(o->workers, sizeof *th);
    for (unsigned i = 0; i < o->workers; i++)
        pthread_create(&th[i], NULL, gm_worker, &r);
    usleep(200000); /* workers register their function (CAN_DO) before the first job */
    int rc = KF_OK;
    uint64_t t0 = kf_mono_ns();
    for (unsigned sent = 0; sent < o->tasks && rc == KF_OK;) {
        unsigned n = o->tasks - sent < 1000 ? o->tasks - sent : 1000;
        for (unsigned i = 0; i < n; i++) {
            gearman_return_t ret;
            if (!gearman_client_add_task_background(c, NULL, NULL, "noop", NULL, "noop", 4, &ret) ||
                ret != GEARMAN_SUCCESS) {
                rc = kf_err_set(err, KF_EIO, "gearman add_task_background: %s",
                                gearman_client_error(c));
                break;
            }
        }
        if (rc == KF_OK && gearman_client_run_tasks(c) != GEARMAN_SUCCESS)
            rc = kf_err_set(err, KF_EIO, "gearman run_tasks: %s", gearman_client_error(c));
        gearman_client_task_free_all(c);
        sent += n;
    }
    while (rc == KF_OK && atomic_load(&r.done) < o->tasks && !atomic_load(&r.failed) &&
           kf_mono_ns() - t0 < 300000000000ull)
        usleep(200);
    r.stop = 1;
    for (unsigned i = 0; i < o->workers; i++)
        pthread_join(th[i], NULL);
    free(th);
    gearman_client_free(c);
    if (rc == KF_OK && atomic_load(&r.done) < o->tasks)
        rc = kf_err_set(err, KF_ETIMEOUT, "gearmand: %llu of %u jobs finished%s",
                        (unsigned long long)atomic_load(&r.done), o->tasks,
                        atomic_load(&r.failed) ? " (a worker failed)" : "");
    if (rc == KF_OK)
        *secs = (double)(atomic_load(&r.last_mono) - t0) / 1e9;
    return rc;
}

int kfb_gearman(const kfb_opts *o, kf_err *err)
{
    return median_of_runs(o, "gearmand", gm_round, err);
}
#else
int kfb_gearman(const kfb_opts *o, kf_err *err)
{
    (void)o;
    return kf_err_set(err, KF_EUNAVAIL,
                      "kfbench was built without libgearman: run `bash deploy/install-deps.sh "
                      "--bench`, then configure the build again");
}
#endif
