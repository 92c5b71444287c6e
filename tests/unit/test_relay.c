/* test_relay — the TCP relay of Slurm logins (relay.c) over real loopback
 * sockets: bytes arrive intact and in order both ways on several
 * connections at once (more than its 64 KiB buffer each way, so a slow side
 * throttles the other), a half-close is passed on, a target that refuses
 * closes the client's connection instead of holding it, the port file holds
 * the bound port, bad addresses (and a wildcard one not asked for) are
 * KF_EINVAL; a connection silent past the handshake deadline is closed and
 * never reaches the target, one source cannot take more than its share,
 * and a full relay makes room by closing the oldest connection still in
 * its greeting. */
#include "fleet/relay.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <netdb.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_ECHO 8

/* An echo server: each connection echoes until EOF, then closes. */
typedef struct echo {
    int lfd, port;
    pthread_t acceptor, conn[MAX_ECHO];
    int nconn;
} echo;

static void *echo_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(fd, buf + off, (size_t)(n - off));
            if (w <= 0)
                goto out;
            off += w;
        }
out:
    close(fd);
    return NULL;
}

static void *echo_accept(void *arg)
{
    echo *e = arg;
    while (e->nconn < MAX_ECHO) {
        int fd = accept(e->lfd, NULL, NULL);
        if (fd < 0)
            break;
        pthread_create(&e->conn[e->nconn++], NULL, echo_conn, (void *)(intptr_t)fd);
    }
    return NULL;
}

static int listener(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 16), 0);
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    *port = ntohs(a.sin_port);
    return fd;
}

static void echo_start(echo *e)
{
    memset(e, 0, sizeof *e);
    e->lfd = listener(&e->port);
    pthread_create(&e->acceptor, NULL, echo_accept, e);
}

static void echo_stop(echo *e)
{
    shutdown(e->lfd, SHUT_RDWR);
    close(e->lfd);
    pthread_join(e->acceptor, NULL);
    for (int i = 0; i < e->nconn; i++)
        pthread_join(e->conn[i], NULL);
}

typedef struct relay {
    char listen[64], to[64], port_file[128];
    int per_source, max_conns, handshake_ms;
    volatile sig_atomic_t stop;
    kf_relay_opts o;
    kf_err err;
    int rc, port;
    pthread_t th;
} relay;

static void *relay_main(void *arg)
{
    relay *r = arg;
    kf_relay *k = NULL;
    r->rc = kf_relay_new(&r->o, &k, &r->err);
    if (r->rc == KF_OK)
        r->rc = kf_relay_run(k, &r->err);
    kf_relay_destroy(&k);
    return NULL;
}

/* Starts a relay to 127.0.0.1:to_port; its port once the port file says. */
static void relay_start_with(relay *r, int to_port, int per_source, int max_conns, int handshake_ms)
{
    memset(r, 0, sizeof *r);
    snprintf(r->listen, sizeof r->listen, "127.0.0.1:0");
    snprintf(r->to, sizeof r->to, "127.0.0.1:%d", to_port);
    snprintf(r->port_file, sizeof r->port_file, "/tmp/kf-relay-test-%d.port", (int)getpid());
    unlink(r->port_file);
    r->o = (kf_relay_opts){.listen = r->listen,
                           .to = r->to,
                           .port_file = r->port_file,
                           .per_source = per_source,
                           .max_conns = max_conns,
                           .handshake_ms = handshake_ms,
                           .stop = &r->stop};
    pthread_create(&r->th, NULL, relay_main, r);
    for (int i = 0; i < 500 && r->port == 0; i++) {
        FILE *f = fopen(r->port_file, "r");
        if (f) {
            if (fscanf(f, "%d", &r->port) != 1)
                r->port = 0;
            fclose(f);
        }
        if (r->port == 0)
            usleep(10000);
    }
    assert_true(r->port > 0);
}

static void relay_start(relay *r, int to_port)
{
    relay_start_with(r, to_port, 0, 0, 0);
}

static int relay_stop(relay *r)
{
    r->stop = 1;
    pthread_join(r->th, NULL);
    unlink(r->port_file);
    return r->rc;
}

/* A connection to the relay from source address src (any of 127/8). */
static int dial_from(const char *src, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, src, &a.sin_addr);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    a.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

static int dial(int port)
{
    return dial_from("127.0.0.1", port);
}

