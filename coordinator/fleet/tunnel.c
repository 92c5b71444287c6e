/* tunnel — remote port forwards kept by the coordinator daemon, and the
 * relay pump between their channels and the coordinator's agent socket.
 *
 * One thread owns every session. It holds the manager's mutex while it works
 * (all non-blocking, short) and releases it for poll() and for connecting
 * (blocking, with a timeout; a connect stalls the other tunnels' relays for
 * at most that long, which the agents' ZeroMQ resends absorb). The caller's
 * thread only adds specs, marks tunnels to close and copies their state.
 *
 * Each relay has one buffer per direction; a buffer is refilled only when
 * empty, so a slow side throttles the other (SSH's window does the rest). */
#include "fleet/tunnel.h"
#include "common/xalloc.h"

#include "common/log.h"
#include "fleet/ssh.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define RELAY_BUF 32768
#define CONNECT_TIMEOUT_S 5.0
#define BACKOFF_MAX_S 10.0

typedef struct relay {
    LIBSSH2_CHANNEL *ch;
    int fd;
    char a[RELAY_BUF]; /* channel -> socket */
    size_t alen, aoff;
    char b[RELAY_BUF]; /* socket -> channel */
    size_t blen, boff;
    int ch_eof, fd_eof, fd_shut, ch_sent_eof;
} relay;

typedef struct tun {
    kf_tunnel_spec spec;
    int closing, respec;
    kf_ssh *ssh;
    LIBSSH2_LISTENER *lst;
    int up;
    unsigned reconnects, connects;
    char error[512];
    uint64_t next_try_mono;
    double backoff_s;
    relay **relays;
    size_t nrelays, caprelays;
} tun;

struct kf_tunnels {
    pthread_t th;
    pthread_mutex_t mu;
    int stop;
    char thost[256];
    int tport;
    tun **t;
    size_t n, cap;
};

int kf_tunnels_parse_endpoint(const char *ep, char *host, size_t hostlen, int *port, kf_err *err)
{
    if (strncmp(ep, "tcp://", 6) != 0)
        return kf_err_set(err, KF_EINVAL,
                          "the agent endpoint %s is not tcp://; SSH tunnels relay TCP only "
                          "(start `kfleet serve` with --bind tcp://127.0.0.1:*)",
                          ep);
    const char *h = ep + 6, *colon = strrchr(h, ':');
    if (!colon || colon == h)
        return kf_err_set(err, KF_EINVAL, "endpoint %s has no port", ep);
    char *end = NULL;
    long p = strtol(colon + 1, &end, 10);
    if (!end || *end || p <= 0 || p > 65535)
        return kf_err_set(err, KF_EINVAL, "endpoint %s has no numeric port", ep);
    size_t hl = (size_t)(colon - h);
    if ((hl == 1 && h[0] == '*') || (hl == 7 && strncmp(h, "0.0.0.0", 7) == 0))
        snprintf(host, hostlen, "127.0.0.1");
    else
        snprintf(host, hostlen, "%.*s", (int)hl, h);
    *port = (int)p;
    return KF_OK;
}

/* Channel close and free may need a round trip; in non-blocking mode they
 * would return EAGAIN and leave the channel to the session's end, so they
 * run blocking, bounded by the session's timeout. */
static void relay_free(LIBSSH2_SESSION *s, relay *r)
{
    if (r->ch) {
        libssh2_session_set_blocking(s, 1);
        libssh2_channel_close(r->ch);
        libssh2_channel_free(r->ch);
        libssh2_session_set_blocking(s, 0);
    }
    if (r->fd >= 0)
        close(r->fd);
    free(r);
}

