/* ssh — libssh2 sessions for the launcher and the tunnel manager.
 *
 * A connection is: TCP connect (non-blocking, with a deadline), the SSH
 * handshake, the host key against known_hosts, then authentication. A pod
 * that is still booting refuses TCP, or accepts it and drops the banner
 * exchange; both are retried with exponential backoff. A host key that does
 * not match is never retried: it is refused with the host, both fingerprints
 * and the file, because the only safe next step is a person's.
 *
 * known_hosts is read and matched with libssh2's knownhost API (plain and
 * hashed entries). A key recorded with accept_new is appended as one line
 * with O_APPEND, so parallel launches do not rewrite each other's file. */
#include "fleet/ssh.h"
#include "common/xalloc.h"

#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <libssh2_sftp.h>
#include <netdb.h>
#include <poll.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

struct kf_ssh {
    LIBSSH2_SESSION *s;
    int fd;
    char name[256];
    char fp[64];
    double call_timeout_s;     /* a command's quiet allowance in kf_ssh_exec */
    const _Atomic int *cancel; /* may be NULL */
};

int kf_ssh_global_init(kf_err *err)
{
    if (libssh2_init(0) != 0)
        return kf_err_set(err, KF_EIO, "libssh2 could not initialise its crypto backend");
    return KF_OK;
}

void kf_ssh_fingerprint_blob(const void *blob, size_t len, char out[64])
{
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, blob, len);
    char b64[sodium_base64_ENCODED_LEN(sizeof h, sodium_base64_VARIANT_ORIGINAL_NO_PADDING)];
    sodium_bin2base64(b64, sizeof b64, h, sizeof h, sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
    snprintf(out, 64, "SHA256:%s", b64);
}

void kf_ssh_known_name(const char *host, int port, char *out, size_t n)
{
    if (port == 0 || port == 22)
        snprintf(out, n, "%s", host);
    else
        snprintf(out, n, "[%s]:%d", host, port);
}

static const char *ssh_errmsg(LIBSSH2_SESSION *s)
{
    char *m = NULL;
    libssh2_session_last_error(s, &m, NULL, 0);
    return m && *m ? m : "unknown libssh2 error";
}

/* TCP connect with a deadline. Returns the fd, or -1 with errno set. */
static int tcp_connect(const char *host, int port, double timeout_s, char *why, size_t whylen)
{
    char ports[16];
    snprintf(ports, sizeof ports, "%d", port);
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(host, ports, &hints, &res);
    if (gai != 0) {
        snprintf(why, whylen, "cannot resolve %s: %s", host, gai_strerror(gai));
        return -1;
    }
    int fd = -1;
    snprintf(why, whylen, "no address");
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
            continue;
        int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (rc < 0 && errno == EINPROGRESS) {
            struct pollfd p = {fd, POLLOUT, 0};
            rc = poll(&p, 1, (int)(timeout_s * 1000));
            if (rc == 0) {
                errno = ETIMEDOUT;
                rc = -1;
            } else if (rc > 0) {
                int soerr = 0;
                socklen_t sl = sizeof soerr;
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
                errno = soerr;
                rc = soerr ? -1 : 0;
            }
        }
        if (rc == 0) {
            int fl = fcntl(fd, F_GETFL);
            fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
            break;
        }
        snprintf(why, whylen, "%s", strerror(errno));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

static int keytype_bit(int t)
{
    switch (t) {
    case LIBSSH2_HOSTKEY_TYPE_RSA:
        return LIBSSH2_KNOWNHOST_KEY_SSHRSA;
    case LIBSSH2_HOSTKEY_TYPE_DSS:
        return LIBSSH2_KNOWNHOST_KEY_SSHDSS;
#ifdef LIBSSH2_HOSTKEY_TYPE_ECDSA_256
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_256:
        return LIBSSH2_KNOWNHOST_KEY_ECDSA_256;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_384:
        return LIBSSH2_KNOWNHOST_KEY_ECDSA_384;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_521:
        return LIBSSH2_KNOWNHOST_KEY_ECDSA_521;
#endif
#ifdef LIBSSH2_HOSTKEY_TYPE_ED25519
    case LIBSSH2_HOSTKEY_TYPE_ED25519:
        return LIBSSH2_KNOWNHOST_KEY_ED25519;
#endif
    default:
        return LIBSSH2_KNOWNHOST_KEY_UNKNOWN;
    }
}

/* The path of known_hosts: o->known_hosts or ~/.ssh/known_hosts. */
static void known_path(const kf_ssh_opts *o, char *out, size_t n)
{
    if (o->known_hosts) {
        snprintf(out, n, "%s", o->known_hosts);
        return;
    }
    const char *home = getenv("HOME");
    snprintf(out, n, "%s/.ssh/known_hosts", home && *home ? home : ".");
}

static int append_known(LIBSSH2_KNOWNHOSTS *kh, struct libssh2_knownhost *entry, const char *path,
                        kf_err *err)
{
    char line[8192];
    size_t outlen = 0;
    if (libssh2_knownhost_writeline(kh, entry, line, sizeof line - 1, &outlen,
                                    LIBSSH2_KNOWNHOST_FILE_OPENSSH) != 0)
        return kf_err_set(err, KF_EIO, "cannot format the known_hosts line for %s", path);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        if (kf_mkdirs(dir, 0700, err) != KF_OK)
            return err ? err->code : KF_EIO;
    }
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return kf_err_set(err, KF_EIO, "cannot open %s to record a host key: %s", path,
                          strerror(errno));
    ssize_t w = write(fd, line, outlen);
    close(fd);
    if (w != (ssize_t)outlen)
        return kf_err_set(err, KF_EIO, "cannot append to %s: %s", path, strerror(errno));
    return KF_OK;
}

