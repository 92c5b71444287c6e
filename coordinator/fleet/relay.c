/* relay — kf_relay_run (relay.h): one thread, poll() over the listener and
 * every pair of sockets. Each direction has one buffer, refilled only when
 * empty, so a slow reader throttles its writer instead of growing memory;
 * a half-close is passed on (shutdown SHUT_WR), and a pair goes when both
 * directions are done or either side fails. */
#include "fleet/relay.h"
#include "common/xalloc.h"

#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define RELAY_BUF 65536

typedef struct half {
    char buf[RELAY_BUF];
    size_t len, off;
    int eof;  /* the reading side has closed */
    int shut; /* passed on to the writing side */
} half;

typedef struct pair {
    int fd[2]; /* 0 the accepted side, 1 the target */
    half h[2]; /* h[i]: read from fd[i], written to fd[1-i] */
    int connecting;
} pair;

static int split(const char *hp, char *host, size_t hl, char *port, size_t pl, kf_err *err)
{
    const char *c = strrchr(hp, ':');
    if (!c || c == hp || !c[1] || (size_t)(c - hp) >= hl || strlen(c + 1) >= pl)
        return kf_err_set(err, KF_EINVAL, "relay: '%s' is not HOST:PORT", hp);
    memcpy(host, hp, (size_t)(c - hp));
    host[c - hp] = '\0';
    if (host[0] == '[' && host[strlen(host) - 1] == ']') {
        memmove(host, host + 1, strlen(host));
        host[strlen(host) - 1] = '\0';
    }
    snprintf(port, pl, "%s", c + 1);
    return KF_OK;
}

static int resolve(const char *hp, int passive, struct addrinfo **out, kf_err *err)
{
    char host[256], port[16];
    int rc = split(hp, host, sizeof host, port, sizeof port, err);
    if (rc)
        return rc;
    struct addrinfo hints = {0};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    int g = getaddrinfo(host, port, &hints, out);
    if (g != 0)
        return kf_err_set(err, KF_EINVAL, "relay: cannot resolve %s: %s", hp, gai_strerror(g));
    return KF_OK;
}

static void nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int listen_on(const char *hp, int *port, int *out, kf_err *err)
{
    struct addrinfo *ai = NULL;
    int rc = resolve(hp, 1, &ai, err);
    if (rc)
        return rc;
    int fd = -1;
    char why[256] = "no address";
    for (struct addrinfo *a = ai; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 64) == 0)
            break;
        snprintf(why, sizeof why, "%s", strerror(errno));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    if (fd < 0)
        return kf_err_set(err, KF_EIO, "relay: cannot listen on %s: %s", hp, why);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                           : ((struct sockaddr_in *)&ss)->sin_port);
    nonblock(fd);
    *out = fd;
    return KF_OK;
}

static void pair_close(pair *p)
{
    for (int i = 0; i < 2; i++)
        if (p->fd[i] >= 0)
            close(p->fd[i]);
    free(p);
}

/* Moves bytes for one direction; -1 when the pair is broken. */
static int pump(pair *p, int i)
{
    half *h = &p->h[i];
    int from = p->fd[i], to = p->fd[1 - i];
    if (h->len == h->off && !h->eof) {
        ssize_t n = read(from, h->buf, sizeof h->buf);
        if (n > 0) {
            h->len = (size_t)n;
            h->off = 0;
        } else if (n == 0) {
            h->eof = 1;
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            return -1;
        }
    }
    while (h->off < h->len) {
        ssize_t n = send(to, h->buf + h->off, h->len - h->off, MSG_NOSIGNAL);
        if (n > 0) {
            h->off += (size_t)n;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            break;
        } else {
            return -1;
        }
    }
    if (h->off == h->len)
        h->off = h->len = 0;
    if (h->eof && h->len == 0 && !h->shut) {
        shutdown(to, SHUT_WR);
        h->shut = 1;
    }
    return 0;
}

