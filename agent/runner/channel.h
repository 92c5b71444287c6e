/* channel — the descriptors a runner and its agent talk on (`kfleet-agent
 * --runner --channel`), one header for the runner (harness.c, warm.c) and
 * the agent that places them (runners.c).
 *
 * Descriptors of the runner's own, so that what the kernel writes on its stdout and stderr (1 and
 * 2, which the agent captures as the kernel's text, agent/kout.h) is never read as a message, and a
 * kernel that prints cannot break or forge the stream. The task comes on TASK (a file, or for a
 * serving runner a Unix socket that can carry a candidate's next checker socket), frames go on
 * FRAMES, the runner's own log lines on LOG; CHECKER is a candidate's socket to its checker
 * (checker.h). Standard input is /dev/null. The runner marks them close-on-exec, so no program it
 * or the kernel starts inherits them. Without --channel (a runner started by hand or by a tool,
 * runner/tools.h) the task is on stdin, frames on stdout and the log on stderr. */
#ifndef KF_RUNNER_CHANNEL_H
#define KF_RUNNER_CHANNEL_H

#define KF_RUNNER_FD_TASK 3
#define KF_RUNNER_FD_FRAMES 4
#define KF_RUNNER_FD_LOG 5
#define KF_RUNNER_FD_CHECKER 6

#endif
