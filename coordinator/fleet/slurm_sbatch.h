/* slurm_sbatch — reads the `sbatch:` items of an inventory's slurm: block the
 * way sbatch's getopt_long will, to refuse the options kfleet sets itself in
 * every spelling sbatch accepts: long names and their unambiguous
 * abbreviations (--jo=X, --ti 10), `=` or a separate value, short options
 * alone, grouped (-vJX, -vJ X) or with an attached value (-JX).
 *
 * Used by fleet_slurm.c; the table is sbatch's own (slurm_opt.c). */
#ifndef KF_SLURM_SBATCH_H
#define KF_SLURM_SBATCH_H

#include <stddef.h>

/* Checks args[0..n), the items kfleet passes to sbatch after its own
 * options and before the job script. KF_OK, or KF_EINVAL with *bad the
 * index of the offending item and why[] a message naming the option's full
 * name (what is wrong and what to write instead). */
int kf_slurm_sbatch_check(const char *const *args, size_t n, size_t *bad, char *why, size_t wl);

#endif
