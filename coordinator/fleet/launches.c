/* launches — the daemon's table of launches (launches.h): one thread per
 * launch or teardown, running launch.h's per-host flow; results published
 * under the table's mutex as each host finishes. */
#include "fleet/launches.h"
#include "common/xalloc.h"

#include "fleet/fleet_pb.h"
#include "fleet/launch.h"
#include "fleet/jobs.h"
#include "fleet/provider.h"
#include "common/log.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LAUNCHES_KEEP 16   /* finished launches kept for launch_status */
#define LAUNCHES_ACTIVE 16 /* running at once; more are refused (each is threads) */
#define MAX_WATCHED 32     /* providers with a watch */

typedef struct launch_entry {
    kf_launches *owner;
    uint32_t id;
    int teardown;
    int done;     /* under owner->mu */
    int started;  /* the thread exists and must be joined */
    uint64_t seq; /* when it finished, for pruning */
    kf_fleet *f;  /* owned */
    kf_launch_opts o;
    char *bundle_tar, *known_hosts, *direct, *inventory, *agent_sock; /* owned strings of o */
    int bundle_owned;
    kf_launch_result *res; /* published results, under owner->mu */
    int *host_done;
    pthread_t th;
} launch_entry;

struct kf_launches {
    pthread_mutex_t mu;
    _Atomic int cancel;
    char *control_endpoint, *allow_file, *server_pub_file;
    launch_entry **v;
    size_t n, cap;
    uint32_t next_id;
    uint64_t finished;
    /* The watch of each provider that has one (provider.h), for status. */
    const kf_provider *watched[MAX_WATCHED];
    void *watches[MAX_WATCHED];
    size_t nwatched;
};

static void *watch_of(kf_launches *l, const kf_provider *p)
{
    for (size_t i = 0; i < l->nwatched; i++)
        if (l->watched[i] == p)
            return l->watches[i];
    return NULL;
}

int kf_launches_new(const char *control_endpoint, const char *allow_file,
                    const char *server_pub_file, kf_launches **out, kf_err *err)
{
    kf_launches *l = kf_xcalloc(1, sizeof *l);
    pthread_mutex_init(&l->mu, NULL);
    atomic_init(&l->cancel, 0);
    l->control_endpoint = kf_xstrdup(control_endpoint);
    l->allow_file = allow_file ? kf_xstrdup(allow_file) : NULL;
    l->server_pub_file = server_pub_file ? kf_xstrdup(server_pub_file) : NULL;
    l->next_id = 1;
    const kf_provider *p;
    for (size_t i = 0; (p = kf_provider_at(i)) && l->nwatched < MAX_WATCHED; i++)
        if (p->watch_new) {
            l->watched[l->nwatched] = p;
            l->watches[l->nwatched++] = p->watch_new();
        }
    *out = l;
    return KF_OK;
}

static void entry_free(launch_entry *e)
{
    if (!e)
        return;
    kf_fleet_destroy(&e->f);
    free(e->bundle_tar);
    free(e->known_hosts);
    free(e->direct);
    free(e->inventory);
    free(e->agent_sock);
    free(e->res);
    free(e->host_done);
    free(e);
}

/* A temporary bundle the CLI handed over: the tarball and the directory the
 * CLI made for it (only that one: "kfleet-bundle.*"). */
static void remove_bundle(const char *tar)
{
    if (unlink(tar) != 0 && errno != ENOENT)
        kf_warn("launch.bundle_cleanup", "path=%s error=\"%s\"", tar, strerror(errno));
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", tar);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return;
    *slash = '\0';
    const char *base = strrchr(dir, '/');
    if (base && strncmp(base + 1, "kfleet-bundle.", 14) == 0)
        rmdir(dir);
}

static void entry_on_done(void *ctx, size_t i, const kf_launch_result *r)
{
    launch_entry *e = ctx;
    pthread_mutex_lock(&e->owner->mu);
    if (i < e->f->nhosts && !e->host_done[i]) {
        e->res[i] = *r;
        e->host_done[i] = 1;
    }
    pthread_mutex_unlock(&e->owner->mu);
    /* A watched host is watched from its launch (its agents may still be
     * on their way: the launch's part is done, the provider's is not) to
     * its teardown. */
    const kf_fleet_host *h = i < e->f->nhosts ? &e->f->hosts[i] : NULL;
    void *w = h ? watch_of(e->owner, h->prov) : NULL;
    if (w && e->teardown)
        h->prov->watch_stop(w, h->name);
    else if (w && r->rc == KF_OK)
        h->prov->watch_start(w, h, &e->o);
    kf_info(e->teardown ? "launch.teardown_host" : "launch.host",
            "launch=%u host=%s ok=%d phase=%d msg=\"%s\"", e->id, r->name, r->rc == KF_OK,
            r->failed_at, r->msg);
}

