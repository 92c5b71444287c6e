/* hostlock — one host profile at a time on a machine.
 *
 * Host profiles measure the machine's cores, caches and memory bandwidth,
 * which every other process on it shares: two local agents profiling at
 * once each time the other (issue 43: the same numpy scan 608.8 us on one
 * agent, 1.203 ms on the other). So one host profile at a time runs on a
 * machine: the runner opens the lock file the agent names (KF_HOST_LOCK)
 * before its sandbox, and a host profile holds it from its first set-up to
 * its last re-check (profile.c); a GPU profile takes none. A missing or
 * unusable lock file (KF_HOST_LOCK=none on the agent, or not writable)
 * leaves profiles unserialized, as before. */
#ifndef KF_HOSTLOCK_H
#define KF_HOSTLOCK_H

/* The lock file's descriptor, opened at the first call (make that before
 * the sandbox); -1 without one. */
int kf_hostlock_fd(void);

#endif
