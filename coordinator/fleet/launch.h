/* launch — brings kfleet agents up on the hosts of an inventory over SSH,
 * and stops them again.
 *
 * Per host, in its own thread: connect (retries with backoff), preflight
 * (coordinator/fleet/preflight.h's script over SSH, checked before any upload),
 * upload the bundle when its sha256 differs from the one kept in the work
 * dir, install the agent's Curve key pair (0600) and allow its public key,
 * ask the coordinator daemon for a tunnel (a remote forward it keeps alive;
 * skipped with `direct`), start the agent detached with a pidfile (not a
 * second copy when the pidfile's process lives), and wait until it has
 * registered with the coordinator. A host that fails at any step is
 * reported with the step and the reason; the others go on. */
#ifndef KF_LAUNCH_H
#define KF_LAUNCH_H

#include "common/buf.h"
#include "common/err.h"
#include "fleet/fleet.h"
#include "common/paths.h"

#include <stdint.h>
#include <stdio.h>

enum {
    KF_PHASE_CONNECT,
    KF_PHASE_PREFLIGHT,
    KF_PHASE_UPLOAD,
    KF_PHASE_TUNNEL,
    KF_PHASE_START,
    KF_PHASE_REGISTER,
    KF_PHASE_STOP,
    KF_PHASE_COUNT
};

typedef struct kf_launch_result kf_launch_result;

typedef struct kf_launch_opts {
    const char *control_endpoint; /* the daemon's control socket: tunnel_open, registration;
                                   * NULL (teardown only) = no daemon to ask */
    const char *allow_file;       /* the coordinator's agents.allow */
    const char *server_pub_file;  /* the coordinator's public key (coordinator.pub) */
    const char *known_hosts;      /* NULL = ~/.ssh/known_hosts */
    int accept_new;               /* record first-seen host keys */
    const char *bundle_tar;       /* launch: the bundle tarball (gzip'd tar of the bundle dir) */
    const char *direct;           /* launch: agents connect here, no tunnel; NULL = tunnel */
    int attempts;                 /* connection attempts per host (default 6) */
    double backoff_s;             /* first retry wait (default 0.5 s) */
    double connect_timeout_s;     /* per attempt (default 10 s) */
    double register_timeout_s;    /* wait for the agent's registration (default 60 s) */
    uint64_t min_free_bytes;      /* preflight threshold for the work dir */
    int need_gpu;                 /* preflight refuses a node without a GPU */
    char min_glibc[16];           /* the bundle's GLIBC_REQUIRED ("2.35"); "" = unknown */
    int purge;                    /* teardown: remove the work dir too */
    const char *agent_sock;       /* the CLI's SSH_AUTH_SOCK for hosts without identity; NULL =
                                   * the daemon's own */
    FILE *progress;               /* one line per host as it finishes; NULL = none */
    /* Called (from the host's thread) with each host's final result. */
    void (*on_done)(void *ctx, size_t host, const kf_launch_result *r);
    void *on_done_ctx;
    /* Set (non-zero) to stop: each host ends at its next step or poll; an
     * SSH command waiting on the node ends within a quarter second; other SSH
     * calls run to their own timeout. NULL = never. */
    const _Atomic int *cancel;
} kf_launch_opts;

struct kf_launch_result {
    char name[128];
    int rc;                   /* KF_OK, or the failure's code */
    int failed_at;            /* KF_PHASE_*, -1 when it worked */
    char msg[1024];           /* the failure, or what was done */
    double t[KF_PHASE_COUNT]; /* seconds per phase, -1 when not reached */
    int tries;                /* connection attempts */
    int uploaded;             /* 1 bundle sent, 0 already there */
    int used_scp;
    int already_running;
    long pid;          /* the agent's pid on the node */
    int remote_port;   /* the tunnel's port on the node, 0 with direct */
    char summary[256]; /* preflight's one line */
};

/* Appends the line a host's result prints as (a second, indented line
 * says why a host failed), without the final newline. */
void kf_launch_format(const kf_launch_result *r, kf_buf *out);

/* Marks r as failed at phase (KF_PHASE_*) with msg; rc 0 counts as KF_EIO.
 * Returns r->rc. */
int kf_launch_fail(kf_launch_result *r, int phase, int rc, const char *msg);

/* Launches every host of f in parallel. *res (n = f->nhosts, caller frees)
 * has one result per host. Returns KF_OK when all hosts are up, else the
 * first failure's code (the results say which and why); err is set only
 * for failures before any host was tried (bundle unreadable, no
 * coordinator running). */
int kf_launch_run(const kf_fleet *f, const kf_launch_opts *o, kf_launch_result **res, kf_err *err);

/* Stops the agents of f (SIGTERM: they flush their outboxes; SIGKILL after
 * 15 s), closes their tunnels, and with o->purge removes their work dirs
 * and their keys from the allow list. */
int kf_launch_teardown(const kf_fleet *f, const kf_launch_opts *o, kf_launch_result **res,
                       kf_err *err);

/* Runs h's provider's launch (or, teardown set, its teardown) on the
 * caller's thread, into r: for a caller that must own what the row starts
 * (kfleet run: its agents die with the thread that forked them). No
 * tunnel, no daemon; r->rc is returned. */
int kf_launch_here(const kf_fleet_host *h, const kf_launch_opts *o, int teardown,
                   kf_launch_result *r);

/* sha256 of a file as 64 hex characters. */
int kf_launch_sha256_file(const char *path, char out[65], kf_err *err);

/* Appends a remote work dir for a POSIX shell: "~/x" becomes "$HOME"/'x',
 * anything else is quoted. */
void kf_launch_shell_path(kf_buf *b, const char *workdir);

#endif