static short want(const pair *p, int fd_index)
{
    if (p->connecting)
        return fd_index == 1 ? POLLOUT : 0;
    short ev = 0;
    const half *in = &p->h[fd_index], *out = &p->h[1 - fd_index];
    if (in->len == 0 && !in->eof)
        ev |= POLLIN;
    if (out->len > out->off)
        ev |= POLLOUT;
    return ev;
}

int kf_relay_run(const kf_relay_opts *o, kf_err *err)
{
    int port = 0, lfd = -1;
    int rc = listen_on(o->listen, &port, &lfd, err);
    if (rc)
        return rc;
    struct addrinfo *target = NULL;
    rc = resolve(o->to, 0, &target, err);
    if (rc) {
        close(lfd);
        return rc;
    }
    if (o->port_file) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", o->port_file);
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%d\n", port) < 0 || fclose(f) != 0 || rename(tmp, o->port_file)) {
            rc = kf_err_set(err, KF_EIO, "relay: cannot write %s: %s", o->port_file,
                            strerror(errno));
            freeaddrinfo(target);
            close(lfd);
            return rc;
        }
    }
    kf_info("relay.listen", "listen=%s port=%d to=%s", o->listen, port, o->to);
    int maxc = o->max_conns > 0 ? o->max_conns : 256;
    pair **v = kf_xcalloc((size_t)maxc, sizeof *v);
    struct pollfd *pf = kf_xcalloc((size_t)maxc * 2 + 1, sizeof *pf);
    size_t n = 0;
    while (!(o->stop && *o->stop)) {
        pf[0] = (struct pollfd){.fd = lfd, .events = n < (size_t)maxc ? POLLIN : 0};
        for (size_t i = 0; i < n; i++)
            for (int k = 0; k < 2; k++)
                pf[1 + 2 * i + k] = (struct pollfd){.fd = v[i]->fd[k], .events = want(v[i], k)};
        int r = poll(pf, 1 + 2 * n, 200);
        if (r < 0 && errno != EINTR) {
            rc = kf_err_set(err, KF_EIO, "relay: poll: %s", strerror(errno));
            break;
        }
        if (r <= 0)
            continue;
        size_t before = n;
        for (size_t i = 0; i < before; i++) {
            pair *p = v[i];
            int bad = 0;
            short r0 = pf[1 + 2 * i].revents, r1 = pf[2 + 2 * i].revents;
            if (p->connecting && r1) {
                int e = 0;
                socklen_t el = sizeof e;
                getsockopt(p->fd[1], SOL_SOCKET, SO_ERROR, &e, &el);
                if (e) {
                    kf_warn("relay.connect", "to=%s error=\"%s\"", o->to, strerror(e));
                    bad = 1;
                } else {
                    p->connecting = 0;
                }
            } else if (!p->connecting && (r0 || r1)) {
                bad = pump(p, 0) < 0 || pump(p, 1) < 0;
                if ((r0 | r1) & (POLLERR | POLLNVAL))
                    bad = 1;
            }
            if (bad || (p->h[0].shut && p->h[1].shut)) {
                pair_close(p);
                v[i] = NULL;
            }
        }
        size_t w = 0;
        for (size_t i = 0; i < n; i++)
            if (v[i])
                v[w++] = v[i];
        n = w;
        if (pf[0].revents & POLLIN) {
            int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (cfd >= 0) {
                int tfd = socket(target->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                int one = 1;
                if (tfd >= 0) {
                    setsockopt(tfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                }
                if (tfd < 0 || (connect(tfd, target->ai_addr, target->ai_addrlen) != 0 &&
                                errno != EINPROGRESS)) {
                    kf_warn("relay.connect", "to=%s error=\"%s\"", o->to, strerror(errno));
                    close(cfd);
                    if (tfd >= 0)
                        close(tfd);
                } else {
                    pair *p = kf_xcalloc(1, sizeof *p);
                    p->fd[0] = cfd;
                    p->fd[1] = tfd;
                    p->connecting = 1;
                    v[n++] = p;
                }
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        pair_close(v[i]);
    free(v);
    free(pf);
    freeaddrinfo(target);
    close(lfd);
    return rc;
}