/* Drops the session and every relay of t; it will be connected again. */
static void tun_down(tun *t, const char *why)
{
    LIBSSH2_SESSION *s = t->ssh ? kf_ssh_session(t->ssh) : NULL;
    if (s)
        libssh2_session_set_timeout(s, 2000);
    for (size_t i = 0; i < t->nrelays; i++)
        relay_free(s, t->relays[i]);
    t->nrelays = 0;
    if (t->lst) {
        libssh2_session_set_blocking(s, 1);
        libssh2_channel_forward_cancel(t->lst);
    }
    t->lst = NULL;
    kf_ssh_close(&t->ssh);
    if (t->up)
        kf_warn("tunnel.down", "name=%s host=%s reason=\"%s\"", t->spec.name, t->spec.host,
                why ? why : "closed");
    t->up = 0;
    if (why)
        snprintf(t->error, sizeof t->error, "%s", why);
}

static void tun_free(tun *t)
{
    tun_down(t, NULL);
    free(t->relays);
    free(t);
}

static int target_connect(const kf_tunnels *m)
{
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)m->tport);
    if (inet_pton(AF_INET, m->thost, &sa.sin_addr) != 1)
        return -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

/* Connects t (called without the mutex; spec is a copy). */
static int tun_connect(const kf_tunnel_spec *spec, kf_ssh **out, LIBSSH2_LISTENER **lst, int *bound,
                       kf_err *err)
{
    kf_ssh_opts o = {0};
    o.name = spec->name;
    o.host = spec->host;
    o.port = spec->port;
    o.user = spec->user[0] ? spec->user : NULL;
    o.identity = spec->identity[0] ? spec->identity : NULL;
    o.known_hosts = spec->known_hosts[0] ? spec->known_hosts : NULL;
    o.agent_sock = spec->agent_sock[0] ? spec->agent_sock : NULL;
    o.attempts = 1;
    o.timeout_s = CONNECT_TIMEOUT_S;
    kf_ssh *k = NULL;
    int rc = kf_ssh_connect(&o, &k, NULL, err);
    if (rc)
        return rc;
    LIBSSH2_SESSION *s = kf_ssh_session(k);
    *bound = 0;
    *lst = libssh2_channel_forward_listen_ex(s, "127.0.0.1", spec->remote_port, bound, 16);
    if (!*lst) {
        char *m = NULL;
        libssh2_session_last_error(s, &m, NULL, 0);
        rc = kf_err_set(err, KF_EIO,
                        "%s: the node refused the remote forward on 127.0.0.1:%d (%s); is "
                        "AllowTcpForwarding on in its sshd_config?",
                        spec->name, spec->remote_port, m ? m : "?");
        kf_ssh_close(&k);
        return rc;
    }
    if (spec->remote_port)
        *bound = spec->remote_port;
    libssh2_keepalive_config(s, 1, 10);
    libssh2_session_set_blocking(s, 0);
    *out = k;
    return KF_OK;
}

/* Moves bytes until nothing moves. Returns 1 when the relay is finished. */
static int relay_pump(relay *r, int *progress)
{
    for (int pass = 0; pass < 64; pass++) {
        int moved = 0;
        if (r->alen == 0 && !r->ch_eof) {
            ssize_t n = libssh2_channel_read(r->ch, r->a, sizeof r->a);
            if (n > 0) {
                r->alen = (size_t)n;
                r->aoff = 0;
                moved = 1;
            } else if (n == 0 || (n == LIBSSH2_ERROR_EAGAIN && libssh2_channel_eof(r->ch))) {
                r->ch_eof = libssh2_channel_eof(r->ch) || n == 0;
                moved = r->ch_eof;
            } else if (n != LIBSSH2_ERROR_EAGAIN) {
                return 1;
            }
        }
        if (r->aoff < r->alen) {
            ssize_t w = write(r->fd, r->a + r->aoff, r->alen - r->aoff);
            if (w > 0) {
                r->aoff += (size_t)w;
                if (r->aoff == r->alen)
                    r->alen = r->aoff = 0;
                moved = 1;
            } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
                return 1;
            }
        }
        if (r->ch_eof && r->alen == 0 && !r->fd_shut) {
            shutdown(r->fd, SHUT_WR);
            r->fd_shut = 1;
        }
        if (r->blen == 0 && !r->fd_eof) {
            ssize_t n = read(r->fd, r->b, sizeof r->b);
            if (n > 0) {
                r->blen = (size_t)n;
                r->boff = 0;
                moved = 1;
            } else if (n == 0) {
                r->fd_eof = 1;
                moved = 1;
            } else if (errno != EAGAIN && errno != EINTR) {
                return 1;
            }
        }
        if (r->boff < r->blen) {
            ssize_t w = libssh2_channel_write(r->ch, r->b + r->boff, r->blen - r->boff);
            if (w > 0) {
                r->boff += (size_t)w;
                if (r->boff == r->blen)
                    r->blen = r->boff = 0;
                moved = 1;
            } else if (w < 0 && w != LIBSSH2_ERROR_EAGAIN) {
                return 1;
            }
        }
        if (r->fd_eof && r->blen == 0 && !r->ch_sent_eof) {
            int e = libssh2_channel_send_eof(r->ch);
            if (e == 0)
                r->ch_sent_eof = 1;
            else if (e != LIBSSH2_ERROR_EAGAIN)
                return 1;
        }
        if (r->ch_eof && r->fd_eof && r->alen == 0 && r->blen == 0)
            return 1;
        if (!moved)
            break;
        *progress = 1;
    }
    return 0;
}

