/* provider_slurm — the slurm row of provider.h's table: the host is a
 * cluster's login node, reached over SSH, and its agents are Slurm jobs,
 * one per node. Its files: fleet_slurm.c (the inventory's slurm: block),
 * launch_slurm.c (launch, teardown, the squeue watch loop), slurm_jobs.c
 * (squeue's output), slurm_watch.c (the daemon's watches, for status),
 * slurm_sbatch.c (the sbatch options a block may pass), slurm_shape.proto
 * (the block as the daemon gets it). docs/providers.md is the user's side. */
#include "fleet/provider.h"
#include "common/xalloc.h"
#include "fleet/fleet.h"
#include "fleet/fleet_slurm.h"
#include "fleet/slurm_watch.h"
#include "fleetpb/slurm_shape.pb-c.h"

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

static char *or_null(const char *s)
{
    return s && *s ? kf_xstrdup(s) : NULL;
}

/* The block goes to the daemon as LaunchHost.block: a SlurmShape
 * (slurm_shape.proto) packed here and unpacked by from_pb, bytes to the
 * rest of kfleet. */
static void to_pb(const kf_fleet_host *h, Kfleet__LaunchHost *x)
{
    const kf_fleet_slurm *sl = h->block;
    if (!sl)
        return;
    Kfleet__SlurmShape y = KFLEET__SLURM_SHAPE__INIT;
    y.nodes = (uint32_t)sl->nodes;
    y.partition = (char *)(sl->partition ? sl->partition : "");
    y.gres = (char *)(sl->gres ? sl->gres : "");
    y.time = (char *)(sl->time ? sl->time : "");
    y.account = (char *)(sl->account ? sl->account : "");
    y.relay_host = (char *)(sl->relay_host ? sl->relay_host : "");
    y.sbatch = sl->sbatch;
    y.n_sbatch = sl->nsbatch;
    y.signal_before_s = (uint32_t)sl->signal_before_s;
    x->block.len = kfleet__slurm_shape__get_packed_size(&y);
    x->block.data = kf_xmalloc(x->block.len ? x->block.len : 1);
    kfleet__slurm_shape__pack(&y, x->block.data);
}

static void free_pb(Kfleet__LaunchHost *x)
{
    free(x->block.data);
    x->block.data = NULL;
    x->block.len = 0;
}

static int from_pb(const Kfleet__LaunchHost *x, kf_fleet_host *h, kf_err *err)
{
    static const Kfleet__SlurmShape none = KFLEET__SLURM_SHAPE__INIT;
    Kfleet__SlurmShape *got = NULL;
    if (x->block.len && !(got = kfleet__slurm_shape__unpack(NULL, x->block.len, x->block.data)))
        return kf_err_set(err, KF_EINVAL, "launch: the slurm block of %s does not decode", h->name);
    const Kfleet__SlurmShape *y = got ? got : &none;
    if (y->nodes > KF_SLURM_MAX_NODES || y->n_sbatch > 64 || y->signal_before_s > 65535) {
        kfleet__slurm_shape__free_unpacked(got, NULL);
        return kf_err_set(err, KF_EINVAL,
                          "launch: the slurm shape of %s is out of range (nodes <= %d)", h->name,
                          KF_SLURM_MAX_NODES);
    }
    kf_fleet_slurm *sl = kf_xcalloc(1, sizeof *sl);
    sl->nodes = y->nodes ? (int)y->nodes : 1;
    sl->partition = or_null(y->partition);
    sl->gres = or_null(y->gres);
    sl->time = or_null(y->time);
    /* The seconds are the CLI's parse of the same text, made again here. */
    sl->time_s = sl->time ? kf_fleet_slurm_seconds(sl->time) : 0;
    if (sl->time_s < 0)
        sl->time_s = 0;
    sl->account = or_null(y->account);
    sl->relay_host = or_null(y->relay_host);
    sl->signal_before_s = (int)y->signal_before_s;
    sl->sbatch = kf_xcalloc(y->n_sbatch ? y->n_sbatch : 1, sizeof *sl->sbatch);
    for (size_t i = 0; i < y->n_sbatch; i++)
        sl->sbatch[i] = kf_xstrdup(y->sbatch[i]);
    sl->nsbatch = y->n_sbatch;
    h->block = sl;
    kfleet__slurm_shape__free_unpacked(got, NULL);
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
