/* confine — which paths a runner's sandbox (sandbox.h) grants, task by
 * task: the policy, where sandbox.c is the mechanism.
 *
 * Every runner reads and executes the system's directories (/usr, /lib*,
 * /bin, /sbin, /etc, /opt, /proc, /sys), its PATH and LD_LIBRARY_PATH,
 * the toolkit, the compilers and Python named by KF_CC, KF_NVCC, KF_CXX
 * and KF_PYTHON, the Python's prefixes and module path, and its own
 * binary, and the directories in KF_SANDBOX_READ (':'-separated, the
 * operator's additions: an editable install's sources, a toolkit elsewhere);
 * it reads and writes its scratch dir, /dev/null, /dev/shm and the
 * GPU's device files (/dev/nvidia*, /dev/nvidia-caps, /dev/dxg). What
 * differs:
 *
 *   - a validate or profile runner also reads its kernel's artifact (the
 *     .so, or the .py and its torch extension) and writes the kernel's own
 *     cache dir WORKDIR/kcache/KERNEL_HASH (Triton's and CUDA's JIT caches,
 *     kept between runs of that kernel and no other), or SCRATCH/kcache
 *     where the agent put it there (a tmpfs of its quota, agent/kcache.h). The runner itself
 *     enters the sandbox before the kernel is loaded; so does a nested
 *     runner under ncu or compute-sanitizer (see kf_confine_runner);
 *   - a build runner writes the cache itself (it is kfleet's code), but each
 *     compiler, Python check or extension build it starts runs in the
 *     sandbox (kf_proc_spawn), reading the sources in its scratch dir and
 *     the cached artifact it inspects.
 *
 * The agent's work dir and the kfleet home's state (KF_SANDBOX_PROTECT,
 * set by the agent) are protected: no grant reaches them by a parent
 * directory. HOME, TMPDIR and the caches' variables point into the
 * scratch dir (SCRATCH/tmp where the agent made it: a private tmpfs,
 * runner/contain.h) and the kernel's cache dir. */
#ifndef KF_CONFINE_H
#define KF_CONFINE_H

#include "common/err.h"
#include "proto/kfleet.pb-c.h"

struct kf_toolhost;

/* Enters the sandbox for a validate or profile runner of sp, before its
 * kernel is loaded: *missing as kf_sandbox_enter. No-op (0) when the
 * sandbox is off or scratch is NULL (a runner started by hand or a test).
 *
 * When sp's sweep runs ncu or compute-sanitizer, the runner first enters
 * the namespace, seccomp and no_new_privs, forks its tool host
 * (toolhost.h; *toolhost gets it, the caller destroys it) and only then
 * enters Landlock. A nested run under a tool (sp->ncu_pass, started by
 * the host) enters Landlock itself, granting its own /proc/PID, in the
 * host's namespace (the tool talks to it over loopback).
 * Returns 0 or a negative code with err saying what failed. */
int kf_confine_runner(const Kfleet__TaskSpec *sp, const char *workdir, const char *scratch,
                      unsigned *missing, struct kf_toolhost **toolhost, kf_err *err);

/* A CUDA runner (sp->device_cuda) enters all of it but the refusal of
 * Unix sockets in kf_confine_runner: the caller initializes the CUDA
 * driver (cuInit makes a Unix socket, sandbox.h), then calls this, then
 * loads the kernel. No-op where nothing was deferred. *missing gains
 * KF_SB_UNIX where the refusal is off. */
int kf_confine_runner_finish(const Kfleet__TaskSpec *sp, const char *scratch, unsigned *missing,
                             kf_err *err);

/* A kernel's kept cache dir, WORKDIR/kcache/HASH, into out (NULL: only
 * the check): 0, or -1 when hash is not 1-128 hex digits, the only names
 * such a dir is made of, or the path does not fit. */
int kf_confine_kcache_dir(const char *workdir, const char *hash, char *out, size_t len);

/* Makes the sandbox in which a build runner's tools run (kf_proc_sandbox
 * takes it) for a build of sp in scratch. NULL when the sandbox is off or
 * scratch is NULL. */
struct kf_sandbox *kf_confine_build(const Kfleet__TaskSpec *sp, const char *workdir,
                                    const char *scratch);

#endif
