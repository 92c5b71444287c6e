/* fleet_host — the life of one inventory host (fleet.h's
 * kf_fleet_host_copy and kf_fleet_host_release). Apart from fleet.c so
 * that a provider's own code (a provider's watch of its jobs keeps
 * copies) can use them
 * without depending on the parser that looks providers up. */
#include "fleet/fleet.h"
#include "common/xalloc.h"
#include "fleet/provider.h"

#include <stdlib.h>

void kf_fleet_host_release(kf_fleet_host *h)
{
    free(h->name);
    free(h->provider);
    free(h->host);
    free(h->user);
    free(h->identity);
    free(h->workdir);
    free(h->ssh_alias);
    if (h->block && h->prov && h->prov->free)
        h->prov->free(&h->block);
    for (size_t i = 0; i < h->nlabels; i++)
        free(h->labels[i]);
    free(h->labels);
}

static char *dup_opt(const char *s)
{
    return s ? kf_xstrdup(s) : NULL;
}

void kf_fleet_host_copy(kf_fleet_host *dst, const kf_fleet_host *src)
{
    *dst = *src;
    dst->name = dup_opt(src->name);
    dst->provider = dup_opt(src->provider);
    dst->host = dup_opt(src->host);
    dst->user = dup_opt(src->user);
    dst->identity = dup_opt(src->identity);
    dst->workdir = dup_opt(src->workdir);
    dst->ssh_alias = dup_opt(src->ssh_alias);
    dst->block = src->block && src->prov && src->prov->dup ? src->prov->dup(src->block) : NULL;
    dst->labels = src->nlabels ? kf_xcalloc(src->nlabels, sizeof *dst->labels) : NULL;
    for (size_t i = 0; i < src->nlabels; i++)
        dst->labels[i] = kf_xstrdup(src->labels[i]);
}
