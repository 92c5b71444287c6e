/* ssh — one libssh2 session to a node: connect with retries, the host key
 * checked against a known_hosts file, authentication by key file or
 * ssh-agent, commands run with their output and exit status, files written
 * over SFTP (SCP where the server has no SFTP subsystem).
 *
 * Sessions are blocking, with a per-call timeout, so the launcher reads as a
 * sequence of steps; the tunnel manager (tunnel.c) switches its sessions to
 * non-blocking after kf_ssh_connect. Call kf_ssh_global_init once, before
 * any thread uses libssh2 (libssh2_init is not thread-safe). */
#ifndef KF_SSH_H
#define KF_SSH_H

#include "common/buf.h"
#include "common/err.h"

#include <libssh2.h>
#include <stdatomic.h>
#include <stddef.h>

typedef struct kf_ssh kf_ssh;

typedef struct kf_ssh_opts {
    const char *name;        /* for messages: the inventory host name */
    const char *host;        /* address or DNS name */
    int port;                /* 0 = 22 */
    const char *user;        /* NULL = $USER */
    const char *identity;    /* private key file; NULL = ssh-agent */
    const char *known_hosts; /* NULL = ~/.ssh/known_hosts */
    int accept_new;          /* record a host key seen for the first time */
    int attempts;            /* connection attempts (0 = 1) */
    double backoff_s;        /* first wait between attempts, doubled each time (max 8 s) */
    double timeout_s;        /* per connect and per blocking call (0 = 20 s) */
    /* How long a command run by kf_ssh_exec may say nothing (0 = timeout_s):
     * longer than a connect may take, as a booting pod's first nvidia-smi or
     * a preflight on a loaded machine rightly is. */
    double call_timeout_s;
    /* Set (non-zero): a command's wait in kf_ssh_exec ends within a quarter
     * of a second with KF_EUNAVAIL. NULL = never. */
    const _Atomic int *cancel;
    const char *agent_sock; /* ssh-agent's socket; NULL or "" = $SSH_AUTH_SOCK */
} kf_ssh_opts;

/* libssh2_init; returns KF_EIO when the library cannot start. */
int kf_ssh_global_init(kf_err *err);

/* Connects, checks the host key, authenticates. Connection failures (refused,
 * unreachable, timeout, a handshake cut short by a booting pod) are retried
 * with backoff; a host key that does not match known_hosts and a refused
 * authentication are not. *tries (may be NULL) gets the attempts used.
 * KF_EUNAVAIL: the host could not be reached; KF_EINVAL: host key refused
 * (changed, or unknown without accept_new), with both fingerprints and the
 * file in err; KF_EIO: authentication or another SSH failure. */
int kf_ssh_connect(const kf_ssh_opts *o, kf_ssh **out, int *tries, kf_err *err);
void kf_ssh_close(kf_ssh **self);

LIBSSH2_SESSION *kf_ssh_session(kf_ssh *self);
int kf_ssh_fd(const kf_ssh *self);
/* "SHA256:..." of the server's host key (OpenSSH's format). */
const char *kf_ssh_fingerprint(const kf_ssh *self);

/* Runs cmd through the user's shell, feeding `in` (may be NULL) on stdin,
 * and collects stdout and stderr (either buffer may be NULL to discard).
 * *status gets the exit status (-1 when killed by a signal). Returns KF_OK
 * whatever the status; KF_EIO/KF_ETIMEOUT when the channel failed. The
 * command may say nothing for call_timeout_s; after that (KF_ETIMEOUT) or a
 * cancel (KF_EUNAVAIL) the connection is given up: only kf_ssh_close is left. */
int kf_ssh_exec(kf_ssh *self, const char *cmd, const void *in, size_t inlen, kf_buf *out,
                kf_buf *errout, int *status, kf_err *err);

/* Writes data to the remote path with `mode` (applied even under a umask),
 * over SFTP or, where the server has none, SCP. *used_scp (may be NULL)
 * says which. The remote directory must exist. */
int kf_ssh_write(kf_ssh *self, const void *data, size_t len, const char *remote, int mode,
                 int *used_scp, kf_err *err);
/* The same for a local file, streamed. */
int kf_ssh_upload(kf_ssh *self, const char *local, const char *remote, int mode, int *used_scp,
                  kf_err *err);

/* OpenSSH's fingerprint of a raw key blob: "SHA256:" + unpadded base64. */
void kf_ssh_fingerprint_blob(const void *blob, size_t len, char out[64]);

/* The known_hosts name of a host: "host" for port 22, else "[host]:port". */
void kf_ssh_known_name(const char *host, int port, char *out, size_t n);

#endif
