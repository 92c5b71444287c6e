/* ending — why a runner ended without its task's Result, as the attempt's
 * error, and whether the attempt is tried again (Result.infra).
 *
 * kfleet says what it did itself: a time limit, a cancel, a runner killed
 * for a bad frame on its channel (krunner.killed_why). A runner killed by
 * a signal nobody in kfleet sent names the out-of-memory killer only with
 * evidence: the node's count of OOM kills (/proc/vmstat oom_kill) rose
 * while it ran, or the runner's own control group counted one (contain.h:
 * memory.events oom_kill on v2, memory.oom_control on v1, or its failcnt
 * while the node counted a kill). Then the kernel needed more memory than
 * its limit (said as "used more than N GiB") or the node could give, which
 * is its own verdict (not tried again: it would only be killed again).
 * Without that evidence the sender is unknown (a person, the pod's
 * supervisor): the node's fault, tried again. Forks refused at the group's
 * process limit, and OOM kills of the runner's children, are added to any
 * other reason (a timeout, a crash). */
#ifndef KF_ENDING_H
#define KF_ENDING_H

#include "agent/agent_int.h"

#include <stddef.h>
#include <stdint.h>

/* The node's OOM kills so far (/proc/vmstat oom_kill), or UINT64_MAX
 * where the kernel does not count them. */
uint64_t ending_oom_kills(void);

/* Why r ended as it did (r->status, r->timed_out, r->cancelled,
 * r->killed_why, r->oom_kills0 against oom_kills_now, r->maxrss_kb, the
 * group's r->cg_*), with
 * `log_tail` (the end of the runner's own log) where it helps; *state and
 * *infra as the Result takes them. */
void ending_explain(const krunner *r, uint64_t oom_kills_now, const char *log_tail, char *why,
                    size_t len, int *state, int *infra);

#endif
