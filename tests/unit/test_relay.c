/* test_relay — the TCP relay of Slurm logins (relay.c) over real loopback
 * sockets: bytes arrive intact and in order both ways on several
 * connections at once (more than its 64 KiB buffer each way, so a slow side
 * throttles the other), a half-close is passed on, a target that refuses
 * closes the client's connection instead of holding it, the port file holds
 * the bound port, and bad addresses are KF_EINVAL. */
#include "fleet/relay.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

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
    volatile sig_atomic_t stop;
    kf_relay_opts o;
    kf_err err;
    int rc, port;
    pthread_t th;
} relay;

static void *relay_main(void *arg)
{
    relay *r = arg;
    r->rc = kf_relay_run(&r->o, &r->err);
    return NULL;
}

/* Starts a relay to 127.0.0.1:to_port; its port once the port file says. */
static void relay_start(relay *r, int to_port)
{
    memset(r, 0, sizeof *r);
    snprintf(r->listen, sizeof r->listen, "127.0.0.1:0");
    snprintf(r->to, sizeof r->to, "127.0.0.1:%d", to_port);
    snprintf(r->port_file, sizeof r->port_file, "/tmp/kf-relay-test-%d.port", (int)getpid());
    unlink(r->port_file);
    r->o = (kf_relay_opts){
        .listen = r->listen, .to = r->to, .port_file = r->port_file, .stop = &r->stop};
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

static int relay_stop(relay *r)
{
    r->stop = 1;
    pthread_join(r->th, NULL);
    unlink(r->port_file);
    return r->rc;
}

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
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
    char b;
    ssize_t n = recv(fd, &b, 1, 0); /* closed by the relay, not left hanging */
    assert_true(n == 0 || (n < 0 && errno == ECONNRESET));
    close(fd);
    assert_int_equal(relay_stop(&r), KF_OK);
}

static void test_bad_addresses(void **state)
{
    (void)state;
    volatile sig_atomic_t stop = 1;
    kf_err err = {0};
    kf_relay_opts o = {.listen = "127.0.0.1", .to = "127.0.0.1:1", .stop = &stop};
    assert_int_equal(kf_relay_run(&o, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "not HOST:PORT"));
    o.listen = "127.0.0.1:0";
    o.to = "no-such-host.invalid:22";
    assert_int_equal(kf_relay_run(&o, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "cannot resolve"));
    o.listen = "192.0.2.1:0"; /* not an address of this machine */
    o.to = "127.0.0.1:1";
    assert_int_equal(kf_relay_run(&o, &err), KF_EIO);
    assert_non_null(strstr(err.msg, "cannot listen"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_both_ways),
        cmocka_unit_test(test_target_refuses),
        cmocka_unit_test(test_bad_addresses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
