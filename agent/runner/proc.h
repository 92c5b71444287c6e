/* proc — starting a node tool (a compiler, the Python interpreter) from a
 * runner: fork and execvp, no shell, stdin from /dev/null, its output on a
 * file descriptor or captured; in a build runner, inside the task's
 * sandbox (kf_proc_sandbox). */
#ifndef KF_PROC_H
#define KF_PROC_H

#include "common/buf.h"

#include <sys/types.h>

struct kf_sandbox;

/* Every tool kf_proc_spawn starts from now on enters sb (sandbox.h) before
 * it runs: a build runner's compilers and Python checks. NULL: none. The
 * caller keeps sb alive meanwhile. */
void kf_proc_sandbox(struct kf_sandbox *sb);

/* Starts argv (found by execvp) with stdout and stderr on out_fd, in cwd
 * when not NULL. Returns the pid, or -1. In the child, 126 means the
 * redirections failed and 127 that argv[0] did not start (its reason is
 * written to out_fd). */
pid_t kf_proc_spawn(char *const argv[], int out_fd, const char *cwd);

/* Waits for pid; returns its wait status, or -1. */
int kf_proc_wait(pid_t pid);

/* Runs argv to its end with stdout and stderr appended to out, at most
 * `cap` bytes kept (the rest is read and dropped). Returns the wait status,
 * or -1 when it could not start. */
int kf_proc_capture(char *const argv[], kf_buf *out, size_t cap);

/* kf_proc_capture, killing argv (SIGKILL) when it runs longer than limit_s
 * (0: no limit); -2 then, with what it printed so far in out. */
int kf_proc_capture_limit(char *const argv[], kf_buf *out, size_t cap, double limit_s);

#endif
