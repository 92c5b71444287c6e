/* test_kcache — a kernel's cache (agent/kcache.c) kept when its runner's
 * Result is in, not only when the runner has exited: the kernel's next
 * runner, started while the first is still exiting (a candidate's profile
 * right after its validate), finds what the first compiled; a full cache
 * is not kept; a kernel swapping a FIFO into it cannot hang the keep.
 * The tmpfs needs a mount namespace: each case runs in a
 * child that makes one, and is skipped where the node refuses it. */
#include "agent/kcache.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define SKIPPED 77

static int put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int rc = fputs(text, f) >= 0 ? 0 : -1;
    return fclose(f) == 0 ? rc : -1;
}

static int holds(const char *path, const char *text)
{
    char buf[64] = "";
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strcmp(buf, text) == 0;
}

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c);                                \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

/* In the child: 0 when every check held, else 1. */
static int keep_case(int fill)
{
    char work[] = "/tmp/kf-kcache-XXXXXX", s1[PATH_MAX], s2[PATH_MAX], f[PATH_MAX + 64];
    CHECK(mkdtemp(work));
    snprintf(s1, sizeof s1, "%s/s1", work);
    snprintf(s2, sizeof s2, "%s/s2", work);
    CHECK(mkdir(s1, 0700) == 0 && mkdir(s2, 0700) == 0);
    kf_err err;
    kcache *a = kcache_open(work, "abc123", s1, 4u << 20, 1, &err);
    CHECK(a);
    snprintf(f, sizeof f, "%s/kcache/triton", s1);
    CHECK(mkdir(f, 0700) == 0);
    snprintf(f, sizeof f, "%s/kcache/triton/k.cubin", s1);
    CHECK(put(f, "compiled") == 0);
    if (fill) { /* the kernel writes its quota full */
        char big[PATH_MAX + 64];
        snprintf(big, sizeof big, "%s/kcache/fill", s1);
        int fd = open(big, O_WRONLY | O_CREAT, 0600);
        CHECK(fd >= 0);
        static char chunk[65536];
        while (write(fd, chunk, sizeof chunk) > 0)
            ;
        close(fd);
    }
    kcache_keep(a); /* its Result is in; it has not exited */
    snprintf(f, sizeof f, "%s/kcache/abc123/triton/k.cubin", work);
    CHECK(fill ? access(f, F_OK) != 0 : holds(f, "compiled"));
    /* The next runner of the kernel starts now, beside it. */
    kcache *b = kcache_open(work, "abc123", s2, 4u << 20, 1, &err);
    CHECK(b);
    snprintf(f, sizeof f, "%s/kcache/triton/k.cubin", s2);
    CHECK(fill ? access(f, F_OK) != 0 : holds(f, "compiled"));
    CHECK(kcache_close(&a) == fill);
    CHECK(kcache_close(&b) == 0);
    kf_remove_tree(work);
    return 0;
}

/* In the child, as a kernel still alive at its Result would: the cache's
 * k.bin swapped between a regular file and a FIFO, over and over, while
 * the agent keeps the cache 200 times. Every keep returns (a FIFO opened
 * to be read waits for a writer for ever: the alarm would end the child);
 * whatever was kept is a regular file. 0 when every check held. */
static int swap_case(void)
{
    char work[] = "/tmp/kf-kcache-XXXXXX", s1[PATH_MAX], f[PATH_MAX + 64];
    CHECK(mkdtemp(work));
    snprintf(s1, sizeof s1, "%s/s1", work);
    CHECK(mkdir(s1, 0700) == 0);
    kf_err err;
    kcache *a = kcache_open(work, "abc123", s1, 4u << 20, 1, &err);
    CHECK(a);
    pid_t w = fork();
    CHECK(w >= 0);
    if (w == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* gone with the case, alarm or not */
        char fifo[PATH_MAX + 64], file[PATH_MAX + 64], at[PATH_MAX + 64];
        snprintf(fifo, sizeof fifo, "%s/kcache/f.tmp", s1);
        snprintf(file, sizeof file, "%s/kcache/r.tmp", s1);
        snprintf(at, sizeof at, "%s/kcache/k.bin", s1);
        for (;;) {
            mkfifo(fifo, 0600);
            rename(fifo, at);
            put(file, "compiled");
            rename(file, at);
        }
    }
    alarm(20);
    for (int i = 0; i < 200; i++)
        kcache_keep(a);
    alarm(0);
    kill(w, SIGKILL);
    waitpid(w, NULL, 0);
    snprintf(f, sizeof f, "%s/kcache/abc123/k.bin", work);
    struct stat st;
    CHECK(lstat(f, &st) != 0 || S_ISREG(st.st_mode));
    kcache_close(&a);
    kf_remove_tree(work);
    return 0;
}

static void run_case(int fill)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
            _exit(SKIPPED);
        _exit(fill < 0 ? swap_case() : keep_case(fill));
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    if (WEXITSTATUS(st) == SKIPPED) {
        print_message("no mount namespace here (%s): skipped\n", strerror(EPERM));
        skip();
    }
    assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_kept_at_result(void **state)
{
    (void)state;
    run_case(0);
}

static void test_full_not_kept(void **state)
{
    (void)state;
    run_case(1);
}

static void test_keep_beside_a_swapper(void **state)
{
    (void)state;
    run_case(-1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kept_at_result),
        cmocka_unit_test(test_full_not_kept),
        cmocka_unit_test(test_keep_beside_a_swapper),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