static int check_hostkey(kf_ssh *k, const kf_ssh_opts *o, int port, kf_err *err)
{
    size_t klen = 0;
    int ktype = 0;
    const char *key = libssh2_session_hostkey(k->s, &klen, &ktype);
    if (!key)
        return kf_err_set(err, KF_EIO, "%s: the server sent no host key", k->name);
    kf_ssh_fingerprint_blob(key, klen, k->fp);
    char path[4096];
    known_path(o, path, sizeof path);
    char kname[512];
    kf_ssh_known_name(o->host, port, kname, sizeof kname);

    LIBSSH2_KNOWNHOSTS *kh = libssh2_knownhost_init(k->s);
    if (!kh)
        return kf_err_set(err, KF_ENOMEM, "libssh2_knownhost_init failed");
    int rc = KF_OK;
    struct stat st;
    if (stat(path, &st) == 0 &&
        libssh2_knownhost_readfile(kh, path, LIBSSH2_KNOWNHOST_FILE_OPENSSH) < 0) {
        rc = kf_err_set(err, KF_EINVAL, "%s: cannot parse %s: %s; fix or move that file", k->name,
                        path, ssh_errmsg(k->s));
        goto out;
    }
    int mask = LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW | keytype_bit(ktype);
    struct libssh2_knownhost *found = NULL;
    int m = libssh2_knownhost_checkp(kh, o->host, port ? port : 22, key, klen, mask, &found);
    if (m == LIBSSH2_KNOWNHOST_CHECK_MATCH) {
        kf_debug("ssh.hostkey", "host=%s fingerprint=%s known_hosts=%s", k->name, k->fp, path);
    } else if (m == LIBSSH2_KNOWNHOST_CHECK_MISMATCH) {
        char oldfp[64] = "(unreadable)";
        if (found && found->key) {
            unsigned char blob[4096];
            size_t blen = 0;
            if (sodium_base642bin(blob, sizeof blob, found->key, strlen(found->key), NULL, &blen,
                                  NULL, sodium_base64_VARIANT_ORIGINAL) == 0)
                kf_ssh_fingerprint_blob(blob, blen, oldfp);
        }
        kf_error("ssh.hostkey_changed", "host=%s known=%s offered=%s known_hosts=%s", k->name,
                 oldfp, k->fp, path);
        rc = kf_err_set(err, KF_EINVAL,
                        "%s: HOST KEY CHANGED for %s — %s records %s, the server offered %s. "
                        "Someone may be intercepting the connection, or the node was "
                        "re-created. Refused. If the change is expected: ssh-keygen -R '%s' -f "
                        "%s, then launch with --accept-new",
                        k->name, kname, path, oldfp, k->fp, kname, path);
    } else if (m == LIBSSH2_KNOWNHOST_CHECK_NOTFOUND) {
        if (!o->accept_new) {
            rc = kf_err_set(err, KF_EINVAL,
                            "%s: host key of %s (%s) is not in %s; check it and rerun with "
                            "--accept-new to record it",
                            k->name, kname, k->fp, path);
            goto out;
        }
        struct libssh2_knownhost *added = NULL;
        if (libssh2_knownhost_addc(kh, kname, NULL, key, klen, NULL, 0, mask, &added) != 0) {
            rc = kf_err_set(err, KF_EIO, "%s: cannot record the host key: %s", k->name,
                            ssh_errmsg(k->s));
            goto out;
        }
        rc = append_known(kh, added, path, err);
        if (rc == KF_OK)
            kf_info("ssh.hostkey_recorded", "host=%s fingerprint=%s known_hosts=%s", k->name, k->fp,
                    path);
    } else {
        rc = kf_err_set(err, KF_EIO, "%s: host key check failed: %s", k->name, ssh_errmsg(k->s));
    }
out:
    libssh2_knownhost_free(kh);
    return rc;
}

