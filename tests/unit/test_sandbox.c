/* test_sandbox — the runner sandbox (agent/runner/sandbox.h), each case in
 * a child that enters it: a granted directory is readable and one granted
 * for writing writable, everything else refused (reads included); a grant
 * that would cover a protected directory from above is not made, while the
 * sandbox's own path inside it is; inet sockets reach nothing of the
 * node's; io_uring is refused; a Unix socket by path is not reached
 * while socketpair() works (and, with kf_sandbox_allow_unix, the path
 * socket is); the agent's KFLEET_* variables are scrubbed.
 * Skipped where the node lacks Landlock (what kf_sandbox_probe reports). */
#include "runner/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <cmocka.h>

static char root[64];

static void put(const char *rel, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/kf-test-sandbox.XXXXXX");
    assert_non_null(mkdtemp(root));
    char p[256];
    const char *dirs[] = {"ro",
                          "rw",
                          "secret",
                          "home",
                          "home/state",
                          "home/state/agents",
                          "home/state/agents/a0",
                          "home/state/agents/a0/tmp"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        snprintf(p, sizeof p, "%s/%s", root, dirs[i]);
        assert_int_equal(mkdir(p, 0700), 0);
    }
    put("ro/a", "a");
    put("secret/key", "k");
    put("home/state/agents/a0/agent.key", "k");
    put("home/state/agents/a0/art.so", "so");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    return system(cmd);
}

static int landlock_here(void)
{
    char text[1024];
    unsigned miss = kf_sandbox_probe(text, sizeof text);
    if (miss & KF_SB_LANDLOCK) {
        fprintf(stderr, "skipped: %s\n", text);
        return 0;
    }
    return 1;
}

static int can_open(const char *rel, int flags)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    int fd = open(p, flags | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
    return fd >= 0;
}

