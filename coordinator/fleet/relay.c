/* relay — kf_relay (relay.h): one thread, poll() over the listener and
 * every pair of sockets. Each direction has one buffer, refilled only when
 * empty, so a slow reader throttles its writer instead of growing memory;
 * a half-close is passed on (shutdown SHUT_WR), and a pair goes when both
 * directions are done or either side fails.
 *
 * Descriptors: the soft RLIMIT_NOFILE is raised to the hard one, max_conns
 * lowered so that every pair's two descriptors fit with RESERVE_FDS to
 * spare, and one descriptor is kept open on /dev/null: when accept fails
 * with EMFILE anyway (the rest of the process took them), it is closed, the
 * waiting connection accepted and closed, and reopened, so the listener
 * does not stay readable forever with nobody to take the connection. */
#include "fleet/relay.h"
#include "common/fdlimit.h"
#include "common/log.h"
#include "common/util.h"
#include "common/xalloc.h"

#include <arpa/inet.h>
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
#include <sys/un.h>
#include <unistd.h>

#define RELAY_BUF 65536
#define RESERVE_FDS 16
#define SHED_LOG_NS 5000000000ull

typedef struct half {
    char buf[RELAY_BUF];
    size_t len, off;
    int eof;  /* the reading side has closed */
    int shut; /* passed on to the writing side */
} half;

typedef struct pair {
    int fd[2]; /* 0 the accepted side, 1 the target (-1 until the first bytes) */
    half h[2]; /* h[i]: read from fd[i], written to fd[1-i] */
    int connecting;
    size_t got;     /* bytes the accepted side has sent, counted to the greeting */
    uint64_t since; /* kf_mono_ns at accept */
    char src[INET6_ADDRSTRLEN];
} pair;

struct kf_relay {
    kf_relay_opts o;
    int lfd, port, reserve;
    struct sockaddr_storage to;
    socklen_t to_len;
    pair **v;
    struct pollfd *pf;
    size_t n, max;
    uint64_t silent, per_source, full, evicted, emfile, last_log; /* shed since last_log */
};

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

static int wildcard(const char *host)
{
    return !host[0] || strcmp(host, "*") == 0 || strcmp(host, "0.0.0.0") == 0 ||
           strcmp(host, "::") == 0;
}

static int resolve(const char *hp, int passive, int any_ok, struct addrinfo **out, kf_err *err)
{
    char host[256], port[16];
    int rc = split(hp, host, sizeof host, port, sizeof port, err);
    if (rc)
        return rc;
    if (passive && wildcard(host) && !any_ok)
        return kf_err_set(
            err, KF_EINVAL,
            "relay: '%s' listens on every address of this machine; give the "
            "address the other machines reach it at (a launched host's relay_host), or pass "
            "--any-address to mean it",
            hp);
    struct addrinfo hints = {0};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    int g = getaddrinfo(passive && wildcard(host) ? NULL : host, port, &hints, out);
    if (g != 0)
        return kf_err_set(err, KF_EINVAL, "relay: cannot resolve %s: %s", hp, gai_strerror(g));
    return KF_OK;
}

static int loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    return sa->sa_family == AF_INET6 &&
           IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

/* A host *name* that resolves only to loopback here (Debian maps its own
 * name to 127.0.1.1) is not where other machines reach it. */
static int loopback_name(const char *hp, const struct addrinfo *ai)
{
    char host[256], port[16];
    unsigned char buf[sizeof(struct in6_addr)];
    if (split(hp, host, sizeof host, port, sizeof port, NULL) != KF_OK ||
        inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1)
        return 0;
    for (const struct addrinfo *a = ai; a; a = a->ai_next)
        if (!loopback(a->ai_addr))
            return 0;
    return 1;
}

