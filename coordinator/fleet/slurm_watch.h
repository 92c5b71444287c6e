/* slurm_watch — the daemon's view of the Slurm jobs it launched, for
 * `kfleet status`: one thread per provider: slurm host that launched, each
 * reading squeue on its login node every few seconds (launch.h's
 * kf_launch_slurm_watch), until that host's teardown or the daemon's end.
 * The views are kept under a mutex; the coordinator's loop only copies
 * them, never waits on SSH. */
#ifndef KF_SLURM_WATCH_H
#define KF_SLURM_WATCH_H

#include "fleet/fleet.h"
#include "fleet/launch.h"
#include "proto/control.pb-c.h"
#include "proto/kfleet.pb-c.h"

#include <stddef.h>

typedef struct kf_slurm_watches kf_slurm_watches;

kf_slurm_watches *kf_slurm_watches_new(void);
/* Stops and joins every watch. */
void kf_slurm_watches_destroy(kf_slurm_watches **self);
/* Watches h's jobs, with o's SSH settings (known hosts, agent socket);
 * a watch of that host already running is replaced. */
void kf_slurm_watches_start(kf_slurm_watches *self, const kf_fleet_host *h,
                            const kf_launch_opts *o);
/* Stops the watch of host name (its jobs are no longer shown). */
void kf_slurm_watches_stop(kf_slurm_watches *self, const char *name);
/* Appends every watched job to st's provider_jobs as provider's
 * (provider.h's kf_provider_job_add; kf_provider_jobs_free frees them). */
void kf_slurm_watches_jobs(kf_slurm_watches *self, const char *provider, Kfleet__StatusReply *st);

#endif