/* Accepts, pumps, keeps alive. Returns 0, or -1 when the session died. */
static int tun_pump(kf_tunnels *m, tun *t, int *progress)
{
    LIBSSH2_SESSION *s = kf_ssh_session(t->ssh);
    for (;;) {
        LIBSSH2_CHANNEL *ch = libssh2_channel_forward_accept(t->lst);
        if (!ch) {
            int e = libssh2_session_last_errno(s);
            if (e == LIBSSH2_ERROR_EAGAIN)
                break;
            char *msg = NULL;
            libssh2_session_last_error(s, &msg, NULL, 0);
            snprintf(t->error, sizeof t->error, "session lost: %s", msg ? msg : "?");
            return -1;
        }
        int fd = target_connect(m);
        if (fd < 0) {
            kf_warn("tunnel.target", "name=%s target=%s:%d error=\"%s\"", t->spec.name, m->thost,
                    m->tport, strerror(errno));
            libssh2_channel_free(ch);
            continue;
        }
        relay *r = kf_xcalloc(1, sizeof *r);
        r->ch = ch;
        r->fd = fd;
        if (t->nrelays == t->caprelays) {
            t->caprelays = t->caprelays ? 2 * t->caprelays : 4;
            t->relays = kf_xrealloc(t->relays, t->caprelays * sizeof *t->relays);
        }
        t->relays[t->nrelays++] = r;
        kf_debug("tunnel.relay", "name=%s relays=%zu", t->spec.name, t->nrelays);
        *progress = 1;
    }
    for (size_t i = 0; i < t->nrelays;) {
        if (relay_pump(t->relays[i], progress)) {
            relay_free(s, t->relays[i]);
            t->relays[i] = t->relays[--t->nrelays];
            *progress = 1;
        } else {
            i++;
        }
    }
    int next = 0;
    int e = libssh2_keepalive_send(s, &next);
    if (e != 0 && e != LIBSSH2_ERROR_EAGAIN) {
        snprintf(t->error, sizeof t->error, "keepalive failed: session lost");
        return -1;
    }
    return 0;
}

