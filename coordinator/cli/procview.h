/* procview — what a local process is doing, read from /proc (Linux): for
 * `kfleet run` when a local agent has not registered. Its state, its age,
 * where the kernel says it waits, and the processes it started, each with
 * its command line (a Python probe importing torch, a compiler, the
 * doctor), so that an agent stuck in its start names the step. */
#ifndef KF_PROCVIEW_H
#define KF_PROCVIEW_H

#include "common/buf.h"

#include <sys/types.h>

/* Appends lines describing pid and its descendants (two levels, at most
 * 16 processes), each starting with indent. Returns 0, or -1 when pid is
 * not a live process (nothing appended). */
int kf_procview_describe(pid_t pid, const char *indent, kf_buf *out);

#endif
