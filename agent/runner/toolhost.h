/* toolhost — the process that starts NVIDIA's tools (ncu,
 * compute-sanitizer) for a sandboxed runner, so that every process that
 * loads kernel code is under Landlock.
 *
 * A tool starts the kernel's nested runner as its child, and a Landlock
 * domain holds for every descendant: a tool started by the runner (which
 * loaded the kernel under Landlock) could not give the nested runner
 * write access to its own /proc/PID, which the CUDA driver needs at
 * cuInit, since no rule made ahead of time can name that pid. So the
 * runner forks this host after entering the rest of its sandbox (network
 * namespace, seccomp, no_new_privs) and before Landlock; the runner then
 * enters Landlock, loads the kernel and, when a task wants a tool, asks
 * the host over a socket pair. The host starts the tool, the tool the
 * nested runner, and the nested runner enters Landlock itself (granting
 * its own /proc/PID) before it loads the kernel (confine.h). The tools
 * themselves, NVIDIA's code, run outside Landlock, inside the namespace
 * and seccomp.
 *
 * The runner's end of the socket is the kernel's to write: the host takes
 * only a tool's number and a task of its own kernel, builds the command
 * line itself (kf_tools_run), and runs it in a directory of its own beside
 * the runner's scratch dir, which the runner's sandbox does not grant: a
 * kernel cannot plant a link where an unconfined tool writes its log or
 * swap the nested runner's task. The log comes back over the socket and
 * is written into the runner's scratch dir, where nested.c reads it. */
#ifndef KF_TOOLHOST_H
#define KF_TOOLHOST_H

#include "common/err.h"
#include "proto/kfleet.pb-c.h"
#include "runner/tools.h"

typedef struct kf_toolhost kf_toolhost;

/* The host's directory is the runner's scratch dir with this appended; the
 * agent removes both when the runner ends (a host killed with its runner's
 * process group cannot). */
#define KF_TOOLHOST_DIR_SUFFIX ".tools"

/* Forks the host for the runner of kernel_hash, whose tools run in dir
 * (made here, empty, and removed when the host ends) with workdir the
 * agent's. Call it single-threaded, before Landlock. The host ends when
 * the runner closes its end (kf_toolhost_destroy, or the runner's exit)
 * or dies. Returns 0, or KF_EIO with err filled. */
int kf_toolhost_start(const char *workdir, const char *dir, const char *kernel_hash,
                      kf_toolhost **out, kf_err *err);

/* Runs tool on ta's nested run: through self's host, the log then written
 * to kf_tools_log_path(tool, tmpdir, ta); or, with self NULL (no
 * sandbox), here (kf_tools_run with tmpdir). Returns as kf_tools_run. */
int kf_toolhost_run(kf_toolhost *self, kf_tool tool, const char *workdir, const char *tmpdir,
                    const Kfleet__TaskAssign *ta, int *exit_status, kf_err *err);

/* Closes the runner's end and waits for the host to end; NULLs *self. */
void kf_toolhost_destroy(kf_toolhost **self);

#endif
