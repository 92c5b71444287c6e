/* jobs — the jobs that carry (or will carry) agents, as the providers'
 * watches last saw them, in the form `kfleet status` shows them
 * (StatusReply.provider_jobs). A provider row's status hook (provider.h)
 * appends its watch's jobs here under its own name, so the daemon and the
 * command line never ask which provider a job is of. */
#ifndef KF_JOBS_H
#define KF_JOBS_H

#include "proto/control.pb-c.h"
#include "proto/kfleet.pb-c.h"

#include <stdint.h>

/* One job as a status hook hands it over: its provider's name, the
 * inventory host, the agent it carries, the job's id, and its state and
 * reason in the provider's words, seen at seen_ns (wall clock). */
typedef struct kf_jobs_row {
    const char *provider, *host, *agent_id, *job_id, *state, *reason;
    uint64_t seen_ns;
} kf_jobs_row;

/* Appends a copy of r to st->provider_jobs (every string copied; NULL
 * reads as ""). */
void kf_jobs_add(Kfleet__StatusReply *st, const kf_jobs_row *r);
/* Frees st's provider_jobs, whichever rows appended them, and empties the
 * field. */
void kf_jobs_free(Kfleet__StatusReply *st);

#endif