static int listen_on(kf_relay *r, kf_err *err)
{
    struct addrinfo *ai = NULL;
    int rc = resolve(r->o.listen, 1, r->o.any_address, &ai, err);
    if (rc)
        return rc;
    if (loopback_name(r->o.listen, ai)) {
        freeaddrinfo(ai);
        return kf_err_set(err, KF_EINVAL,
                          "relay: '%s' is a loopback address on this machine, which other "
                          "machines cannot reach; give the address they reach it at (a launched "
                          "host's relay_host)",
                          r->o.listen);
    }
    int fd = -1;
    char why[256] = "no address";
    for (struct addrinfo *a = ai; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
            continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 128) == 0)
            break;
        snprintf(why, sizeof why, "%s", strerror(errno));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    if (fd < 0)
        return kf_err_set(err, KF_EIO, "relay: cannot listen on %s: %s", r->o.listen, why);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    r->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                             : ((struct sockaddr_in *)&ss)->sin_port);
    r->lfd = fd;
    return KF_OK;
}

static int target(kf_relay *r, kf_err *err)
{
    if (strncmp(r->o.to, "unix:", 5) == 0) {
        struct sockaddr_un *un = (struct sockaddr_un *)&r->to;
        if (strlen(r->o.to + 5) >= sizeof un->sun_path || !r->o.to[5])
            return kf_err_set(err, KF_EINVAL, "relay: '%s' is not unix:PATH", r->o.to);
        un->sun_family = AF_UNIX;
        snprintf(un->sun_path, sizeof un->sun_path, "%s", r->o.to + 5);
        r->to_len = sizeof *un;
        return KF_OK;
    }
    struct addrinfo *ai = NULL;
    int rc = resolve(r->o.to, 0, 1, &ai, err);
    if (rc)
        return rc;
    memcpy(&r->to, ai->ai_addr, ai->ai_addrlen);
    r->to_len = ai->ai_addrlen;
    freeaddrinfo(ai);
    return KF_OK;
}

static int write_port_file(const kf_relay *r, kf_err *err)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", r->o.port_file);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", r->port) < 0 || fclose(f) != 0 || rename(tmp, r->o.port_file))
        return kf_err_set(err, KF_EIO, "relay: cannot write %s: %s", r->o.port_file,
                          strerror(errno));
    return KF_OK;
}

int kf_relay_new(const kf_relay_opts *o, kf_relay **out, kf_err *err)
{
    kf_relay *r = kf_xcalloc(1, sizeof *r);
    r->o = *o;
    r->lfd = r->reserve = -1;
    if (r->o.handshake_ms <= 0)
        r->o.handshake_ms = 2000;
    int rc = listen_on(r, err);
    if (!rc)
        rc = target(r, err);
    if (!rc && o->port_file)
        rc = write_port_file(r, err);
    if (rc) {
        kf_relay_destroy(&r);
        return rc;
    }
    long fds = kf_fdlimit_raise();
    long want = o->max_conns > 0 ? o->max_conns : 1024;
    long fit = (fds - RESERVE_FDS) / 2;
    r->max = (size_t)(want < fit ? want : fit > 1 ? fit : 1);
    r->reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
    r->v = kf_xcalloc(r->max, sizeof *r->v);
    r->pf = kf_xcalloc(r->max * 2 + 1, sizeof *r->pf);
    kf_info("relay.listen",
            "listen=%s port=%d to=%s max_conns=%zu per_source=%d handshake_ms=%d fd_limit=%ld",
            o->listen, r->port, o->to, r->max, o->per_source, r->o.handshake_ms, fds);
    *out = r;
    return KF_OK;
}

int kf_relay_port(const kf_relay *self)
{
    return self->port;
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
            if (i == 0)
                p->got += (size_t)n;
        } else if (n == 0) {
            h->eof = 1;
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            return -1;
        }
    }
    if (to < 0 || p->connecting)
        return 0;
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

static short want(const pair *p, int k)
{
    if (p->fd[1] < 0) /* waiting for the first bytes */
        return k == 0 && p->h[0].len == 0 && !p->h[0].eof ? POLLIN : 0;
    if (p->connecting)
        return k == 1 ? POLLOUT : 0;
    short ev = 0;
    const half *in = &p->h[k], *out = &p->h[1 - k];
    if (in->len == 0 && !in->eof)
        ev |= POLLIN;
    if (out->len > out->off)
        ev |= POLLOUT;
    return ev;
}