static void *entry_main(void *arg)
{
    launch_entry *e = arg;
    kf_err err;
    kf_err_clear(&err);
    kf_launch_result *r = NULL;
    int rc = e->teardown ? kf_launch_teardown(e->f, &e->o, &r, &err)
                         : kf_launch_run(e->f, &e->o, &r, &err);
    if (!r) {
        /* Failed before any host was tried (the bundle unreadable): each
         * host says so, so the CLI has a line for every one. */
        for (size_t i = 0; i < e->f->nhosts; i++) {
            kf_launch_result x;
            memset(&x, 0, sizeof x);
            snprintf(x.name, sizeof x.name, "%s", e->f->hosts[i].name);
            for (int p = 0; p < KF_PHASE_COUNT; p++)
                x.t[p] = -1;
            kf_launch_fail(&x, e->teardown ? KF_PHASE_STOP : KF_PHASE_UPLOAD, rc, err.msg);
            entry_on_done(e, i, &x);
        }
    }
    free(r);
    if (e->bundle_owned && e->bundle_tar)
        remove_bundle(e->bundle_tar);
    pthread_mutex_lock(&e->owner->mu);
    e->done = 1;
    e->seq = ++e->owner->finished;
    pthread_mutex_unlock(&e->owner->mu);
    kf_info("launch.done", "launch=%u teardown=%d", e->id, e->teardown);
    return NULL;
}

void kf_launches_destroy(kf_launches **self)
{
    kf_launches *l = *self;
    if (!l)
        return;
    atomic_store(&l->cancel, 1);
    for (size_t i = 0; i < l->n; i++) {
        if (l->v[i]->started) {
            pthread_mutex_lock(&l->mu);
            int done = l->v[i]->done;
            pthread_mutex_unlock(&l->mu);
            if (!done)
                kf_info("launch.cancel", "launch=%u waiting for its hosts' SSH calls to end",
                        l->v[i]->id);
            pthread_join(l->v[i]->th, NULL);
        }
        entry_free(l->v[i]);
    }
    free(l->v);
    for (size_t i = 0; i < l->nwatched; i++)
        l->watched[i]->watch_destroy(&l->watches[i]);
    free(l->control_endpoint);
    free(l->allow_file);
    free(l->server_pub_file);
    pthread_mutex_destroy(&l->mu);
    free(l);
    *self = NULL;
}

/* Drops the oldest finished launches beyond LAUNCHES_KEEP (their threads
 * have ended: join is immediate). Called with mu held. */
static void prune(kf_launches *l)
{
    for (;;) {
        size_t nfinished = 0, oldest = SIZE_MAX;
        for (size_t i = 0; i < l->n; i++) {
            if (!l->v[i]->done)
                continue;
            nfinished++;
            if (oldest == SIZE_MAX || l->v[i]->seq < l->v[oldest]->seq)
                oldest = i;
        }
        if (nfinished <= LAUNCHES_KEEP)
            return;
        launch_entry *e = l->v[oldest];
        if (e->started)
            pthread_join(e->th, NULL);
        entry_free(e);
        memmove(&l->v[oldest], &l->v[oldest + 1], (l->n - oldest - 1) * sizeof *l->v);
        l->n--;
    }
}

static const launch_entry *find_overlap(const kf_launches *l, const Kfleet__LaunchRequest *req,
                                        int *same, const char **which)
{
    for (size_t i = 0; i < l->n; i++) {
        const launch_entry *e = l->v[i];
        if (e->done)
            continue;
        size_t common = 0;
        for (size_t k = 0; k < req->n_hosts; k++) {
            const kf_fleet_host *h = kf_fleet_find(e->f, req->hosts[k]->name);
            if (h) {
                common++;
                *which = h->name;
            }
        }
        if (common) {
            *same = common == req->n_hosts && common == e->f->nhosts &&
                    e->teardown == (int)req->teardown;
            return e;
        }
    }
    return NULL;
}

static char *dup_or_null(const char *s)
{
    return s && *s ? kf_xstrdup(s) : NULL;
}