static int auth_agent(kf_ssh *k, const char *user, const char *sock, kf_err *err)
{
    LIBSSH2_AGENT *ag = libssh2_agent_init(k->s);
    if (!ag)
        return kf_err_set(err, KF_EIO, "%s: cannot start the ssh-agent client", k->name);
    /* The daemon launches for the CLI's user: it is given the CLI's agent
     * socket rather than changing its own environment under its threads. */
    if (sock && *sock)
        libssh2_agent_set_identity_path(ag, sock);
    int rc = KF_EIO;
    if (libssh2_agent_connect(ag) != 0) {
        rc = kf_err_set(err, KF_EIO,
                        "%s: no identity file given and no ssh-agent reachable (SSH_AUTH_SOCK); "
                        "set `identity:` for the host or start ssh-agent",
                        k->name);
        goto out;
    }
    if (libssh2_agent_list_identities(ag) != 0) {
        rc = kf_err_set(err, KF_EIO, "%s: ssh-agent would not list its keys", k->name);
        goto disc;
    }
    struct libssh2_agent_publickey *id = NULL, *prev = NULL;
    int n = 0;
    while (libssh2_agent_get_identity(ag, &id, prev) == 0) {
        n++;
        if (libssh2_agent_userauth(ag, user, id) == 0) {
            rc = KF_OK;
            goto disc;
        }
        prev = id;
    }
    rc = kf_err_set(err, KF_EIO, "%s: none of ssh-agent's %d keys was accepted for user %s",
                    k->name, n, user);
disc:
    libssh2_agent_disconnect(ag);
out:
    libssh2_agent_free(ag);
    return rc;
}

/* Prefers the key types people have in known_hosts today, so a server with
 * several host keys offers the one known_hosts holds. Only names this
 * libssh2 supports are passed: 1.10's method_pref corrupts memory (an
 * overlapping memcpy) when it has to drop an unknown one. */
static void prefer_hostkeys(LIBSSH2_SESSION *s)
{
    static const char *const want[] = {"ssh-ed25519",
                                       "ecdsa-sha2-nistp256",
                                       "ecdsa-sha2-nistp384",
                                       "ecdsa-sha2-nistp521",
                                       "rsa-sha2-512",
                                       "rsa-sha2-256",
                                       "ssh-rsa"};
    const char **algs = NULL;
    int n = libssh2_session_supported_algs(s, LIBSSH2_METHOD_HOSTKEY, &algs);
    if (n <= 0)
        return;
    char pref[512] = "";
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        for (int j = 0; j < n; j++)
            if (strcmp(want[i], algs[j]) == 0) {
                size_t l = strlen(pref);
                snprintf(pref + l, sizeof pref - l, "%s%s", l ? "," : "", want[i]);
            }
    libssh2_free(s, (void *)algs);
    if (pref[0])
        libssh2_session_method_pref(s, LIBSSH2_METHOD_HOSTKEY, pref);
}

