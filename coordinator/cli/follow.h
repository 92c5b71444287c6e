/* follow — `kfleet submit --follow` and `kfleet run`'s progress: polls a
 * sweep's progress until every task has ended, and says so when nothing
 * can run instead of waiting forever.
 *
 * On a tty one line redrawn in place, cut to the terminal's width; else one
 * line per change, at most one a second. The configurations are counted
 * apart from the builds the coordinator adds as kernels reach agents, so the
 * total does not jump. The ETA comes from the rate measured over the last
 * minute, and there is none until a task has ended; a sweep where nothing
 * has ended for a while says for how long instead. */
#ifndef KF_FOLLOW_H
#define KF_FOLLOW_H

#include "cli/client.h"

#define KF_FOLLOW_STALL_S 60.0

typedef struct kf_follow_opts {
    /* Give up (KF_EUNAVAIL, err saying why) when the sweep has pending tasks,
     * none running and no agent able to take them for this long; 0: never. */
    double stall_s;
    int columns; /* the line's width on a tty; 0: the terminal's, else COLUMNS, else 80 */
    /* `kfleet run`: the agents it started. Once that many are up and none
     * of them can run a pending task (each said why at registration),
     * waiting cannot help: KF_EUNAVAIL at once, not after stall_s. */
    uint32_t agents_started;
    /* The coordinator goes away with the follower (`kfleet run`): messages
     * suggest no command that needs it (status, cancel). */
    int embedded;
} kf_follow_opts;

/* Follows sweep_id until it ends (KF_OK, *final its last progress).
 * *interrupted (a signal flag) detaches without cancelling: KF_ETIMEOUT.
 * Nothing able to run for opts->stall_s: KF_EUNAVAIL. Else the call's
 * error. */
int kf_follow(kf_client *c, uint32_t sweep_id, const kf_follow_opts *opts,
              volatile int *interrupted, Kfleet__SweepProgress *final, kf_err *err);

/* The line drawn for a progress at `elapsed_s` (exposed for tests): into
 * out, at most `width` display columns. eta_s < 0: none; quiet_s: how long
 * no task has ended (shown from 10 s). */
void kf_follow_line(char *out, size_t len, int width, const Kfleet__SweepProgress *p, double rate,
                    double eta_s, double quiet_s);

#endif