static int check_request(const Kfleet__LaunchRequest *req, kf_err *err)
{
    if (req->n_hosts == 0)
        return kf_err_set(err, KF_EINVAL, "launch: the request has no hosts");
    if (req->n_hosts > KF_FLEET_MAX_HOSTS)
        return kf_err_set(err, KF_EINVAL, "launch: more than %d hosts", KF_FLEET_MAX_HOSTS);
    for (size_t i = 0; i < req->n_hosts; i++) {
        const Kfleet__LaunchHost *h = req->hosts[i];
        if (!h->name || !*h->name || strlen(h->name) >= sizeof((kf_launch_result *)0)->name ||
            !h->host || !*h->host || !h->workdir || !*h->workdir || h->port > 65535)
            return kf_err_set(err, KF_EINVAL,
                              "launch: host %zu needs a name (< 128 bytes), a host, a port and a "
                              "work dir",
                              i + 1);
        for (size_t k = 0; k < i; k++)
            if (strcmp(req->hosts[k]->name, h->name) == 0)
                return kf_err_set(err, KF_EINVAL, "launch: host %s is listed twice", h->name);
        if (h->identity && *h->identity && h->identity[0] != '/')
            return kf_err_set(err, KF_EINVAL,
                              "launch: identity %s of %s is not absolute (the daemon runs in "
                              "another directory)",
                              h->identity, h->name);
    }
    if (req->known_hosts && *req->known_hosts && req->known_hosts[0] != '/')
        return kf_err_set(err, KF_EINVAL, "launch: known_hosts %s is not absolute",
                          req->known_hosts);
    if (!req->teardown) {
        struct stat st;
        if (!req->bundle_tar || req->bundle_tar[0] != '/')
            return kf_err_set(err, KF_EINVAL, "launch: the bundle tarball needs an absolute path");
        if (stat(req->bundle_tar, &st) != 0)
            return kf_err_set(err, KF_EINVAL, "launch: the bundle tarball %s: %s", req->bundle_tar,
                              strerror(errno));
        if (!S_ISREG(st.st_mode))
            return kf_err_set(err, KF_EINVAL, "launch: the bundle tarball %s is not a file",
                              req->bundle_tar);
        if (req->direct && *req->direct && strncmp(req->direct, "tcp://", 6) != 0)
            return kf_err_set(err, KF_EINVAL, "launch: --direct wants tcp://HOST:PORT, not %s",
                              req->direct);
    }
    if (req->attempts > 100)
        return kf_err_set(err, KF_EINVAL, "launch: attempts wants 1..100");
    return KF_OK;
}

/* The request's hosts, each checked by its provider's row. */
static int fleet_of(const Kfleet__LaunchRequest *req, kf_fleet **out, kf_err *err)
{
    kf_fleet *f = kf_xcalloc(1, sizeof *f);
    f->hosts = kf_xcalloc(req->n_hosts, sizeof *f->hosts);
    f->nhosts = req->n_hosts;
    for (size_t i = 0; i < req->n_hosts; i++) {
        int rc = kf_fleet_host_from_pb(req->hosts[i], &f->hosts[i], err);
        if (rc) {
            kf_fleet_destroy(&f);
            return rc;
        }
    }
    *out = f;
    return KF_OK;
}

int kf_launches_start(kf_launches *l, const Kfleet__LaunchRequest *req, uint32_t *id, int *attached,
                      kf_err *err)
{
    *attached = 0;
    kf_fleet *f = NULL;
    int rc = check_request(req, err);
    if (rc || (rc = fleet_of(req, &f, err)))
        return rc;
    pthread_mutex_lock(&l->mu);
    prune(l);
    int same = 0;
    const char *which = "";
    const launch_entry *other = find_overlap(l, req, &same, &which);
    size_t active = 0;
    for (size_t i = 0; i < l->n; i++)
        active += !l->v[i]->done;
    if (other && same) {
        *id = other->id;
        *attached = 1;
        pthread_mutex_unlock(&l->mu);
        kf_fleet_destroy(&f);
        return KF_OK;
    }
    if (other) {
        uint32_t oid = other->id;
        int td = other->teardown;
        pthread_mutex_unlock(&l->mu);
        kf_fleet_destroy(&f);
        return kf_err_set(err, KF_EBUSY,
                          "%s %u of %s is still running in the coordinator; wait for it (`kfleet "
                          "status`) and try again",
                          td ? "teardown" : "launch", oid, which);
    }
    if (active >= LAUNCHES_ACTIVE) {
        pthread_mutex_unlock(&l->mu);
        kf_fleet_destroy(&f);
        return kf_err_set(err, KF_EBUSY, "%zu launches are running; try again when one is done",
                          active);
    }
    launch_entry *e = kf_xcalloc(1, sizeof *e);
    e->owner = l;
    e->id = l->next_id++;
    e->teardown = req->teardown;
    e->f = f;
    e->res = kf_xcalloc(req->n_hosts, sizeof *e->res);
    e->host_done = kf_xcalloc(req->n_hosts, sizeof *e->host_done);
    for (size_t i = 0; i < req->n_hosts; i++) {
        snprintf(e->res[i].name, sizeof e->res[i].name, "%s", req->hosts[i]->name);
        e->res[i].failed_at = -1;
        for (int p = 0; p < KF_PHASE_COUNT; p++)
            e->res[i].t[p] = -1;
    }
    e->bundle_tar = dup_or_null(req->bundle_tar);
    e->known_hosts = dup_or_null(req->known_hosts);
    e->direct = dup_or_null(req->direct);
    e->inventory = dup_or_null(req->inventory);
    e->agent_sock = dup_or_null(req->ssh_auth_sock);
    e->bundle_owned = req->bundle_owned && !req->teardown;
    kf_launch_opts *o = &e->o;
    o->control_endpoint = l->control_endpoint;
    o->allow_file = l->allow_file;
    o->server_pub_file = l->server_pub_file;
    o->known_hosts = e->known_hosts;
    o->accept_new = req->accept_new;
    o->bundle_tar = e->bundle_tar;
    o->direct = e->direct;
    o->attempts = (int)req->attempts;
    o->connect_timeout_s = req->connect_timeout_s;
    o->register_timeout_s = req->register_timeout_s;
    o->min_free_bytes = req->min_free_bytes;
    o->need_gpu = req->need_gpu;
    snprintf(o->min_glibc, sizeof o->min_glibc, "%s", req->min_glibc ? req->min_glibc : "");
    o->purge = req->purge;
    o->agent_sock = e->agent_sock;
    o->on_done = entry_on_done;
    o->on_done_ctx = e;
    o->cancel = &l->cancel;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->v = kf_xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = e;
    if (pthread_create(&e->th, NULL, entry_main, e) != 0) {
        l->n--;
        pthread_mutex_unlock(&l->mu);
        entry_free(e);
        return kf_err_set(err, KF_EIO, "cannot start the launch's thread");
    }
    e->started = 1;
    *id = e->id;
    pthread_mutex_unlock(&l->mu);
    kf_info(e->teardown ? "launch.teardown" : "launch.start",
            "launch=%u hosts=%zu inventory=%s bundle=%s", e->id, e->f->nhosts,
            e->inventory ? e->inventory : "", e->bundle_tar ? e->bundle_tar : "");
    return KF_OK;
}