/* One attempt. *retry says whether a failure is worth another. */
static int connect_once(const kf_ssh_opts *o, kf_ssh **out, int *retry, kf_err *err)
{
    int port = o->port ? o->port : 22;
    double to = o->timeout_s > 0 ? o->timeout_s : 20;
    char why[256];
    *retry = 1;
    int fd = tcp_connect(o->host, port, to, why, sizeof why);
    if (fd < 0)
        return kf_err_set(err, KF_EUNAVAIL, "%s: cannot connect to %s:%d: %s", o->name, o->host,
                          port, why);
    kf_ssh *k = kf_xcalloc(1, sizeof *k);
    k->fd = fd;
    snprintf(k->name, sizeof k->name, "%s", o->name ? o->name : o->host);
    k->s = libssh2_session_init();
    if (!k->s) {
        kf_ssh_close(&k);
        return kf_err_set(err, KF_ENOMEM, "libssh2_session_init failed");
    }
    libssh2_session_set_blocking(k->s, 1);
    libssh2_session_set_timeout(k->s, (long)(to * 1000));
    prefer_hostkeys(k->s);
    int rc;
    if (libssh2_session_handshake(k->s, fd) != 0) {
        rc = kf_err_set(err, KF_EUNAVAIL, "%s: SSH handshake with %s:%d failed: %s", k->name,
                        o->host, port, ssh_errmsg(k->s));
        goto fail;
    }
    *retry = 0;
    if ((rc = check_hostkey(k, o, port, err)) != KF_OK)
        goto fail;
    const char *user = o->user && *o->user ? o->user : getenv("USER");
    if (!user)
        user = "root";
    if (o->identity && *o->identity) {
        if (access(o->identity, R_OK) != 0) {
            rc = kf_err_set(err, KF_EINVAL, "%s: identity file %s cannot be read: %s", k->name,
                            o->identity, strerror(errno));
            goto fail;
        }
        if (libssh2_userauth_publickey_fromfile(k->s, user, NULL, o->identity, NULL) != 0) {
            rc = kf_err_set(err, KF_EIO,
                            "%s: the server refused key %s for user %s (%s); is its public key "
                            "in the node's authorized_keys?",
                            k->name, o->identity, user, ssh_errmsg(k->s));
            goto fail;
        }
    } else if ((rc = auth_agent(k, user, o->agent_sock, err)) != KF_OK) {
        goto fail;
    }
    k->call_timeout_s = o->call_timeout_s > 0 ? o->call_timeout_s : to;
    k->cancel = o->cancel;
    *out = k;
    return KF_OK;
fail:
    kf_ssh_close(&k);
    return rc;
}

int kf_ssh_connect(const kf_ssh_opts *o, kf_ssh **out, int *tries, kf_err *err)
{
    *out = NULL;
    int attempts = o->attempts > 0 ? o->attempts : 1;
    double wait = o->backoff_s > 0 ? o->backoff_s : 0.5;
    int rc = KF_EUNAVAIL;
    for (int i = 0; i < attempts; i++) {
        if (tries)
            *tries = i + 1;
        int retry = 0;
        rc = connect_once(o, out, &retry, err);
        if (rc == KF_OK || !retry)
            return rc;
        if (i + 1 < attempts) {
            kf_debug("ssh.retry", "host=%s attempt=%d wait_s=%.2f error=\"%s\"",
                     o->name ? o->name : o->host, i + 1, wait, err ? err->msg : "");
            kf_sleep_s(wait);
            wait = wait * 2 > 8 ? 8 : wait * 2;
        }
    }
    if (err && attempts > 1) {
        char m[sizeof err->msg];
        snprintf(m, sizeof m, "%s (gave up after %d attempts)", err->msg, attempts);
        snprintf(err->msg, sizeof err->msg, "%s", m);
    }
    return rc;
}

void kf_ssh_close(kf_ssh **self)
{
    if (!self || !*self)
        return;
    kf_ssh *k = *self;
    if (k->s) {
        libssh2_session_set_blocking(k->s, 1);
        libssh2_session_set_timeout(k->s, 2000);
        libssh2_session_disconnect(k->s, "kfleet done");
        libssh2_session_free(k->s);
    }
    if (k->fd >= 0)
        close(k->fd);
    free(k);
    *self = NULL;
}

LIBSSH2_SESSION *kf_ssh_session(kf_ssh *self)
{
    return self->s;
}

int kf_ssh_fd(const kf_ssh *self)
{
    return self->fd;
}

const char *kf_ssh_fingerprint(const kf_ssh *self)
{
    return self->fp;
}

static int chan_fail(kf_ssh *k, const char *what, kf_err *err)
{
    int e = libssh2_session_last_errno(k->s);
    return kf_err_set(err, e == LIBSSH2_ERROR_TIMEOUT ? KF_ETIMEOUT : KF_EIO, "%s: %s: %s", k->name,
                      what, ssh_errmsg(k->s));
}

