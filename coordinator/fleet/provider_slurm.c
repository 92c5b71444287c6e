/* provider_slurm — the slurm row of provider.h's table: the host is a
 * cluster's login node, reached over SSH, and its agents are Slurm jobs,
 * one per node. Its files: fleet_slurm.c (the inventory's slurm: block),
 * launch_slurm.c (launch, teardown, the squeue watch loop), slurm_jobs.c
 * (squeue's output), slurm_watch.c (the daemon's watches, for status),
 * sbatch_opts.c (the sbatch options a block may pass). docs/providers.md
 * is the user's side. */
#include "fleet/provider.h"
#include "common/xalloc.h"
#include "fleet/fleet.h"
#include "fleet/fleet_slurm.h"
#include "fleet/slurm_watch.h"

#include <stdlib.h>
#include <string.h>

static int parse(kf_yaml *y, const yaml_node_t *n, void **block)
{
    kf_fleet_slurm *s = NULL;
    int rc = kf_fleet_slurm_parse(y, n, &s);
    *block = s;
    return rc;
}

static void *dup(const void *block)
{
    return kf_fleet_slurm_dup(block);
}

static void free_block(void **block)
{
    kf_fleet_slurm *s = *block;
    kf_fleet_slurm_free(&s);
    *block = NULL;
}

static char *or_empty(const char *s)
{
    return kf_xstrdup(s ? s : "");
}

static char *or_null(const char *s)
{
    return s && *s ? kf_xstrdup(s) : NULL;
}

static void to_pb(const kf_fleet_host *h, Kfleet__LaunchHost *x)
{
    const kf_fleet_slurm *sl = h->block;
    if (!sl)
        return;
    Kfleet__SlurmShape *y = kf_xmalloc(sizeof *y);
    kfleet__slurm_shape__init(y);
    y->nodes = (uint32_t)sl->nodes;
    y->partition = or_empty(sl->partition);
    y->gres = or_empty(sl->gres);
    y->time = or_empty(sl->time);
    y->account = or_empty(sl->account);
    y->relay_host = or_empty(sl->relay_host);
    y->sbatch = kf_xcalloc(sl->nsbatch ? sl->nsbatch : 1, sizeof *y->sbatch);
    for (size_t i = 0; i < sl->nsbatch; i++)
        y->sbatch[i] = kf_xstrdup(sl->sbatch[i]);
    y->n_sbatch = sl->nsbatch;
    y->signal_before_s = (uint32_t)sl->signal_before_s;
    x->slurm = y;
}

static void free_pb(Kfleet__LaunchHost *x)
{
    Kfleet__SlurmShape *y = x->slurm;
    if (!y)
        return;
    free(y->partition);
    free(y->gres);
    free(y->time);
    free(y->account);
    free(y->relay_host);
    for (size_t i = 0; i < y->n_sbatch; i++)
        free(y->sbatch[i]);
    free(y->sbatch);
    free(y);
    x->slurm = NULL;
}

static int from_pb(const Kfleet__LaunchHost *x, kf_fleet_host *h, kf_err *err)
{
    static const Kfleet__SlurmShape none = KFLEET__SLURM_SHAPE__INIT;
    const Kfleet__SlurmShape *y = x->slurm ? x->slurm : &none;
    if (y->nodes > KF_SLURM_MAX_NODES || y->n_sbatch > 64 || y->signal_before_s > 65535)
        return kf_err_set(err, KF_EINVAL,
                          "launch: the slurm shape of %s is out of range (nodes <= %d)", h->name,
                          KF_SLURM_MAX_NODES);
    kf_fleet_slurm *sl = kf_xcalloc(1, sizeof *sl);
    sl->nodes = y->nodes ? (int)y->nodes : 1;
    sl->partition = or_null(y->partition);
    sl->gres = or_null(y->gres);
    sl->time = or_null(y->time);
    sl->account = or_null(y->account);
    sl->relay_host = or_null(y->relay_host);
    sl->signal_before_s = (int)y->signal_before_s;
    sl->sbatch = kf_xcalloc(y->n_sbatch ? y->n_sbatch : 1, sizeof *sl->sbatch);
    for (size_t i = 0; i < y->n_sbatch; i++)
        sl->sbatch[i] = kf_xstrdup(y->sbatch[i]);
    sl->nsbatch = y->n_sbatch;
    h->block = sl;
    return KF_OK;
}

static int nagents(const kf_fleet_host *h)
{
    const kf_fleet_slurm *sl = h->block;
    return sl ? sl->nodes : 1;
}

static void *watch_new(void)
{
    return kf_slurm_watches_new();
}

static void watch_destroy(void **w)
{
    kf_slurm_watches *x = *w;
    kf_slurm_watches_destroy(&x);
    *w = NULL;
}

static void watch_start(void *w, const kf_fleet_host *h, const kf_launch_opts *o)
{
    kf_slurm_watches_start(w, h, o);
}

static void watch_stop(void *w, const char *name)
{
    kf_slurm_watches_stop(w, name);
}

static void status(void *w, Kfleet__StatusReply *st)
{
    kf_slurm_watches_jobs(w, "slurm", st);
}

const kf_provider kf_provider_slurm = {
    .name = "slurm",
    .what = "a cluster's login node",
    .block_key = "slurm",
    .parse = parse,
    .dup = dup,
    .free = free_block,
    .to_pb = to_pb,
    .free_pb = free_pb,
    .from_pb = from_pb,
    .nagents = nagents,
    .launch = launch_slurm_host,
    .teardown = launch_slurm_teardown,
    .watch_new = watch_new,
    .watch_destroy = watch_destroy,
    .watch_start = watch_start,
    .watch_stop = watch_stop,
    .status = status,
};
