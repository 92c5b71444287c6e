/* fleet_pb — see fleet_pb.h. */
#include "fleet/fleet_pb.h"
#include "common/xalloc.h"
#include "fleet/provider.h"

#include <stdlib.h>
#include <string.h>

static char *dup_or_empty(const char *s)
{
    return kf_xstrdup(s ? s : "");
}

static char *dup_or_null(const char *s)
{
    return s && *s ? kf_xstrdup(s) : NULL;
}

void kf_fleet_host_to_pb(const kf_fleet_host *h, Kfleet__LaunchHost *x)
{
    kfleet__launch_host__init(x);
    x->name = dup_or_empty(h->name);
    x->host = dup_or_empty(h->host);
    x->port = (uint32_t)(h->port ? h->port : 22);
    x->user = dup_or_empty(h->user);
    x->identity = dup_or_empty(h->identity);
    x->workdir = dup_or_empty(h->workdir);
    x->provider = dup_or_empty(h->provider);
    x->price = h->price; /* the agent the daemon starts is given --price */
    if (h->prov && h->prov->to_pb)
        h->prov->to_pb(h, x);
}

void kf_fleet_host_pb_release(Kfleet__LaunchHost *x)
{
    const kf_provider *p = kf_provider_find(x->provider);
    if (p && p->free_pb)
        p->free_pb(x);
    free(x->name);
    free(x->host);
    free(x->user);
    free(x->identity);
    free(x->workdir);
    free(x->provider);
    kfleet__launch_host__init(x);
}

int kf_fleet_host_from_pb(const Kfleet__LaunchHost *x, kf_fleet_host *h, kf_err *err)
{
    const char *name = x->provider && *x->provider ? x->provider : "ssh";
    h->prov = kf_provider_find(name);
    if (!h->prov || h->prov->internal)
        return kf_err_set(err, KF_EINVAL,
                          "launch: host %s has provider '%.40s', which this "
                          "coordinator does not know; run the same kfleet version on both sides",
                          x->name ? x->name : "", name);
    h->provider = kf_xstrdup(name);
    h->name = dup_or_null(x->name);
    h->host = dup_or_null(x->host);
    h->port = x->port ? (int)x->port : 22;
    h->user = dup_or_null(x->user);
    h->identity = dup_or_null(x->identity);
    h->workdir = dup_or_null(x->workdir);
    h->price = x->price > 0 ? x->price : 0;
    return h->prov->from_pb ? h->prov->from_pb(x, h, err) : KF_OK;
}