/* One stream of a command's output to its end. libssh2 does not block here:
 * the wait is ours, in slices, so that a command's quiet stretch is measured
 * against call_timeout_s (not the session's connect-sized timeout) and a
 * cancel ends it within a slice instead of after the whole allowance. */
static int read_stream(kf_ssh *k, LIBSSH2_CHANNEL *ch, int stream, kf_buf *dst, kf_err *err)
{
    char buf[16384];
    uint64_t quiet_since = kf_mono_ns();
    int rc = KF_OK;
    libssh2_session_set_blocking(k->s, 0);
    for (;;) {
        ssize_t r = libssh2_channel_read_ex(ch, stream, buf, sizeof buf);
        if (r > 0) {
            if (dst)
                kf_buf_add(dst, buf, (size_t)r);
            quiet_since = kf_mono_ns();
            continue;
        }
        if (r == 0)
            break;
        if (r != LIBSSH2_ERROR_EAGAIN) {
            rc = chan_fail(k, "reading the command's output", err);
            break;
        }
        if (k->cancel && atomic_load(k->cancel))
            rc = kf_err_set(err, KF_EUNAVAIL, "%s: the command's wait was cancelled", k->name);
        else if ((double)(kf_mono_ns() - quiet_since) / 1e9 > k->call_timeout_s)
            rc = kf_err_set(err, KF_ETIMEOUT,
                            "%s: reading the command's output: the node said nothing for %.0f s; "
                            "it may be overloaded or hung (check it, then try again)",
                            k->name, k->call_timeout_s);
        if (rc != KF_OK) {
            /* The command still runs there, so freeing its channel would wait
             * for a close that does not come: the connection is given up
             * here, and what is left of the session ends at once. */
            shutdown(k->fd, SHUT_RDWR);
            break;
        }
        int dir = libssh2_session_block_directions(k->s);
        struct pollfd p = {k->fd, 0, 0};
        if (dir & LIBSSH2_SESSION_BLOCK_INBOUND)
            p.events |= POLLIN;
        if (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND)
            p.events |= POLLOUT;
        if (poll(&p, 1, 250) < 0 && errno != EINTR) {
            rc = kf_err_set(err, KF_EIO, "%s: waiting for the command's output: %s", k->name,
                            strerror(errno));
            break;
        }
    }
    libssh2_session_set_blocking(k->s, 1);
    return rc;
}

int kf_ssh_exec(kf_ssh *k, const char *cmd, const void *in, size_t inlen, kf_buf *out,
                kf_buf *errout, int *status, kf_err *err)
{
    *status = -1;
    LIBSSH2_CHANNEL *ch = libssh2_channel_open_session(k->s);
    if (!ch)
        return chan_fail(k, "cannot open a channel", err);
    int rc = KF_OK;
    if (libssh2_channel_exec(ch, cmd) != 0) {
        rc = chan_fail(k, "cannot run a command", err);
        goto out;
    }
    for (size_t off = 0; in && off < inlen;) {
        ssize_t w = libssh2_channel_write(ch, (const char *)in + off, inlen - off);
        if (w < 0) {
            rc = chan_fail(k, "cannot write the command's input", err);
            goto out;
        }
        off += (size_t)w;
    }
    libssh2_channel_send_eof(ch);
    /* Small outputs (scripts, status lines): stdout to EOF, then stderr.
     * libssh2 buffers the other stream meanwhile. */
    for (int stream = 0; stream < 2; stream++)
        if ((rc = read_stream(k, ch, stream, stream ? errout : out, err)) != KF_OK)
            goto out;
    libssh2_channel_close(ch);
    libssh2_channel_wait_closed(ch);
    char *sig = NULL;
    libssh2_channel_get_exit_signal(ch, &sig, NULL, NULL, NULL, NULL, NULL);
    *status = sig ? -1 : libssh2_channel_get_exit_status(ch);
    if (sig)
        libssh2_free(k->s, sig);
out:
    libssh2_channel_free(ch);
    return rc;
}

typedef struct src {
    const char *data; /* memory source, or */
    FILE *f;          /* a file */
    size_t len;
} src;

static ssize_t src_read(src *s, size_t off, char *buf, size_t n)
{
    if (s->f)
        return (ssize_t)fread(buf, 1, n, s->f);
    size_t left = s->len - off;
    if (n > left)
        n = left;
    memcpy(buf, s->data + off, n);
    return (ssize_t)n;
}