/* The first bytes are in: connect the target. -1 when it cannot start. */
static int connect_target(kf_relay *r, pair *p)
{
    int tfd = socket(r->to.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (tfd < 0) {
        kf_warn("relay.connect", "to=%s error=\"%s\"", r->o.to, strerror(errno));
        return -1;
    }
    int one = 1;
    if (r->to.ss_family != AF_UNIX)
        setsockopt(tfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(tfd, (struct sockaddr *)&r->to, r->to_len) != 0 && errno != EINPROGRESS &&
        errno != EAGAIN) {
        kf_warn("relay.connect", "to=%s error=\"%s\"", r->o.to, strerror(errno));
        close(tfd);
        return -1;
    }
    p->fd[1] = tfd;
    p->connecting = 1;
    return 0;
}

/* One pair's poll results; -1 when it is to go. */
static int step(kf_relay *r, pair *p, short r0, short r1)
{
    if (p->fd[1] < 0) {
        if (!r0)
            return 0;
        if (pump(p, 0) < 0 || p->h[0].eof || (r0 & (POLLERR | POLLNVAL)))
            return -1;
        return p->h[0].len ? connect_target(r, p) : 0;
    }
    if (p->connecting) {
        if (!r1)
            return 0;
        int e = 0;
        socklen_t el = sizeof e;
        getsockopt(p->fd[1], SOL_SOCKET, SO_ERROR, &e, &el);
        if (e) {
            kf_warn("relay.connect", "to=%s error=\"%s\"", r->o.to, strerror(e));
            return -1;
        }
        p->connecting = 0;
        return pump(p, 0); /* what came before the connection */
    }
    if (!r0 && !r1)
        return 0;
    if (pump(p, 0) < 0 || pump(p, 1) < 0 || ((r0 | r1) & (POLLERR | POLLNVAL)))
        return -1;
    return p->h[0].shut && p->h[1].shut ? -1 : 0;
}

/* Still in its greeting past the deadline. */
static int silent(const kf_relay *r, const pair *p, uint64_t now)
{
    uint64_t age_ms = (now - p->since) / 1000000;
    return (p->got < KF_RELAY_SIGNATURE && age_ms > (uint64_t)r->o.handshake_ms) ||
           (p->got < KF_RELAY_GREETING && age_ms > 4 * (uint64_t)r->o.handshake_ms);
}

static void compact(kf_relay *r)
{
    size_t w = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i])
            r->v[w++] = r->v[i];
    r->n = w;
}

static void log_shed(kf_relay *r, uint64_t now, int force)
{
    uint64_t total = r->silent + r->per_source + r->full + r->evicted + r->emfile;
    if (!total || (!force && now - r->last_log < SHED_LOG_NS))
        return;
    kf_warn("relay.shed",
            "listen=%s silent=%llu per_source=%llu full=%llu evicted=%llu emfile=%llu open=%zu "
            "max_conns=%zu hint=\"connections that stay silent or come in floods are closed; "
            "agents retry\"",
            r->o.listen, (unsigned long long)r->silent, (unsigned long long)r->per_source,
            (unsigned long long)r->full, (unsigned long long)r->evicted,
            (unsigned long long)r->emfile, r->n, r->max);
    r->silent = r->per_source = r->full = r->evicted = r->emfile = 0;
    r->last_log = now;
}

static void source_of(int fd, char *out, size_t ol)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    out[0] = '\0';
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) != 0)
        return;
    if (ss.ss_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, out, (socklen_t)ol);
    else if (ss.ss_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, out, (socklen_t)ol);
}

/* How far into its greeting: 0 nothing yet, 1 the signature, 2 all of it. */
static int stage(const pair *p)
{
    return p->got >= KF_RELAY_GREETING ? 2 : p->got >= KF_RELAY_SIGNATURE ? 1 : 0;
}

