/* run — `kfleet run SWEEP`: a whole local fleet for one sweep.
 *
 * Starts an embedded coordinator (a thread of this process, its sockets
 * under the home's run directory), local agents (child processes: one per
 * GPU, or CPU agents where there is none), submits the sweep, shows its
 * progress, stops everything, and prints the report from the store. Nothing
 * is left running: agents die with this process (PR_SET_PDEATHSIG). */
#ifndef KF_RUN_H
#define KF_RUN_H

#include "report/report.h"
#include "common/paths.h"
#include "core/sweep.h"

#include <signal.h>

typedef struct kf_run_options {
    int agents;         /* 0: one per GPU, else 2 CPU agents */
    int format;         /* kf_report_format */
    const char *output; /* report file, NULL: stdout */
    const char *kernels_dir;
    double stall_s;       /* give up when nothing can run for this long (follow.h); 0: wait */
    int no_shared_builds; /* kf_coord_config.no_shared_builds */
} kf_run_options;

/* Returns the process exit code: 0 all tasks succeeded, 1 some failed or
 * the fleet could not start (message on stderr). */
int kf_run(const kf_paths *paths, const kf_sweep_spec *spec, const kf_run_options *o,
           volatile sig_atomic_t *stop);

#endif
