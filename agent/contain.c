/* contain — see contain.h. */
#include "agent/contain.h"

#include "agent/kcache.h"
#include "agent/results.h"
#include "common/execenv.h"
#include "common/log.h"
#include "common/taskkind.h"
#include "common/util.h"
#include "common/xalloc.h"
#include "runner/cgroup.h"
#include "runner/channel.h"
#include "runner/confine.h"
#include "runner/contain.h"
#include "runner/sandbox.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GIB (UINT64_C(1) << 30)
#define MIB (UINT64_C(1) << 20)

/* A setting from the agent's environment: unset (the default), 0 (off) or
 * a value. */
typedef struct setting {
    int set;
    uint64_t v;
} setting;

typedef struct kcontain {
    kf_cgroups *cgs;
    int mounts; /* the agent has a mount namespace of its own */
    char mounts_why[256];
    setting memory, pids, tmpfs, cache;
    int off; /* KF_CONTAIN=0: no group, no mount, no quota */
    uint64_t memory_default, pids_default;
    uint32_t seq;
} kcontain;

typedef struct kcrunner {
    kf_cgroup *cg;
    kcache *kc;
    kf_contain_plan plan;
    int exited; /* contain_exited ran */
    /* The group's counts when the runner's last Result came: a serving
     * runner's next task is charged only what happened after. */
    uint64_t oom_kills0, pids_refused0;
} kcrunner;

static int read_setting(const char *var, int count, setting *out, kf_err *err)
{
    const char *v = getenv(var);
    memset(out, 0, sizeof *out);
    if (!v || !*v)
        return KF_OK;
    out->set = 1;
    if (count) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(v, &end, 10);
        if (!*end && errno == 0 && isdigit((unsigned char)*v)) {
            out->v = n;
            return KF_OK;
        }
    } else if (kf_parse_size(v, &out->v) == KF_OK) {
        return KF_OK;
    }
    return kf_err_set(err, KF_EINVAL,
                      "%s is '%.40s' in the agent's environment; it takes %s, or 0 "
                      "to leave the limit off",
                      var, v, count ? "a number" : "a size like 16G or 512M");
}

int contain_init(kf_agent *a, kf_err *err)
{
    kcontain *c = kf_xcalloc(1, sizeof *c);
    a->contain = c;
    int rc;
    if ((rc = read_setting("KF_RUNNER_MEMORY", 0, &c->memory, err)) ||
        (rc = read_setting("KF_RUNNER_PIDS", 1, &c->pids, err)) ||
        (rc = read_setting("KF_RUNNER_TMPFS", 0, &c->tmpfs, err)) ||
        (rc = read_setting("KF_RUNNER_CACHE", 0, &c->cache, err)))
        return rc;
    const char *off = getenv("KF_CONTAIN");
    if (off && strcmp(off, "0") == 0) { /* a before/after comparison */
        snprintf(c->mounts_why, sizeof c->mounts_why, "KF_CONTAIN=0");
        c->off = 1;
        return KF_OK;
    }
    /* Its own mount namespace first (single-threaded), then its groups
     * (which may move it into a leaf of its own). */
    int want_mounts = !(c->tmpfs.set && !c->tmpfs.v) || !(c->cache.set && !c->cache.v);
    kf_err merr;
    if (want_mounts && kf_contain_private_mounts(&merr) == KF_OK)
        c->mounts = 1;
    else
        snprintf(c->mounts_why, sizeof c->mounts_why, "%s",
                 want_mounts ? merr.msg : "KF_RUNNER_TMPFS=0 and KF_RUNNER_CACHE=0");
    c->cgs = kf_cgroups_new();
    kcache_sweep(a->workdir);
    return KF_OK;
}

/* s's value, else def; 0 when s says off. */
static uint64_t value(const setting *s, uint64_t def)
{
    return s->set ? s->v : def;
}