/* Which to close first to make room: the less advanced, then the older. */
static int goes_before(const pair *a, const pair *b)
{
    return stage(a) != stage(b) ? stage(a) < stage(b) : a->since < b->since;
}

/* Takes one waiting connection, if the limits let it in. */
static void admit(kf_relay *r, uint64_t now)
{
    int cfd = accept4(r->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (cfd < 0) {
        if ((errno == EMFILE || errno == ENFILE) && r->reserve >= 0) {
            close(r->reserve); /* take it and let it go, or it waits forever */
            cfd = accept4(r->lfd, NULL, NULL, SOCK_CLOEXEC);
            if (cfd >= 0)
                close(cfd);
            r->reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
            r->emfile++;
        }
        return;
    }
    char src[INET6_ADDRSTRLEN];
    source_of(cfd, src, sizeof src);
    if (r->o.per_source > 0) {
        int same = 0;
        for (size_t i = 0; i < r->n; i++)
            same += strcmp(r->v[i]->src, src) == 0;
        if (same >= r->o.per_source) {
            r->per_source++;
            close(cfd);
            return;
        }
    }
    if (r->n == r->max) { /* full: the oldest of the least advanced in their greeting goes */
        size_t old = r->n;
        for (size_t i = 0; i < r->n; i++)
            if (stage(r->v[i]) < 2 && (old == r->n || goes_before(r->v[i], r->v[old])))
                old = i;
        if (old == r->n) {
            r->full++;
            close(cfd);
            return;
        }
        pair_close(r->v[old]);
        r->v[old] = r->v[--r->n];
        r->evicted++;
    }
    int one = 1;
    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    pair *p = kf_xcalloc(1, sizeof *p);
    p->fd[0] = cfd;
    p->fd[1] = -1;
    p->since = now;
    snprintf(p->src, sizeof p->src, "%s", src);
    r->v[r->n++] = p;
}

int kf_relay_run(kf_relay *r, kf_err *err)
{
    int rc = KF_OK;
    while (!(r->o.stop && *r->o.stop)) {
        r->pf[0] = (struct pollfd){.fd = r->lfd, .events = POLLIN};
        for (size_t i = 0; i < r->n; i++)
            for (int k = 0; k < 2; k++)
                r->pf[1 + 2 * i + k] =
                    (struct pollfd){.fd = r->v[i]->fd[k], .events = want(r->v[i], k)};
        int got = poll(r->pf, 1 + 2 * r->n, 200);
        if (got < 0 && errno != EINTR) {
            rc = kf_err_set(err, KF_EIO, "relay: poll: %s", strerror(errno));
            break;
        }
        uint64_t now = kf_mono_ns();
        for (size_t i = 0; i < r->n; i++) {
            pair *p = r->v[i];
            short r0 = got > 0 ? r->pf[1 + 2 * i].revents : 0;
            short r1 = got > 0 ? r->pf[2 + 2 * i].revents : 0;
            int bad = step(r, p, r0, r1) < 0;
            if (!bad && silent(r, p, now)) {
                r->silent++;
                bad = 1;
            }
            if (bad) {
                pair_close(p);
                r->v[i] = NULL;
            }
        }
        compact(r);
        /* A bounded batch per turn, so that established pairs keep moving. */
        for (int a = 0; a < 64 && got > 0 && (r->pf[0].revents & POLLIN); a++) {
            struct pollfd l = {.fd = r->lfd, .events = POLLIN};
            if (a > 0 && poll(&l, 1, 0) <= 0)
                break;
            admit(r, now);
        }
        log_shed(r, now, 0);
    }
    log_shed(r, kf_mono_ns(), 1);
    return rc;
}

void kf_relay_destroy(kf_relay **self)
{
    kf_relay *r = *self;
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        pair_close(r->v[i]);
    free(r->v);
    free(r->pf);
    if (r->lfd >= 0)
        close(r->lfd);
    if (r->reserve >= 0)
        close(r->reserve);
    free(r);
    *self = NULL;
}
