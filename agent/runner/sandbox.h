/* sandbox — what a runner process (or a compiler a build runner starts) may
 * touch: read and execute the paths it is given (the system's directories,
 * the toolchain, its own artifact), write only its own (a scratch dir, its
 * kernel's caches, the GPU device files), and no network. Built from the
 * kernel's own mechanisms, each taken when the node has it:
 *
 *   - Landlock (filesystem): everything not granted is refused, reads
 *     included; from ABI 4 TCP bind/connect are refused too, from ABI 6
 *     signals to processes outside the sandbox (the agent) as well;
 *   - a network namespace of its own (root, or CAP_SYS_ADMIN), with only
 *     its own loopback up: 127.0.0.1 is not the node's;
 *   - a seccomp filter refusing AF_UNIX sockets (a Unix socket by path,
 *     such as the coordinator's control socket, is out of Landlock's
 *     reach; socketpair() stays), AF_PACKET sockets and io_uring (whose
 *     operations bypass seccomp), and AF_INET and AF_INET6 on a node
 *     where the namespace cannot be had;
 *   - PR_SET_NO_NEW_PRIVS (a set-uid program gains nothing), and for a
 *     root runner no capability (it keeps uid 0, for its files and the
 *     GPU's device files).
 *
 * A mechanism the node lacks is skipped and named (kf_sandbox_missing):
 * the agent probes once at start, logs what it cannot enforce and sends it
 * in its registration (`kfleet status` shows it). A mechanism the node has
 * but that fails to apply fails the call: a runner never runs a kernel
 * with less than the agent announced.
 *
 * KF_SANDBOX=0 in the agent's environment turns the whole sandbox off (a
 * before/after timing comparison); the agent says so at start.
 *
 * Paths given to kf_sandbox_read are checked against the protected ones
 * (the agent's work dir, the kfleet home's state): a path that is one of
 * them, inside one or above one is not granted (so /opt holding the home
 * never opens the keys), and the skip is logged. Paths given with
 * kf_sandbox_own are the sandbox's own (its scratch dir, its artifact, the
 * agent's own binaries) and may lie inside a protected one, never be one
 * or hold one. */
#ifndef KF_SANDBOX_H
#define KF_SANDBOX_H

#include "common/err.h"
#include "common/execenv.h"

#include <stddef.h>

typedef struct kf_sandbox kf_sandbox;

/* The mechanisms, as bits of the masks below. */
enum {
    KF_SB_LANDLOCK = 1u << 0,     /* filesystem rules */
    KF_SB_LANDLOCK_TCP = 1u << 1, /* Landlock's TCP bind/connect rules (ABI 4) */
    KF_SB_SIGNAL = 1u << 2,       /* Landlock's signal scope (ABI 6) */
    KF_SB_NETNS = 1u << 3,        /* a network namespace of its own */
    KF_SB_SECCOMP = 1u << 4,      /* the socket filter */
    KF_SB_NNP = 1u << 5,          /* no new privileges */
    KF_SB_CAPS = 1u << 6,         /* a root runner's capabilities dropped */
    KF_SB_UNIX = 1u << 7,         /* socket(AF_UNIX) refused (the seccomp filter) */
};

kf_sandbox *kf_sandbox_new(void);
void kf_sandbox_destroy(kf_sandbox **self);

/* Grants read and execute on path (a directory: everything beneath it).
 * A path that does not exist is skipped. */
void kf_sandbox_read(kf_sandbox *self, const char *path);
/* Grants read, write, create and remove on path (a file: read and write). */
void kf_sandbox_write(kf_sandbox *self, const char *path);
/* As kf_sandbox_read / _write, for the sandbox's own paths: allowed inside
 * a protected one (see above). */
void kf_sandbox_own(kf_sandbox *self, const char *path, int write);
/* A path no grant may cover (see the file-top comment). */
void kf_sandbox_protect(kf_sandbox *self, const char *path);
/* Whether the network rules stay off: a tool the task runs (Nsight
 * Compute) talks to its target over loopback TCP. With a namespace of its
 * own the loopback is the sandbox's and stays usable; without one, network
 * access is then not restricted (named in the missing mask). */
void kf_sandbox_allow_loopback(kf_sandbox *self, int on);
/* Whether socket(AF_UNIX) stays allowed: only for the process that starts
 * NVIDIA's tools (tools.h's launcher), which loads no kernel code; every
 * process that does refuses it. */
void kf_sandbox_allow_unix(kf_sandbox *self, int on);

/* Leaves socket(AF_UNIX) to kf_sandbox_deny_unix, called once the CUDA
 * driver is initialized: libcuda's cuInit makes a Unix socket and fails
 * with CUDA_ERROR_OPERATING_SYSTEM (304) when socket() is refused (seen
 * with driver 580 on an H200, bench/gpu/run.sh sandboxdiag), so a CUDA
 * runner initializes the driver inside the rest of its sandbox, then
 * refuses Unix sockets, then loads the kernel. */
void kf_sandbox_defer_unix(kf_sandbox *self);

/* Refuses socket(AF_UNIX) to this process and its children from now on
 * (a second seccomp filter). Where seccomp or the refusal is off
 * (KF_SANDBOX_SKIP=unix or seccomp, or the kernel refuses the filter),
 * sets KF_SB_UNIX in *missing. Returns 0, or a negative code with err. */
int kf_sandbox_deny_unix(unsigned *missing, kf_err *err);

/* Leaves mechanisms (KF_SB_* bits) off for this sandbox: named in the
 * missing mask as if the node lacked them. KF_SANDBOX_SKIP=landlock,netns,
 * seccomp,nnp,caps,landlock-tcp,landlock-scope,unix does the same for every
 * runner of an agent (an operator's way round a toolchain that cannot live
 * with one; bench/gpu/run.sh sandboxdiag finds which). */
void kf_sandbox_skip(kf_sandbox *self, unsigned mechanisms);

/* Applies the sandbox to the calling process, for good (its children
 * inherit it). *missing gets the mechanisms the node lacks (skipped).
 * Returns 0, or KF_EIO when one the node has could not be applied (err
 * says which). Call it single-threaded: a namespace and seccomp apply to
 * the calling thread. */
int kf_sandbox_enter(kf_sandbox *self, unsigned *missing, kf_err *err);

/* Whether the sandbox is on: KF_SANDBOX is unset or not "0". */
int kf_sandbox_enabled(void);

/* What this node cannot enforce, probed in a child that enters an empty
 * sandbox: the missing mask, and in `text` a sentence naming each (""
 * when nothing is missing; "the sandbox is off (KF_SANDBOX=0)" when off). */
unsigned kf_sandbox_probe(char *text, size_t len);

/* The sentence for a missing mask, as kf_sandbox_probe writes it. */
void kf_sandbox_describe(unsigned missing, char *text, size_t len);

/* A runner's environment (made before its fork) clean: KFLEET_* (its
 * home, keys), the SSH agent socket and the session's runtime and bus
 * addresses removed. */
void kf_sandbox_scrub_env(kf_execenv *env);

/* Threads of this process now (/proc/self/task). */
int kf_sandbox_threads(void);

/* Closes every file descriptor from `from` up (a child before exec). */
void kf_sandbox_close_fds(int from);

/* In a child about to exec: puts src[i] at descriptor i for each i < n
 * (src[i] -1: descriptor i closed), whatever numbers the sources have (one
 * may be another's target), then closes every descriptor from n up. n is
 * at most KF_SANDBOX_PLACE_MAX. 0, or -1 with errno. */
#define KF_SANDBOX_PLACE_MAX 128
int kf_sandbox_place_fds(const int *src, int n);

#endif