static void *tunnels_main(void *arg)
{
    kf_tunnels *m = arg;
    pthread_mutex_lock(&m->mu);
    while (!m->stop) {
        uint64_t now = kf_mono_ns();
        /* Closing and re-specified tunnels first. */
        for (size_t i = 0; i < m->n;) {
            tun *t = m->t[i];
            if (t->closing) {
                kf_info("tunnel.close", "name=%s host=%s", t->spec.name, t->spec.host);
                tun_free(t);
                m->t[i] = m->t[--m->n];
                continue;
            }
            if (t->respec) {
                tun_down(t, NULL);
                t->respec = 0;
                t->next_try_mono = now;
                t->backoff_s = 0.5;
            }
            i++;
        }
        /* Connect what is down and due; one at a time, outside the lock. */
        for (size_t i = 0; i < m->n && !m->stop; i++) {
            tun *t = m->t[i];
            if (t->ssh || now < t->next_try_mono)
                continue;
            kf_tunnel_spec spec = t->spec;
            pthread_mutex_unlock(&m->mu);
            kf_ssh *k = NULL;
            LIBSSH2_LISTENER *lst = NULL;
            int bound = 0;
            kf_err err;
            kf_err_clear(&err);
            int rc = tun_connect(&spec, &k, &lst, &bound, &err);
            pthread_mutex_lock(&m->mu);
            /* Only this thread removes tunnels, so t is still there; but it
             * may have been closed or re-specified meanwhile. */
            if (rc == KF_OK && (t->closing || t->respec)) {
                libssh2_channel_forward_cancel(lst);
                kf_ssh_close(&k);
                continue;
            }
            if (rc != KF_OK) {
                snprintf(t->error, sizeof t->error, "%s", err.msg);
                t->next_try_mono = kf_mono_ns() + (uint64_t)(t->backoff_s * 1e9);
                kf_debug("tunnel.retry", "name=%s wait_s=%.1f error=\"%s\"", t->spec.name,
                         t->backoff_s, err.msg);
                t->backoff_s = t->backoff_s * 2 > BACKOFF_MAX_S ? BACKOFF_MAX_S : t->backoff_s * 2;
                continue;
            }
            t->ssh = k;
            t->lst = lst;
            t->spec.remote_port = bound;
            t->up = 1;
            t->error[0] = '\0';
            t->backoff_s = 0.5;
            if (t->connects++)
                t->reconnects++;
            kf_info("tunnel.up", "name=%s host=%s:%d remote_port=%d target=%s:%d reconnects=%u",
                    t->spec.name, t->spec.host, t->spec.port, bound, m->thost, m->tport,
                    t->reconnects);
        }
        /* One poll over every session and relay socket. */
        size_t nfds = 0;
        for (size_t i = 0; i < m->n; i++)
            nfds += m->t[i]->ssh ? 1 + m->t[i]->nrelays : 0;
        struct pollfd *pf = kf_xcalloc(nfds ? nfds : 1, sizeof *pf);
        size_t k = 0;
        for (size_t i = 0; i < m->n; i++) {
            tun *t = m->t[i];
            if (!t->ssh)
                continue;
            int dir = libssh2_session_block_directions(kf_ssh_session(t->ssh));
            pf[k++] = (struct pollfd){
                kf_ssh_fd(t->ssh),
                (short)(POLLIN | (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND ? POLLOUT : 0)), 0};
            for (size_t j = 0; j < t->nrelays; j++) {
                relay *r = t->relays[j];
                short ev = 0;
                if (r->blen == 0 && !r->fd_eof)
                    ev |= POLLIN;
                if (r->aoff < r->alen)
                    ev |= POLLOUT;
                pf[k++] = (struct pollfd){r->fd, ev, 0};
            }
        }
        pthread_mutex_unlock(&m->mu);
        poll(pf, k, 50);
        free(pf);
        pthread_mutex_lock(&m->mu);
        for (int round = 0; round < 8; round++) {
            int progress = 0;
            for (size_t i = 0; i < m->n; i++) {
                tun *t = m->t[i];
                if (!t->ssh || t->closing)
                    continue;
                if (tun_pump(m, t, &progress) != 0) {
                    char why[512];
                    snprintf(why, sizeof why, "%s", t->error);
                    tun_down(t, why);
                    t->next_try_mono = kf_mono_ns() + (uint64_t)(t->backoff_s * 1e9);
                }
            }
            if (!progress)
                break;
        }
    }
    for (size_t i = 0; i < m->n; i++)
        tun_free(m->t[i]);
    m->n = 0;
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

int kf_tunnels_new(const char *target_host, int target_port, kf_tunnels **out, kf_err *err)
{
    *out = NULL;
    if (kf_ssh_global_init(err) != KF_OK)
        return err ? err->code : KF_EIO;
    kf_tunnels *m = kf_xcalloc(1, sizeof *m);
    snprintf(m->thost, sizeof m->thost, "%s", target_host);
    m->tport = target_port;
    pthread_mutex_init(&m->mu, NULL);
    if (pthread_create(&m->th, NULL, tunnels_main, m) != 0) {
        pthread_mutex_destroy(&m->mu);
        free(m);
        return kf_err_set(err, KF_EIO, "cannot start the tunnel thread");
    }
    *out = m;
    return KF_OK;
}

void kf_tunnels_destroy(kf_tunnels **self)
{
    if (!self || !*self)
        return;
    kf_tunnels *m = *self;
    pthread_mutex_lock(&m->mu);
    m->stop = 1;
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->th, NULL);
    pthread_mutex_destroy(&m->mu);
    free(m->t);
    free(m);
    *self = NULL;
}

