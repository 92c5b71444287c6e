/* test_fdguard — the coordinator's accept() guard (fdguard.h) in a process
 * whose descriptor limit is 64: once armed, a TCP accept never hands out one
 * of the last 32 descriptors (the connection is closed and accept says
 * EAGAIN, counted as shed), and with every descriptor taken a unix-socket
 * accept (the control socket's) is still served once, from the spare, and
 * then says EAGAIN, never EMFILE (libzmq's ipc listener aborts on EMFILE),
 * and a TCP connection met then is taken and closed, not left waiting.
 * The clients are a child process, with descriptors of its own. */
#include "daemon/fdguard.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define LIMIT 64
#define CLIENTS 100

static int tcp_listener(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, CLIENTS + 10), 0);
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    *port = ntohs(a.sin_port);
    return fd;
}

static int unix_listener(struct sockaddr_un *a)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    snprintf(a->sun_path, sizeof a->sun_path, "/tmp/kf-fdguard-%d.sock", (int)getpid());
    unlink(a->sun_path);
    assert_int_equal(bind(fd, (struct sockaddr *)a, sizeof *a), 0);
    assert_int_equal(listen(fd, 8), 0);
    return fd;
}

/* The child: CLIENTS TCP connections, then one more connection for each
 * byte read from cmd ('u' unix, 't' TCP); exits when cmd closes. */
static void clients(int port, const struct sockaddr_un *un, int cmd, int done)
{
    for (int i = 0; i < CLIENTS; i++) { /* held open until the child exits */
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
            _exit(1);
    }
    char b = 't';
    if (write(done, &b, 1) != 1)
        _exit(1);
    while (read(cmd, &b, 1) == 1) {
        int ok;
        if (b == 'u') {
            int fd = socket(AF_UNIX, SOCK_STREAM, 0);
            ok = connect(fd, (const struct sockaddr *)un, sizeof *un) == 0;
        } else {
            int fd = socket(AF_INET, SOCK_STREAM, 0);
            struct sockaddr_in a = {.sin_family = AF_INET,
                                    .sin_port = htons((uint16_t)port),
                                    .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
            ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
        }
        b = ok ? b : 'x';
        if (write(done, &b, 1) != 1)
            _exit(1);
    }
    _exit(0);
}

static void test_guard(void **state)
{
    (void)state;
    int port;
    struct sockaddr_un un;
    int tl = tcp_listener(&port), ul = unix_listener(&un);
    int cmd[2], done[2];
    assert_int_equal(pipe(cmd), 0);
    assert_int_equal(pipe(done), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(cmd[1]);
        close(done[0]);
        clients(port, &un, cmd[0], done[1]);
    }
    close(cmd[0]);
    close(done[1]);
    char b;
    assert_int_equal(read(done[0], &b, 1), 1); /* the TCP clients are connected */

    struct rlimit rl = {LIMIT, LIMIT};
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
    assert_int_equal(kf_fdguard_arm(), LIMIT);
    long reserve = kf_fdguard_reserve();
    assert_int_equal(reserve, LIMIT / 2);

    /* Every waiting TCP connection: taken below LIMIT - reserve, or shed. */
    int accepted = 0, shed_seen = 0;
    for (int i = 0; i < CLIENTS * 2; i++) {
        int fd = accept4(tl, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0) {
            if (fd >= LIMIT - reserve)
                fail_msg("accept gave descriptor %d, inside the reserve (from %ld)", fd,
                         LIMIT - reserve);
            accepted++;
            continue;
        }
        assert_int_equal(errno, EAGAIN);
        uint64_t shed, emfile;
        kf_fdguard_take(&shed, &emfile);
        assert_int_equal(emfile, 0);
        if (!shed)
            break; /* nothing left waiting */
        shed_seen += (int)shed;
    }
    print_message("TCP: %d accepted below %ld, %d shed\n", accepted, LIMIT - reserve, shed_seen);
    assert_true(accepted > 0);
    assert_true(shed_seen > 0);
    assert_int_equal(accepted + shed_seen, CLIENTS);

    /* Every descriptor taken: the control socket's first accept still works. */
    int fill[LIMIT], filler = 0, f;
    while (filler < LIMIT && (f = open("/dev/null", O_RDONLY)) >= 0)
        fill[filler++] = f;
    assert_int_equal(errno, EMFILE);
    /* A TCP client: taken with the spare and closed, not left waiting; the
     * spare is back for the control socket. */
    assert_int_equal(write(cmd[1], "t", 1), 1);
    assert_int_equal(read(done[0], &b, 1), 1);
    assert_int_equal(b, 't');
    struct pollfd tp = {.fd = tl, .events = POLLIN};
    assert_int_equal(poll(&tp, 1, 10000), 1);
    assert_true(accept4(tl, NULL, NULL, 0) < 0 && errno == EAGAIN);
    assert_int_equal(poll(&tp, 1, 0), 0); /* the backlog is empty again */
    for (int k = 0; k < 2; k++) {
        assert_int_equal(write(cmd[1], "u", 1), 1);
        assert_int_equal(read(done[0], &b, 1), 1);
        assert_int_equal(b, 'u');
        struct pollfd p = {.fd = ul, .events = POLLIN};
        assert_int_equal(poll(&p, 1, 10000), 1);
        int fd = accept(ul, NULL, NULL);
        if (k == 0)
            assert_true(fd >= 0); /* from the spare */
        else
            assert_true(fd < 0 && errno == EAGAIN); /* not EMFILE: libzmq would abort */
    }
    uint64_t shed, emfile;
    kf_fdguard_take(&shed, &emfile);
    assert_int_equal(emfile, 3);
    assert_int_equal(shed, 1);
    print_message("ipc: filled %d descriptors; one accept served from the spare, the next EAGAIN\n",
                  filler);
    for (int i = 0; i < filler; i++)
        close(fill[i]);
    close(cmd[1]);
    int st;
    waitpid(pid, &st, 0);
    unlink(un.sun_path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_guard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