/* The kernel cache's quota of a runner with memory limit mem: 2 GiB, at
 * most a quarter of mem (a tmpfs is memory), unless set. */
static uint64_t cache_quota(const kcontain *c, uint64_t mem)
{
    return value(&c->cache, mem && mem / 4 < 2 * GIB ? mem / 4 : 2 * GIB);
}

/* Whether path is a file in /dev/shm (by its own name or its folder's). */
static int on_shm(const char *path)
{
    if (!path || !*path)
        return 0;
    if (strncmp(path, "/dev/shm/", 9) == 0)
        return 1;
    char dir[PATH_MAX], real[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    return realpath(dir, real) &&
           (strcmp(real, "/dev/shm") == 0 || strncmp(real, "/dev/shm/", 9) == 0);
}

void contain_ready(kf_agent *a)
{
    kcontain *c = a->contain;
    uint64_t node = kf_cgroups_memory(c->cgs);
    uint32_t slots = (uint32_t)a->info->n_gpus + (a->info->cpu_slots ? a->info->cpu_slots : 1);
    uint64_t share = node / 4 * 3 / slots, floor = node / 4 * 3 < GIB ? node / 4 * 3 : GIB;
    c->memory_default = share > floor ? share : floor;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    c->pids_default = cpus > 128 ? (uint64_t)cpus * 32 : 4096;
    /* Under an outer limit (a container's pids.max), the runners together
     * take at most half of it: a fork bomb in each still leaves the agent,
     * a build and the node's own processes the other half. */
    uint64_t outer = kf_cgroups_pids(c->cgs), part = outer / 2 / slots;
    if (outer && part < c->pids_default)
        c->pids_default = part > 64 ? part : 64;
    unsigned have = kf_cgroups_have(c->cgs);
    uint64_t mem = value(&c->memory, c->memory_default);
    kf_info("agent.contain",
            "groups=\"%s\" memory=%.2fGiB pids=%" PRIu64 " tmpfs=%.2fGiB cache=%.2fGiB mounts=%d",
            kf_cgroups_describe(c->cgs), (have & KF_CG_MEMORY) ? (double)mem / GIB : 0.0,
            (have & KF_CG_PIDS) ? value(&c->pids, c->pids_default) : 0,
            c->mounts ? (double)value(&c->tmpfs, (mem ? mem : node) / 4) / GIB : 0.0,
            (double)cache_quota(c, mem) / GIB, c->mounts);
    char miss[1536] = "";
    const char *cg = c->off ? "containment is off (KF_CONTAIN=0)" : kf_cgroups_missing(c->cgs);
    if (*cg)
        snprintf(miss, sizeof miss, "%s", cg);
    if (!c->mounts && !c->off)
        snprintf(miss + strlen(miss), sizeof miss - strlen(miss),
                 "%sno private /dev/shm or TMPDIR for runners and the kernels' caches bounded only "
                 "after each runner (%s)",
                 *miss ? "; " : "", c->mounts_why);
    /* Each runner has a /dev/shm of its own: a host-profile lock there
     * (runner/hostlock.h) would be a file per runner, locking nothing. */
    if (c->mounts && !(c->tmpfs.set && !c->tmpfs.v) && on_shm(a->host_lock))
        kf_warn("agent.host_lock",
                "path=%s error=\"each runner has a private /dev/shm, so this lock would keep no "
                "two host profiles apart; name a file outside /dev/shm in KF_HOST_LOCK\"",
                a->host_lock);
    if (!*miss)
        return;
    kf_warn("agent.contain", "missing=\"%s\"", miss);
    size_t n = strlen(a->sandbox_missing);
    snprintf(a->sandbox_missing + n, sizeof a->sandbox_missing - n, "%snot contained: %s",
             n ? "; " : "", miss);
}

void contain_fini(kf_agent *a)
{
    kcontain *c = a->contain;
    if (!c)
        return;
    kf_cgroups_destroy(&c->cgs);
    free(c);
    a->contain = NULL;
}

/* The runner's memory limit: its sweep's (at most the node's), else the
 * agent's. */
static uint64_t memory_of(const kcontain *c, const Kfleet__TaskSpec *sp)
{
    uint64_t node = kf_cgroups_memory(c->cgs);
    if (sp && sp->memory_limit_bytes)
        return node && sp->memory_limit_bytes > node ? node : sp->memory_limit_bytes;
    return value(&c->memory, c->memory_default);
}

/* Whether ta's runner gets its kernel's cache (confine.c grants it to a
 * sandboxed runner that runs a built kernel). */
static int has_cache(const Kfleet__TaskSpec *sp)
{
    return sp && kf_confine_kcache_dir("", sp->kernel_hash, NULL, 0) == 0 &&
           !kf_task_kind_at(sp->kind)->builds && kf_sandbox_enabled();
}

/* r's scratch dir: WORKDIR/tmp/TASK-ATTEMPT, or .N after it while another
 * runner has that one (a candidate's runner after the one that computed
 * its references, of the same attempt: that one's end removes its dir and
 * unmounts what the agent mounted there). */
static void scratch_dir(const kf_agent *a, krunner *r, const Kfleet__TaskAssign *ta)
{
    for (unsigned k = 0;; k++) {
        int n = snprintf(r->dir, sizeof r->dir, "%s/tmp/0x%llx-%u", a->workdir,
                         (unsigned long long)ta->task_id, ta->attempt);
        if (k && n > 0 && (size_t)n < sizeof r->dir)
            snprintf(r->dir + n, sizeof r->dir - (size_t)n, ".%u", k);
        size_t i = 0;
        while (i < a->nrunners && strcmp(a->runners[i]->dir, r->dir) != 0)
            i++;
        if (i == a->nrunners || k > a->nrunners)
            return;
    }
}

int contain_runner(kf_agent *a, krunner *r, const Kfleet__TaskAssign *ta, kf_err *err)
{
    kcontain *c = a->contain;
    kcrunner *k = kf_xcalloc(1, sizeof *k);
    r->cont = k;
    scratch_dir(a, r, ta);
    int rc = kf_mkdirs(r->dir, 0700, err);
    if (rc != KF_OK)
        return rc;
    unsigned have = kf_cgroups_have(c->cgs);
    uint64_t mem = memory_of(c, ta->spec), node = kf_cgroups_memory(c->cgs);
    if (have & KF_CG_KILL) {
        char name[96];
        snprintf(name, sizeof name, "r%u-%llx-%u", ++c->seq, (unsigned long long)ta->task_id,
                 ta->attempt);
        k->cg = kf_cgroup_new(c->cgs, name, (have & KF_CG_MEMORY) ? mem : 0,
                              (have & KF_CG_PIDS) ? value(&c->pids, c->pids_default) : 0, err);
        if (!k->cg)
            return err->code ? err->code : KF_EIO;
    }
    uint64_t tmpfs = value(&c->tmpfs, (mem ? mem : node) / 4);
    char tmpdir[PATH_MAX + 8];
    snprintf(tmpdir, sizeof tmpdir, "%s/tmp", r->dir);
    if (kf_sandbox_enabled() && (rc = kf_mkdirs(tmpdir, 0700, err)) != KF_OK)
        return rc;
    if (has_cache(ta->spec) && !c->off) {
        uint64_t quota = cache_quota(c, mem);
        if (quota) {
            k->kc = kcache_open(a->workdir, ta->spec->kernel_hash, r->dir, quota, c->mounts, err);
            if (!k->kc)
                return err->code ? err->code : KF_EIO;
        }
    }
    kf_contain_plan_make(&k->plan, k->cg, c->mounts, tmpfs, kf_sandbox_enabled() ? tmpdir : NULL);
    return KF_OK;
}

void contain_child(const krunner *r)
{
    const char *what = "";
    if (r->cont && kf_contain_enter(&r->cont->plan, &what) != 0) {
        kf_exec_say(KF_RUNNER_FD_LOG, "cannot contain the runner: cannot ", what,
                    kf_exec_why(errno));
        _exit(127);
    }
}

void contain_warm(const krunner *r, kf_warm_req *req)
{
    if (r->cont)
        req->contain = r->cont->plan;
}

void contain_exited(kf_agent *a, krunner *r)
{
    (void)a;
    kcrunner *k = r->cont;
    if (!k || k->exited || !k->cg)
        return;
    k->exited = 1;
    kf_cgroup_events ev;
    kf_cgroup_events_get(k->cg, &ev);
    r->cg_memory_max = ev.memory_max;
    r->cg_oom_kills = ev.oom_kills > k->oom_kills0 ? ev.oom_kills - k->oom_kills0 : 0;
    r->cg_memory_hits = ev.memory_hits;
    r->cg_pids_max = ev.pids_max;
    r->cg_pids_refused =
        ev.pids_refused > k->pids_refused0 ? ev.pids_refused - k->pids_refused0 : 0;
    int left = kf_cgroup_kill(k->cg);
    if (left != 0)
        kf_info("runner.group_killed", "task=0x%llx pid=%d left=%d", (unsigned long long)r->task_id,
                (int)r->pid, left);
}

/* Whether pid is a live process (not a zombie). */
static int alive(pid_t pid)
{
    char st;
    return kf_cgroup_pid_stat(pid, &st, NULL) == 0 && st != 'Z' && st != 'X';
}

void contain_relay(kf_agent *a, krunner *r, Kfleet__Envelope *env)
{
    Kfleet__Result *res = env->result;
    kcrunner *k = r->cont;
    char *was = res->error, why[1024];
    /* Only while the runner lives can its tree be told apart: once it has
     * exited, every process it left is reparented, and all go with its
     * group at its reaping. */
    int n = k && k->cg && alive(r->pid) ? kf_cgroup_kill_orphans(k->cg, r->pid) : 0;
    if (n > 0) {
        kf_warn("runner.orphans", "task=0x%llx pid=%d killed=%d", (unsigned long long)r->task_id,
                (int)r->pid, n);
        if (res->state == KFLEET__TASK_STATE__SUCCEEDED) {
            snprintf(why, sizeof why,
                     "the kernel left %d process%s running after its task, outside its runner's "
                     "process tree (a child that called setsid, a daemon): kfleet killed %s. A "
                     "kernel's processes must end with its task",
                     n, n == 1 ? "" : "es", n == 1 ? "it" : "them");
            res->state = KFLEET__TASK_STATE__FAILED;
            res->infra = 0;
            res->runner_stays = 0;
            res->error = why;
        }
    }
    /* Its cache kept before its Result goes out: the coordinator may send
     * the kernel's next task at once, to a runner started before this one
     * has exited (kcache.h). */
    if (k && res->state == KFLEET__TASK_STATE__SUCCEEDED && !res->runner_stays)
        kcache_keep(k->kc);
    results_relay(a, r, env);
    res->error = was; /* the decoder's to free */
    if (k && k->cg) {
        kf_cgroup_events ev;
        kf_cgroup_events_get(k->cg, &ev);
        k->oom_kills0 = ev.oom_kills;
        k->pids_refused0 = ev.pids_refused;
    }
}

void contain_end(kf_agent *a, krunner *r)
{
    (void)a;
    kcrunner *k = r->cont;
    if (!k)
        return;
    /* Nothing of it writes its cache while the cache is kept; the group
     * goes after the tmpfs charged to it. */
    kf_cgroup_kill(k->cg);
    kcache_close(&k->kc);
    kf_cgroup_destroy(&k->cg);
    free(k);
    r->cont = NULL;
}