/* Writes all of out while reading back into in (both len bytes): a client
 * that only wrote first would deadlock against any bounded relay. */
static void exchange(int fd, const unsigned char *out, unsigned char *in, size_t len)
{
    size_t w = 0, r = 0;
    while (r < len) {
        struct pollfd p = {.fd = fd, .events = POLLIN | (w < len ? POLLOUT : 0)};
        assert_true(poll(&p, 1, 10000) > 0);
        if ((p.revents & POLLOUT) && w < len) {
            size_t chunk = len - w < 8192 ? len - w : 8192;
            ssize_t n = send(fd, out + w, chunk, MSG_NOSIGNAL | MSG_DONTWAIT);
            assert_true(n > 0 || errno == EAGAIN);
            if (n > 0)
                w += (size_t)n;
        }
        if (p.revents & POLLIN) {
            ssize_t n = recv(fd, in + r, len - r, MSG_DONTWAIT);
            assert_true(n > 0);
            r += (size_t)n;
        }
    }
}

static void test_bytes_both_ways(void **state)
{
    (void)state;
    echo e;
    echo_start(&e);
    relay r;
    relay_start(&r, e.port);
    enum { CONNS = 3, LEN = 1 << 20 };
    int fd[CONNS];
    unsigned char *out = malloc(LEN), *in = malloc(LEN);
    for (int c = 0; c < CONNS; c++)
        fd[c] = dial(r.port);
    for (int c = 0; c < CONNS; c++) {
        for (size_t i = 0; i < LEN; i++)
            out[i] = (unsigned char)(i * 31 + (size_t)c * 7 + i / 4099);
        memset(in, 0, LEN);
        exchange(fd[c], out, in, LEN);
        assert_memory_equal(in, out, LEN);
    }
    /* Half-close: the echo server sees EOF, closes, and so does the client. */
    for (int c = 0; c < CONNS; c++) {
        assert_int_equal(shutdown(fd[c], SHUT_WR), 0);
        char b;
        assert_int_equal(recv(fd[c], &b, 1, 0), 0);
        close(fd[c]);
    }
    free(out);
    free(in);
    assert_int_equal(relay_stop(&r), KF_OK);
    echo_stop(&e);
    assert_int_equal(e.nconn, CONNS);
}

static void test_target_refuses(void **state)
{
    (void)state;
    int port;
    int lfd = listener(&port);
    close(lfd); /* nothing listens there now */
    relay r;
    relay_start(&r, port);
    int fd = dial(r.port);
    char b = 0;
    assert_int_equal(send(fd, &b, 1, 0), 1); /* the target is tried on the first bytes */
    ssize_t n = recv(fd, &b, 1, 0);          /* closed by the relay, not left hanging */
    assert_true(n == 0 || (n < 0 && errno == ECONNRESET));
    close(fd);
    assert_int_equal(relay_stop(&r), KF_OK);
}

/* Bytes in, the same bytes back: the connection is relayed. */
static int echoes(int fd, size_t len)
{
    unsigned char out[KF_RELAY_GREETING * 2], in[sizeof out];
    for (size_t i = 0; i < len; i++)
        out[i] = (unsigned char)(i * 7 + 1);
    exchange(fd, out, in, len);
    return memcmp(in, out, len) == 0;
}

