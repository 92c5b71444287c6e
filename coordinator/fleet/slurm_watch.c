/* slurm_watch — kf_slurm_watches (slurm_watch.h). A stopped watch's thread
 * ends at its next check (at most one SSH call, bounded by its timeout) and
 * is joined when it is replaced or at destroy, never under the mutex. */
#include "fleet/slurm_watch.h"
#include "common/xalloc.h"

#include "common/log.h"
#include "common/util.h"
#include "fleet/fleet_slurm.h"
#include "fleet/jobs.h"
#include "fleet/slurm_jobs.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define WATCH_PERIOD_S 3.0
#define MAX_WATCHES 256

typedef struct watch {
    kf_slurm_watches *owner;
    kf_fleet_host h; /* owned copy (kf_fleet_host_copy) */
    kf_launch_opts o;
    char *known_hosts, *agent_sock;
    _Atomic int stop;
    pthread_t th;
    int stopped;        /* under owner->mu: no longer shown */
    kf_slurm_job *jobs; /* under owner->mu */
    size_t njobs;
    uint64_t seen_ns;
    char error[512];
} watch;

struct kf_slurm_watches {
    pthread_mutex_t mu;
    watch **v;
    size_t n;
};

kf_slurm_watches *kf_slurm_watches_new(void)
{
    kf_slurm_watches *w = kf_xcalloc(1, sizeof *w);
    pthread_mutex_init(&w->mu, NULL);
    w->v = kf_xcalloc(MAX_WATCHES, sizeof *w->v);
    return w;
}

static void on_view(void *ctx, const kf_slurm_job *jobs, size_t n, const char *error)
{
    watch *x = ctx;
    pthread_mutex_lock(&x->owner->mu);
    if (!error) {
        free(x->jobs);
        x->jobs = n ? kf_xmalloc(n * sizeof *jobs) : NULL;
        if (n)
            memcpy(x->jobs, jobs, n * sizeof *jobs);
        x->njobs = n;
    }
    if (!error)
        x->seen_ns = kf_now_ns();
    snprintf(x->error, sizeof x->error, "%s", error ? error : "");
    pthread_mutex_unlock(&x->owner->mu);
    if (error)
        kf_warn("slurm.watch", "host=%s error=\"%s\"", x->h.name, error);
}

static void *watch_main(void *arg)
{
    watch *x = arg;
    kf_launch_slurm_watch(&x->h, &x->o, WATCH_PERIOD_S, on_view, x);
    return NULL;
}

static char *dup(const char *s)
{
    return s ? kf_xstrdup(s) : NULL;
}

static void watch_release(watch *x)
{
    kf_fleet_host_release(&x->h);
    free(x->known_hosts);
    free(x->agent_sock);
    free(x->jobs);
    free(x);
}

static void watch_free(watch *x)
{
    atomic_store(&x->stop, 1);
    pthread_join(x->th, NULL);
    watch_release(x);
}

/* Takes the watch of name out of the table (NULL when none). Under mu. */
static watch *take(kf_slurm_watches *w, const char *name)
{
    for (size_t i = 0; i < w->n; i++) {
        if (strcmp(w->v[i]->h.name, name) != 0)
            continue;
        watch *x = w->v[i];
        w->v[i] = w->v[--w->n];
        return x;
    }
    return NULL;
}

void kf_slurm_watches_start(kf_slurm_watches *w, const kf_fleet_host *h, const kf_launch_opts *o)
{
    watch *x = kf_xcalloc(1, sizeof *x);
    x->owner = w;
    kf_fleet_host_copy(&x->h, h);
    x->known_hosts = dup(o->known_hosts);
    x->agent_sock = dup(o->agent_sock);
    x->o.known_hosts = x->known_hosts;
    x->o.agent_sock = x->agent_sock;
    x->o.attempts = 1;
    x->o.connect_timeout_s = o->connect_timeout_s;
    x->o.cancel = &x->stop;
    atomic_init(&x->stop, 0);
    pthread_mutex_lock(&w->mu);
    watch *old = take(w, h->name);
    int full = w->n == MAX_WATCHES;
    if (!full)
        w->v[w->n++] = x;
    pthread_mutex_unlock(&w->mu);
    if (old)
        watch_free(old);
    if (full) {
        kf_warn("slurm.watch", "host=%s error=\"more than %d Slurm hosts watched\"", h->name,
                MAX_WATCHES);
        watch_release(x);
        return;
    }
    if (pthread_create(&x->th, NULL, watch_main, x) != 0) {
        kf_warn("slurm.watch", "host=%s error=\"cannot start a thread\"", h->name);
        pthread_mutex_lock(&w->mu);
        take(w, h->name);
        pthread_mutex_unlock(&w->mu);
        watch_release(x);
    }
}

void kf_slurm_watches_stop(kf_slurm_watches *w, const char *name)
{
    pthread_mutex_lock(&w->mu);
    watch *x = take(w, name);
    pthread_mutex_unlock(&w->mu);
    if (x)
        watch_free(x);
}

void kf_slurm_watches_jobs(kf_slurm_watches *w, const char *provider, Kfleet__StatusReply *st)
{
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < w->n; i++) {
        const watch *x = w->v[i];
        for (size_t j = 0; j < x->njobs; j++) {
            const kf_slurm_job *sj = &x->jobs[j];
            kf_jobs_add(st, &(kf_jobs_row){.provider = provider,
                                           .host = x->h.name,
                                           .agent_id = sj->agent_id,
                                           .job_id = sj->job_id,
                                           .state = sj->state,
                                           .reason = sj->reason,
                                           .seen_ns = x->seen_ns});
        }
    }
    pthread_mutex_unlock(&w->mu);
}

void kf_slurm_watches_destroy(kf_slurm_watches **self)
{
    kf_slurm_watches *w = *self;
    if (!w)
        return;
    for (size_t i = 0; i < w->n; i++)
        atomic_store(&w->v[i]->stop, 1);
    for (size_t i = 0; i < w->n; i++)
        watch_free(w->v[i]);
    free(w->v);
    pthread_mutex_destroy(&w->mu);
    free(w);
    *self = NULL;
}