/* Runs body in a child after entering s; the child's exit status. */
static int in_child(kf_sandbox *s, int (*body)(void))
{
    pid_t pid = fork();
    if (pid == 0) {
        kf_err err;
        unsigned miss = 0;
        if (kf_sandbox_enter(s, &miss, &err) != 0) {
            fprintf(stderr, "enter: %s\n", err.msg);
            _exit(99);
        }
        _exit(body());
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

static int files_body(void)
{
    if (!can_open("ro/a", O_RDONLY))
        return 1; /* granted for reading */
    if (can_open("ro/b", O_WRONLY | O_CREAT))
        return 2; /* read-only */
    if (!can_open("rw/c", O_WRONLY | O_CREAT))
        return 3; /* granted for writing */
    if (can_open("secret/key", O_RDONLY))
        return 4; /* never granted: not even a read */
    if (can_open("home/state/agents/a0/agent.key", O_RDONLY))
        return 5; /* "home" was asked for, but it is above the protected dir */
    if (!can_open("home/state/agents/a0/art.so", O_RDONLY))
        return 6; /* the sandbox's own artifact, inside the protected dir */
    if (can_open("home/state/agents/a0/art.so", O_WRONLY))
        return 7; /* read-only, own or not */
    if (!can_open("home/state/agents/a0/tmp/x", O_WRONLY | O_CREAT))
        return 8; /* its own scratch dir */
    return 0;
}

static void test_files(void **state)
{
    (void)state;
    if (!landlock_here())
        skip();
    kf_sandbox *s = kf_sandbox_new();
    char p[256];
    snprintf(p, sizeof p, "%s/home/state/agents/a0", root);
    kf_sandbox_protect(s, p);
    snprintf(p, sizeof p, "%s/ro", root);
    kf_sandbox_read(s, p);
    snprintf(p, sizeof p, "%s/rw", root);
    kf_sandbox_write(s, p);
    snprintf(p, sizeof p, "%s/home", root);
    kf_sandbox_read(s, p);
    snprintf(p, sizeof p, "%s/home/state/agents/a0/art.so", root);
    kf_sandbox_own(s, p, 0);
    snprintf(p, sizeof p, "%s/home/state/agents/a0/tmp", root);
    kf_sandbox_own(s, p, 1);
    snprintf(p, sizeof p, "%s/home/state/agents/a0", root);
    kf_sandbox_own(s, p, 0);                /* own, but the protected dir itself: not granted */
    kf_sandbox_read(s, "/nonexistent/dir"); /* skipped, not an error */
    assert_int_equal(in_child(s, files_body), 0);
    kf_sandbox_destroy(&s);
    assert_null(s);
}

static int port;

static int net_body(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return 0; /* refused outright (seccomp) */
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
    close(fd);
    if (rc == 0)
        return 1; /* reached the node's listener */
#ifdef SYS_io_uring_setup
    char params[120] = {0};
    if (syscall(SYS_io_uring_setup, 1, params) >= 0 || errno != ENOSYS)
        return 2;
#endif
    return 0;
}

static void test_network(void **state)
{
    (void)state;
    if (!landlock_here())
        skip();
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(l, 4), 0);
    assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
    port = ntohs(a.sin_port);
    /* Unsandboxed, the listener is reachable: the check below can fail. */
    kf_sandbox *s = kf_sandbox_new();
    pid_t pid = fork();
    if (pid == 0)
        _exit(net_body() == 1 ? 0 : 1);
    int st;
    waitpid(pid, &st, 0);
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(in_child(s, net_body), 0);
    kf_sandbox_destroy(&s);
    close(l);
}

static struct sockaddr_un unix_addr;

/* 0: the path socket was not reached and socketpair() works; 1: reached;
 * 2: socketpair() failed. */
static int unix_body(void)
{
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
        return 2;
    close(pair[0]);
    close(pair[1]);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    int rc = connect(fd, (struct sockaddr *)&unix_addr, sizeof unix_addr);
    close(fd);
    return rc == 0;
}

/* 0: reached before kf_sandbox_deny_unix and refused after it. */
static int deferred_body(void)
{
    if (unix_body() != 1)
        return 3; /* deferred: must still be reachable */
    kf_err err;
    unsigned miss = 0;
    if (kf_sandbox_deny_unix(&miss, &err) != 0 || (miss & KF_SB_UNIX))
        return 4;
    return unix_body() == 0 ? 0 : 5;
}

static void test_unix(void **state)
{
    (void)state;
    char text[1024];
    if (kf_sandbox_probe(text, sizeof text) & KF_SB_SECCOMP)
        skip();
    int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    unix_addr.sun_family = AF_UNIX;
    snprintf(unix_addr.sun_path, sizeof unix_addr.sun_path, "/tmp/kf-test-sb-%d.sock",
             (int)getpid());
    unlink(unix_addr.sun_path);
    assert_int_equal(bind(l, (struct sockaddr *)&unix_addr, sizeof unix_addr), 0);
    assert_int_equal(listen(l, 8), 0);
    /* Unsandboxed the listener is reached, and so it is in a sandbox that
     * allows Unix sockets (the tools' launcher): the check can fail. */
    pid_t pid = fork();
    if (pid == 0)
        _exit(unix_body());
    int st;
    waitpid(pid, &st, 0);
    assert_int_equal(WEXITSTATUS(st), 1);
    kf_sandbox *s = kf_sandbox_new();
    kf_sandbox_skip(s, KF_SB_LANDLOCK);
    kf_sandbox_allow_unix(s, 1);
    assert_int_equal(in_child(s, unix_body), 1);
    kf_sandbox_destroy(&s);
    s = kf_sandbox_new();
    kf_sandbox_skip(s, KF_SB_LANDLOCK);
    assert_int_equal(in_child(s, unix_body), 0);
    kf_sandbox_destroy(&s);
    /* Deferred (a CUDA runner: cuInit makes a Unix socket): reached until
     * kf_sandbox_deny_unix, refused after it, in the same process. */
    s = kf_sandbox_new();
    kf_sandbox_skip(s, KF_SB_LANDLOCK);
    kf_sandbox_defer_unix(s);
    assert_int_equal(in_child(s, deferred_body), 0);
    kf_sandbox_destroy(&s);
    /* KF_SANDBOX_SKIP=unix leaves it off, and says so. */
    setenv("KF_SANDBOX_SKIP", "unix", 1);
    s = kf_sandbox_new();
    assert_int_equal(in_child(s, unix_body), 1);
    kf_sandbox_destroy(&s);
    assert_true(kf_sandbox_probe(text, sizeof text) & KF_SB_UNIX);
    assert_non_null(strstr(text, "control socket"));
    unsetenv("KF_SANDBOX_SKIP");
    assert_false(kf_sandbox_probe(text, sizeof text) & KF_SB_UNIX);
    close(l);
    unlink(unix_addr.sun_path);
}

static void test_scrub_env(void **state)
{
    (void)state;
    setenv("KFLEET_HOME", "/x", 1);
    setenv("KFLEET_OTHER", "/y", 1);
    setenv("SSH_AUTH_SOCK", "/z", 1);
    setenv("KF_PYTHON", "/usr/bin/python3", 1);
    kf_execenv *env = kf_execenv_new();
    kf_sandbox_scrub_env(env);
    assert_null(kf_execenv_get(env, "KFLEET_HOME"));
    assert_null(kf_execenv_get(env, "KFLEET_OTHER"));
    assert_null(kf_execenv_get(env, "SSH_AUTH_SOCK"));
    assert_string_equal(kf_execenv_get(env, "KF_PYTHON"),
                        "/usr/bin/python3");          /* the runner's own */
    assert_string_equal(getenv("KFLEET_HOME"), "/x"); /* the agent's own stays */
    kf_execenv_destroy(&env);
}

/* The CUDA driver names its threads at cuInit (through the process's own
 * /proc entry): with /proc/self granted for writing, as the runner's
 * sandbox grants it (confine.c), a thread's name can be set; the rest of
 * /proc stays read-only (opened for writing, never written). */
static void *idle_thread(void *arg)
{
    (void)arg;
    sleep(1);
    return NULL;
}

static int proc_body(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, idle_thread, NULL) != 0)
        return 1;
    int rc = pthread_setname_np(t, "kf-test-name"); /* writes /proc/self/task/TID/comm */
    pthread_join(t, NULL);
    if (rc != 0)
        return 2;
    int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        return 3;
    }
    if (open("/proc/self/comm", O_RDONLY | O_CLOEXEC) < 0)
        return 4;
    return 0;
}

