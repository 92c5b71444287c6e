/* slurm_jobs — reading squeue for the jobs of one Slurm host of the
 * inventory: the launch waits on them (launch_slurm.c) and the daemon's
 * watch shows them in `kfleet status` (launches.c). */
#ifndef KF_SLURM_JOBS_H
#define KF_SLURM_JOBS_H

#include "common/err.h"

#include <stddef.h>

typedef struct kf_slurm_job {
    char agent_id[160]; /* NAME-I, from the job name kfleet-NAME-I */
    char job_id[32];
    char state[32];   /* squeue's %T: PENDING, RUNNING, CANCELLED ... */
    char reason[128]; /* squeue's %r: why it is pending, "None" when running */
    char node[128];   /* squeue's %N, "" while pending */
} kf_slurm_job;

/* `sh -s -- WORKDIR NAME`: prints squeue's view (all states it still
 * remembers) of the user's jobs named kfleet-NAME-I as JOBNAME|ID|STATE|
 * REASON|NODES lines. */
extern const char kf_slurm_squeue_script[];

/* Parses that output for host name into a new array (*jobs, *n; free with
 * kf_slurm_free). Lines of other jobs are skipped; KF_EIO for output that
 * is not squeue's. */
int kf_slurm_parse(const char *name, const char *text, kf_slurm_job **jobs, size_t *n, kf_err *err);
void kf_slurm_free(kf_slurm_job **jobs, size_t *n);
/* Whether a job in this state is over (its agent gone for good). */
int kf_slurm_state_final(const char *state);

#endif