int kf_launches_state(kf_launches *l, uint32_t id, Kfleet__LaunchState **out, kf_err *err)
{
    pthread_mutex_lock(&l->mu);
    launch_entry *e = NULL;
    for (size_t i = 0; i < l->n && !e; i++)
        if (l->v[i]->id == id)
            e = l->v[i];
    if (!e) {
        pthread_mutex_unlock(&l->mu);
        return kf_err_set(err, KF_ENOTFOUND,
                          "no launch %u in this coordinator (finished long ago, or it restarted)",
                          id);
    }
    size_t n = e->f->nhosts;
    Kfleet__LaunchState *st = kf_xcalloc(1, sizeof *st);
    kfleet__launch_state__init(st);
    st->id = e->id;
    st->done = e->done;
    st->teardown = e->teardown;
    st->hosts = kf_xcalloc(n, sizeof *st->hosts);
    st->n_hosts = n;
    for (size_t i = 0; i < n; i++) {
        const kf_launch_result *r = &e->res[i];
        Kfleet__LaunchHostState *h = kf_xcalloc(1, sizeof *h);
        kfleet__launch_host_state__init(h);
        h->t = kf_xcalloc(KF_PHASE_COUNT, sizeof *h->t);
        h->name = kf_xstrdup(r->name);
        h->msg = kf_xstrdup(r->msg);
        h->done = e->host_done[i];
        h->rc = r->rc;
        h->failed_at = r->failed_at;
        h->n_t = KF_PHASE_COUNT;
        for (int p = 0; p < KF_PHASE_COUNT; p++)
            h->t[p] = r->t[p];
        h->tries = (uint32_t)(r->tries > 0 ? r->tries : 0);
        st->hosts[i] = h;
    }
    pthread_mutex_unlock(&l->mu);
    *out = st;
    return KF_OK;
}

void kf_launches_free_state(Kfleet__LaunchState **st)
{
    Kfleet__LaunchState *s = *st;
    if (!s)
        return;
    for (size_t i = 0; i < s->n_hosts; i++) {
        free(s->hosts[i]->name);
        free(s->hosts[i]->msg);
        free(s->hosts[i]->t);
        free(s->hosts[i]);
    }
    free(s->hosts);
    free(s);
    *st = NULL;
}

void kf_launches_status(kf_launches *l, Kfleet__StatusReply *st)
{
    for (size_t i = 0; i < l->nwatched; i++)
        if (l->watched[i]->status)
            l->watched[i]->status(l->watches[i], st);
}

void kf_launches_status_free(kf_launches *l, Kfleet__StatusReply *st)
{
    (void)l; /* every row's jobs are one kind of message, freed alike */
    kf_jobs_free(st);
}