static void test_proc_self(void **state)
{
    (void)state;
    if (!landlock_here())
        skip();
    kf_sandbox *s = kf_sandbox_new();
    kf_sandbox_read(s, "/proc");
    kf_sandbox_write(s, "/proc/self");
    assert_int_equal(in_child(s, proc_body), 0);
    kf_sandbox_destroy(&s);
    /* Without the grant the name cannot be set: the test can fail. */
    s = kf_sandbox_new();
    kf_sandbox_read(s, "/proc");
    assert_int_equal(in_child(s, proc_body), 2);
    kf_sandbox_destroy(&s);
}

static void test_off(void **state)
{
    (void)state;
    char text[512];
    setenv("KF_SANDBOX", "0", 1);
    assert_int_equal(kf_sandbox_enabled(), 0);
    assert_int_equal(kf_sandbox_probe(text, sizeof text), ~0u);
    assert_non_null(strstr(text, "KF_SANDBOX=0"));
    unsetenv("KF_SANDBOX");
    assert_int_equal(kf_sandbox_enabled(), 1);
    kf_sandbox_describe(KF_SB_NETNS | KF_SB_SECCOMP | KF_SB_LANDLOCK_TCP, text, sizeof text);
    assert_non_null(strstr(text, "a kernel can reach the network"));
    kf_sandbox_describe(0, text, sizeof text);
    assert_string_equal(text, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_files, setup, teardown),
        cmocka_unit_test(test_network),
        cmocka_unit_test(test_unix),
        cmocka_unit_test(test_scrub_env),
        cmocka_unit_test(test_off),
        cmocka_unit_test(test_proc_self),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