int kf_tunnels_open(kf_tunnels *m, const kf_tunnel_spec *spec, kf_err *err)
{
    if (!spec->name[0] || !spec->host[0])
        return kf_err_set(err, KF_EINVAL, "a tunnel needs a name and a host");
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->n; i++) {
        tun *t = m->t[i];
        if (t->closing || strcmp(t->spec.name, spec->name) != 0)
            continue;
        /* The same node again (a second launch): keep a live session. */
        int same = strcmp(t->spec.host, spec->host) == 0 && t->spec.port == spec->port &&
                   strcmp(t->spec.user, spec->user) == 0 &&
                   strcmp(t->spec.identity, spec->identity) == 0 &&
                   (spec->remote_port == 0 || spec->remote_port == t->spec.remote_port);
        if (!same) {
            int keep = t->spec.remote_port;
            t->spec = *spec;
            if (!spec->remote_port && strcmp(t->spec.host, spec->host) == 0)
                t->spec.remote_port = keep;
            t->respec = 1;
        } else if (!t->ssh) {
            t->next_try_mono = 0; /* retry now rather than after the backoff */
        }
        pthread_mutex_unlock(&m->mu);
        return KF_OK;
    }
    tun *t = kf_xcalloc(1, sizeof *t);
    t->spec = *spec;
    t->backoff_s = 0.5;
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 8;
        m->t = kf_xrealloc(m->t, m->cap * sizeof *m->t);
    }
    m->t[m->n++] = t;
    pthread_mutex_unlock(&m->mu);
    kf_info("tunnel.open", "name=%s host=%s:%d remote_port=%d", spec->name, spec->host, spec->port,
            spec->remote_port);
    return KF_OK;
}

int kf_tunnels_close(kf_tunnels *m, const char *name, kf_err *err)
{
    int found = 0;
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->t[i]->spec.name, name) == 0 && !m->t[i]->closing) {
            m->t[i]->closing = 1;
            found = 1;
        }
    pthread_mutex_unlock(&m->mu);
    return found ? KF_OK : kf_err_set(err, KF_ENOTFOUND, "no tunnel named %s", name);
}

int kf_tunnels_list(kf_tunnels *m, const char *name, kf_tunnel_info **out, size_t *n)
{
    pthread_mutex_lock(&m->mu);
    kf_tunnel_info *v = kf_xcalloc(m->n ? m->n : 1, sizeof *v);
    size_t k = 0;
    for (size_t i = 0; i < m->n; i++) {
        tun *t = m->t[i];
        if (t->closing || (name && *name && strcmp(t->spec.name, name) != 0))
            continue;
        kf_tunnel_info *x = &v[k++];
        snprintf(x->name, sizeof x->name, "%s", t->spec.name);
        snprintf(x->host, sizeof x->host, "%s", t->spec.host);
        x->remote_port = t->up ? t->spec.remote_port : 0;
        x->up = t->up;
        x->reconnects = t->reconnects;
        x->relays = (unsigned)t->nrelays;
        snprintf(x->error, sizeof x->error, "%s", t->error);
    }
    pthread_mutex_unlock(&m->mu);
    *out = v;
    *n = k;
    return KF_OK;
}
