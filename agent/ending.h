/* ending — why a runner ended without its task's Result, as the attempt's
 * error, and whether the attempt is tried again (Result.infra).
 *
 * kfleet says what it did itself: a time limit, a cancel, a runner killed
 * for a bad frame on its channel (krunner.killed_why). A runner killed by
 * a signal nobody in kfleet sent names the out-of-memory killer only with
 * evidence: the node's count of OOM kills (/proc/vmstat oom_kill) rose
 * while it ran. Then the kernel needed more memory than the node could
 * give, which is its own verdict (not tried again: it would only be killed
 * again), said with its peak memory and the node's. Without that evidence
 * the sender is unknown (a person, the pod's supervisor): the node's
 * fault, tried again. */
#ifndef KF_ENDING_H
#define KF_ENDING_H

#include "agent/agent_int.h"

#include <stddef.h>
#include <stdint.h>

/* The node's OOM kills so far (/proc/vmstat oom_kill), or UINT64_MAX
 * where the kernel does not count them. */
uint64_t ending_oom_kills(void);

/* Why r ended as it did (r->status, r->timed_out, r->cancelled,
 * r->killed_why, r->oom_kills0 against oom_kills_now, r->maxrss_kb), with
 * `log_tail` (the end of the runner's own log) where it helps; *state and
 * *infra as the Result takes them. */
void ending_explain(const krunner *r, uint64_t oom_kills_now, const char *log_tail, char *why,
                    size_t len, int *state, int *infra);

#endif
