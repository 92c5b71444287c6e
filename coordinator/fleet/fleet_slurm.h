/* fleet_slurm — the `slurm:` block of an inventory host (provider: slurm):
 * the shape of the Slurm jobs that carry its agents. The host itself is the
 * cluster's login node, reached over SSH like any host; its workdir must be
 * on the filesystem the compute nodes share.
 *
 *     - name: lab
 *       provider: slurm
 *       host: login.cluster.example
 *       workdir: /shared/$USER/kfleet
 *       slurm:
 *         nodes: 4                 # agents, one job (one node) each
 *         partition: gpu
 *         gres: "gpu:8"
 *         time: "4:00:00"          # Slurm's formats: MM, HH:MM:SS, D-HH:MM ...
 *         account: lab42
 *         sbatch: ["--qos=high"]   # more options, passed as written
 *         relay_host: login1-ib    # how compute nodes reach the login node
 *         signal_before: 300       # SIGTERM (drain) this many s before the limit
 *
 * Parsed through the slurm row of provider.h's table (provider_slurm.c);
 * errors are the inventory's FILE:LINE:COL ones. This header is also where
 * the Slurm flow's entry points are declared for that row. */
#ifndef KF_FLEET_SLURM_H
#define KF_FLEET_SLURM_H

#include "core/yamldoc.h"
#include "fleet/fleet.h"

#include <stddef.h>
#include <yaml.h>

#define KF_SLURM_MAX_NODES 1024

typedef struct kf_fleet_slurm {
    int nodes;              /* agents, one job each; >= 1 */
    char *partition, *gres; /* NULL: the cluster's default, none */
    char *time, *account;   /* NULL: the partition's default limit, the user's default */
    char **sbatch;          /* further options, each one argument to sbatch */
    size_t nsbatch;
    char *relay_host;    /* NULL: the login node's own host name */
    int signal_before_s; /* SIGTERM this long before the limit */
    long time_s;         /* `time` in seconds, 0 when not set */
} kf_fleet_slurm;

/* Parses n (the host's `slurm:` value, or NULL for the defaults) into a new
 * *out. KF_OK, or KF_EINVAL with y's error set at the offending node. */
int kf_fleet_slurm_parse(kf_yaml *y, const yaml_node_t *n, kf_fleet_slurm **out);
/* Seconds in a Slurm time limit ("30", "1:30:00", "2-12", "2-12:30:00");
 * -1 when it is not one, 0 for UNLIMITED/infinite. */
long kf_fleet_slurm_seconds(const char *s);
kf_fleet_slurm *kf_fleet_slurm_dup(const kf_fleet_slurm *s);
void kf_fleet_slurm_free(kf_fleet_slurm **s);

/* h's slurm: block when h is a provider: slurm host, else NULL. */
const kf_fleet_slurm *kf_fleet_slurm_of(const kf_fleet_host *h);

/* launch_slurm.c: the row's launch and teardown of a login node's agents. */
struct job;
void launch_slurm_host(struct job *j);
void launch_slurm_teardown(struct job *j);

/* Watches a slurm host's jobs until *o->cancel: squeue on the login node
 * every period_s over an SSH session kept open (reconnected, with o's
 * settings, when it drops), each view handed to cb (jobs NULL and error
 * set when it could not be read). Runs on the caller's thread. */
struct kf_launch_opts;
struct kf_slurm_job;
void kf_launch_slurm_watch(const kf_fleet_host *h, const struct kf_launch_opts *o, double period_s,
                           void (*cb)(void *ctx, const struct kf_slurm_job *jobs, size_t n,
                                      const char *error),
                           void *ctx);

#endif