static int put_scp(kf_ssh *k, src *s, const char *remote, int mode, kf_err *err)
{
    LIBSSH2_CHANNEL *ch =
        libssh2_scp_send64(k->s, remote, mode & 0777, (libssh2_int64_t)s->len, 0, 0);
    if (!ch)
        return chan_fail(k, "SCP upload refused", err);
    int rc = KF_OK;
    char buf[32768];
    for (size_t off = 0; off < s->len;) {
        ssize_t n = src_read(s, off, buf, sizeof buf);
        if (n <= 0) {
            rc = kf_err_set(err, KF_EIO, "%s: local read failed during upload", k->name);
            goto out;
        }
        for (ssize_t w = 0; w < n;) {
            ssize_t x = libssh2_channel_write(ch, buf + w, (size_t)(n - w));
            if (x < 0) {
                rc = chan_fail(k, "SCP write failed", err);
                goto out;
            }
            w += x;
        }
        off += (size_t)n;
    }
    libssh2_channel_send_eof(ch);
    libssh2_channel_wait_eof(ch);
    libssh2_channel_wait_closed(ch);
out:
    libssh2_channel_free(ch);
    return rc;
}

static int put(kf_ssh *k, src *s, const char *remote, int mode, int *used_scp, kf_err *err)
{
    if (used_scp)
        *used_scp = 0;
    LIBSSH2_SFTP *sftp = libssh2_sftp_init(k->s);
    if (!sftp) {
        /* No SFTP subsystem (some images strip sftp-server): SCP instead. */
        kf_debug("ssh.scp_fallback", "host=%s reason=\"%s\"", k->name, ssh_errmsg(k->s));
        if (used_scp)
            *used_scp = 1;
        return put_scp(k, s, remote, mode, err);
    }
    int rc = KF_OK;
    LIBSSH2_SFTP_HANDLE *h = libssh2_sftp_open(
        sftp, remote, LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT | LIBSSH2_FXF_TRUNC, mode & 0777);
    if (!h) {
        rc = kf_err_set(err, KF_EIO, "%s: cannot create %s over SFTP (sftp error %lu)", k->name,
                        remote, libssh2_sftp_last_error(sftp));
        goto out;
    }
    /* The server's umask may have narrowed or widened the mode: set it. */
    LIBSSH2_SFTP_ATTRIBUTES a = {0};
    a.flags = LIBSSH2_SFTP_ATTR_PERMISSIONS;
    a.permissions = (unsigned long)(mode & 0777);
    libssh2_sftp_fsetstat(h, &a);
    char buf[65536];
    for (size_t off = 0; off < s->len;) {
        ssize_t n = src_read(s, off, buf, sizeof buf);
        if (n <= 0) {
            rc = kf_err_set(err, KF_EIO, "%s: local read failed during upload", k->name);
            goto close;
        }
        for (ssize_t w = 0; w < n;) {
            ssize_t x = libssh2_sftp_write(h, buf + w, (size_t)(n - w));
            if (x < 0) {
                rc = kf_err_set(err, KF_EIO, "%s: SFTP write to %s failed (sftp error %lu)",
                                k->name, remote, libssh2_sftp_last_error(sftp));
                goto close;
            }
            w += x;
        }
        off += (size_t)n;
    }
close:
    libssh2_sftp_close(h);
out:
    libssh2_sftp_shutdown(sftp);
    return rc;
}

int kf_ssh_write(kf_ssh *k, const void *data, size_t len, const char *remote, int mode,
                 int *used_scp, kf_err *err)
{
    src s = {data, NULL, len};
    return put(k, &s, remote, mode, used_scp, err);
}

int kf_ssh_upload(kf_ssh *k, const char *local, const char *remote, int mode, int *used_scp,
                  kf_err *err)
{
    FILE *f = fopen(local, "rb");
    if (!f)
        return kf_err_set(err, KF_EIO, "cannot open %s: %s", local, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        fclose(f);
        return kf_err_set(err, KF_EIO, "cannot stat %s: %s", local, strerror(errno));
    }
    src s = {NULL, f, (size_t)st.st_size};
    int rc = put(k, &s, remote, mode, used_scp, err);
    fclose(f);
    return rc;
}