/* Closed by the relay (EOF or reset), waiting up to the socket's 10 s. */
static int closed_by_relay(int fd)
{
    char b;
    ssize_t n = recv(fd, &b, 1, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

/* A connection that sends nothing is closed once the handshake deadline
 * has passed, and the target never sees it; one that sends the signature
 * but not the rest of the greeting is closed at four times the deadline;
 * one that sent its greeting stays, however long it then stays quiet. */
static void test_silent_dropped(void **state)
{
    (void)state;
    echo e;
    echo_start(&e);
    relay r;
    relay_start_with(&r, e.port, 0, 0, 100);
    int quiet = dial(r.port), sig = dial(r.port), good = dial(r.port);
    assert_true(echoes(sig, KF_RELAY_SIGNATURE));
    assert_true(echoes(good, KF_RELAY_GREETING));
    assert_true(closed_by_relay(quiet));
    assert_true(closed_by_relay(sig));
    struct pollfd p = {.fd = good, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 1000), 0); /* 10 x the deadline: still open */
    assert_true(echoes(good, KF_RELAY_GREETING));
    close(quiet);
    close(sig);
    close(good);
    assert_int_equal(relay_stop(&r), KF_OK);
    echo_stop(&e);
    assert_int_equal(e.nconn, 2); /* the silent one never reached the target */
}

/* At most per_source connections from one address: the next one from it
 * is closed, while another address still gets in. */
static void test_per_source(void **state)
{
    (void)state;
    echo e;
    echo_start(&e);
    relay r;
    relay_start_with(&r, e.port, 2, 0, 60000);
    int a1 = dial_from("127.0.0.2", r.port), a2 = dial_from("127.0.0.2", r.port);
    assert_true(echoes(a1, 16));
    assert_true(echoes(a2, 16));
    int a3 = dial_from("127.0.0.2", r.port);
    assert_true(closed_by_relay(a3));
    int b1 = dial_from("127.0.0.3", r.port);
    assert_true(echoes(b1, 16));
    close(a1);
    close(a2);
    close(a3);
    close(b1);
    assert_int_equal(relay_stop(&r), KF_OK);
    echo_stop(&e);
    assert_int_equal(e.nconn, 3);
}

/* Full: a new connection takes the place of the oldest one still in its
 * greeting, never of one that sent its greeting. */
static void test_full_evicts_greeting(void **state)
{
    (void)state;
    echo e;
    echo_start(&e);
    relay r;
    relay_start_with(&r, e.port, 0, 3, 60000);
    int good = dial(r.port);
    assert_true(echoes(good, KF_RELAY_GREETING));
    int idle1 = dial(r.port);
    struct pollfd p = {.fd = idle1, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 100), 0); /* admitted before idle2: it is the oldest */
    int idle2 = dial(r.port);
    assert_int_equal(poll(&p, 1, 100), 0);
    int late = dial(r.port); /* the fourth: idle1 makes room */
    assert_true(closed_by_relay(idle1));
    assert_true(echoes(late, KF_RELAY_GREETING));
    assert_true(echoes(good, KF_RELAY_GREETING));
    close(good);
    close(idle1);
    close(idle2);
    close(late);
    assert_int_equal(relay_stop(&r), KF_OK);
    echo_stop(&e);
}

static void test_bad_addresses(void **state)
{
    (void)state;
    kf_err err = {0};
    kf_relay *k = NULL;
    kf_relay_opts o = {.listen = "127.0.0.1", .to = "127.0.0.1:1"};
    assert_int_equal(kf_relay_new(&o, &k, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "not HOST:PORT"));
    o.listen = "127.0.0.1:0";
    o.to = "no-such-host.invalid:22";
    assert_int_equal(kf_relay_new(&o, &k, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "cannot resolve"));
    o.listen = "192.0.2.1:0"; /* not an address of this machine */
    o.to = "127.0.0.1:1";
    assert_int_equal(kf_relay_new(&o, &k, &err), KF_EIO);
    assert_non_null(strstr(err.msg, "cannot listen"));
    /* Every address of the machine only when asked for. */
    const char *any[] = {"0.0.0.0:0", "[::]:0", "*:0"};
    for (size_t i = 0; i < sizeof any / sizeof *any; i++) {
        o.listen = any[i];
        int rc = kf_relay_new(&o, &k, &err);
        if (rc != KF_EINVAL || !strstr(err.msg, "--any-address"))
            fail_msg("%s: want KF_EINVAL naming --any-address, got %d '%s'", any[i], rc, err.msg);
    }
    o.listen = "localhost:0"; /* a name that other machines cannot reach it by */
    assert_int_equal(kf_relay_new(&o, &k, &err), KF_EINVAL);
    /* A bare chroot may have no /etc/hosts: then "localhost" does not
     * resolve at all, and the refusal says that instead. */
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int resolves = getaddrinfo("localhost", "0", &hints, &res) == 0;
    if (res)
        freeaddrinfo(res);
    assert_non_null(strstr(err.msg, resolves ? "loopback" : "cannot resolve"));
    o.listen = "0.0.0.0:0";
    o.any_address = 1;
    assert_int_equal(kf_relay_new(&o, &k, &err), KF_OK);
    assert_true(kf_relay_port(k) > 0);
    kf_relay_destroy(&k);
    assert_null(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_both_ways),      cmocka_unit_test(test_target_refuses),
        cmocka_unit_test(test_silent_dropped),       cmocka_unit_test(test_per_source),
        cmocka_unit_test(test_full_evicts_greeting), cmocka_unit_test(test_bad_addresses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
