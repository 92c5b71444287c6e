/* jobs — the providers' jobs of a StatusReply (jobs.h). */
#include "fleet/jobs.h"
#include "common/xalloc.h"

#include <stdlib.h>

static char *dup_or_empty(const char *s)
{
    return kf_xstrdup(s ? s : "");
}

void kf_jobs_add(Kfleet__StatusReply *st, const kf_jobs_row *r)
{
    Kfleet__ProviderJob *m = kf_xmalloc(sizeof *m);
    kfleet__provider_job__init(m);
    m->provider = dup_or_empty(r->provider);
    m->host = dup_or_empty(r->host);
    m->agent_id = dup_or_empty(r->agent_id);
    m->job_id = dup_or_empty(r->job_id);
    m->state = dup_or_empty(r->state);
    m->reason = dup_or_empty(r->reason);
    m->seen_ns = r->seen_ns;
    st->provider_jobs =
        kf_xrealloc(st->provider_jobs, (st->n_provider_jobs + 1) * sizeof *st->provider_jobs);
    st->provider_jobs[st->n_provider_jobs++] = m;
}

void kf_jobs_free(Kfleet__StatusReply *st)
{
    for (size_t i = 0; i < st->n_provider_jobs; i++) {
        Kfleet__ProviderJob *m = st->provider_jobs[i];
        free(m->provider);
        free(m->host);
        free(m->agent_id);
        free(m->job_id);
        free(m->state);
        free(m->reason);
        free(m);
    }
    free(st->provider_jobs);
    st->provider_jobs = NULL;
    st->n_provider_jobs = 0;
}
