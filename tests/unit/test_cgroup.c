/* test_cgroup — a runner's control group and private mounts
 * (agent/runner/cgroup.c, contain.c), on this machine's real cgroups and
 * mounts: a process tree that left its session is killed whole; pids.max
 * refuses forks and counts them; an agent in a group of a limited pids.max
 * reads that limit; memory.max ends a process with the OOM
 * killer, counted in the group; the orphans of a group are told from the
 * runner's own tree; a process reads its own group's limit; the groups of
 * an agent that is gone are removed, their processes killed; a private
 * tmpfs bounds what a process writes in TMPDIR and /dev/shm and leaves
 * nothing in the node's. Where the machine cannot give a mechanism (no
 * writable cgroup, no controller, not root) the test says so and skips. */
#include "runner/cgroup.h"
#include "runner/contain.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static kf_cgroups *cgs_or_skip(unsigned need)
{
    kf_cgroups *cgs = kf_cgroups_new();
    if ((kf_cgroups_have(cgs) & need) != need) {
        printf("# skip: this machine does not give %s: %s\n",
               need & KF_CG_MEMORY ? "a memory limit"
               : need & KF_CG_PIDS ? "a process limit"
                                   : "a control group",
               kf_cgroups_missing(cgs));
        kf_cgroups_destroy(&cgs);
        skip();
    }
    return cgs;
}

/* Forks a child that joins cg (and the plan's mounts) and runs fn; its pid. */
static pid_t in_group(const kf_cgroup *cg, int (*fn)(void *), void *arg)
{
    kf_contain_plan plan;
    kf_contain_plan_make(&plan, cg, 0, 0, NULL);
    pid_t pid = fork();
    if (pid == 0) {
        const char *what;
        if (kf_contain_enter(&plan, &what) != 0)
            _exit(120);
        _exit(fn(arg));
    }
    assert_true(pid > 0);
    return pid;
}

static size_t count_procs(const kf_cgroup *cg)
{
    FILE *f = fopen(kf_cgroup_procs(cg, 0), "r");
    size_t n = 0;
    int pid;
    while (f && fscanf(f, "%d", &pid) == 1)
        n++;
    if (f)
        fclose(f);
    return n;
}

static void wait_procs(const kf_cgroup *cg, size_t n)
{
    for (int i = 0; i < 500 && count_procs(cg) < n; i++) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    assert_true(count_procs(cg) >= n);
}

/* Whether pid is gone (or a zombie nobody reaped yet). */
static int gone(pid_t pid)
{
    char st;
    return kf_cgroup_pid_stat(pid, &st, NULL) != 0 || st == 'Z' || st == 'X';
}

static int write_pipe_fd = -1;

/* A child that forks a grandchild which leaves its session, tells its pid
 * and sleeps; then sleeps itself. */
static int setsid_tree(void *arg)
{
    (void)arg;
    pid_t g = fork();
    if (g == 0) {
        setsid();
        for (;;)
            pause();
    }
    if (write(write_pipe_fd, &g, sizeof g) != sizeof g)
        return 1;
    for (;;)
        pause();
}

static void test_kill_takes_setsid_tree(void **st)
{
    (void)st;
    kf_cgroups *cgs = cgs_or_skip(KF_CG_KILL);
    kf_err err;
    kf_cgroup *cg = kf_cgroup_new(cgs, "t-kill", 0, 0, &err);
    assert_non_null(cg);
    int p[2];
    assert_int_equal(pipe(p), 0);
    write_pipe_fd = p[1];
    pid_t child = in_group(cg, setsid_tree, NULL);
    pid_t grand = 0;
    assert_int_equal(read(p[0], &grand, sizeof grand), (ssize_t)sizeof grand);
    close(p[0]);
    close(p[1]);
    wait_procs(cg, 2);
    assert_int_equal(kf_cgroup_kill(cg), 2);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    for (int i = 0; i < 200 && !gone(grand); i++)
        usleep(10000);
    assert_true(gone(grand)); /* out of the process group, not out of the group */
    assert_int_equal(count_procs(cg), 0);
    char procs[KF_CG_PATH + 16];
    snprintf(procs, sizeof procs, "%s", kf_cgroup_procs(cg, 0));
    kf_cgroup_destroy(&cg);
    assert_null(cg);
    assert_int_equal(access(procs, F_OK), -1); /* the group is removed */
    kf_cgroups_destroy(&cgs);
}

/* Forks 40 sleeping children; exits with how many forks worked. */
static int fork_many(void *arg)
{
    (void)arg;
    setpgid(0, 0); /* its group, killed whole at the end */
    int ok = 0;
    for (int i = 0; i < 40; i++) {
        pid_t c = fork();
        if (c == 0) {
            pause();
            _exit(0);
        }
        ok += c > 0;
    }
    kill(0, SIGKILL);
    return ok;
}

static void test_pids_limit(void **st)
{
    (void)st;
    kf_cgroups *cgs = cgs_or_skip(KF_CG_PIDS);
    kf_err err;
    kf_cgroup *cg = kf_cgroup_new(cgs, "t-pids", 0, 8, &err);
    assert_non_null(cg);
    pid_t child = in_group(cg, fork_many, NULL);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    kf_cgroup_events ev;
    kf_cgroup_events_get(cg, &ev);
    kf_cgroup_kill(cg);
    assert_int_equal(ev.pids_max, 8);
    assert_true(ev.pids_refused >= 40 - 7); /* the child itself is one of the 8 */
    printf("# pids.max 8: forks refused %llu\n", (unsigned long long)ev.pids_refused);
    kf_cgroup_destroy(&cg);
    kf_cgroups_destroy(&cgs);
}

/* An agent started inside a group of pids.max 1024 (a container's): 0 if
 * its cgroups layer reads that limit as its own. */
static int outer_pids_read(void *arg)
{
    (void)arg;
    kf_cgroups *inner = kf_cgroups_new();
    uint64_t got = kf_cgroups_pids(inner);
    kf_cgroups_destroy(&inner);
    return got == 1024 ? 0 : got == 0 ? 3 : 4;
}

static void test_outer_pids_limit_read(void **st)
{
    (void)st;
    kf_cgroups *cgs = cgs_or_skip(KF_CG_PIDS);
    kf_err err;
    kf_cgroup *cg = kf_cgroup_new(cgs, "t-outer", 0, 1024, &err);
    assert_non_null(cg);
    pid_t child = in_group(cg, outer_pids_read, NULL);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0); /* 3: read none; 4: another */
    kf_cgroup_destroy(&cg);
    kf_cgroups_destroy(&cgs);
}

/* Touches 512 MiB; 0 if it lived through it. */
static int touch_512m(void *arg)
{
    (void)arg;
    size_t n = (size_t)512 << 20;
    char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return 2;
    for (size_t i = 0; i < n; i += 4096)
        p[i] = 1;
    return 0;
}

static void test_memory_limit_is_an_oom_kill_in_the_group(void **st)
{
    (void)st;
    kf_cgroups *cgs = cgs_or_skip(KF_CG_MEMORY);
    kf_err err;
    uint64_t lim = (uint64_t)128 << 20;
    kf_cgroup *cg = kf_cgroup_new(cgs, "t-mem", lim, 0, &err);
    assert_non_null(cg);
    pid_t child = in_group(cg, touch_512m, NULL);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    kf_cgroup_events ev;
    kf_cgroup_events_get(cg, &ev);
    assert_int_equal(ev.memory_max, lim);
    assert_true(ev.oom_kills >= 1);
    printf("# memory limit 128 MiB: oom_kill %llu, peak %llu MiB\n",
           (unsigned long long)ev.oom_kills, (unsigned long long)(ev.memory_peak >> 20));
    kf_cgroup_destroy(&cg);
    kf_cgroups_destroy(&cgs);
}

/* Reads its own group's events: 0 when they name the limit it is under. */
static int own_limit(void *arg)
{
    kf_cgroup_events ev;
    return kf_cgroup_self_events(&ev) == 0 && ev.memory_max == *(uint64_t *)arg ? 0 : 1;
}

static void test_self_events(void **st)
{
    (void)st;
    kf_cgroups *cgs = cgs_or_skip(KF_CG_MEMORY);
    kf_err err;
    uint64_t lim = (uint64_t)333 << 20;
    kf_cgroup *cg = kf_cgroup_new(cgs, "t-self", lim, 0, &err);
    assert_non_null(cg);
    pid_t child = in_group(cg, own_limit, &lim);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    kf_cgroup_destroy(&cg);
    kf_cgroups_destroy(&cgs);
}

/* A child kept in its tree, and an orphan (setsid, its parent exited). */
static int child_and_orphan(void *arg)
{
    (void)arg;
    if (fork() == 0)
        for (;;)
            pause();
    pid_t mid = fork();
    if (mid == 0) {
        setsid();
        if (fork() == 0)
            for (;;)
                pause();
        _exit(0);
    }
    waitpid(mid, NULL, 0);
    char ready = 1; /* the orphan is there, its parent gone */
    if (write(write_pipe_fd, &ready, 1) != 1)
        return 1;
    for (;;)
        pause();
}

static void test_orphans_told_from_the_tree(void **st)
{
    (void)st;
    kf_cgroups *cgs = cgs_or_skip(KF_CG_KILL);
    kf_err err;
    kf_cgroup *cg = kf_cgroup_new(cgs, "t-orphans", 0, 0, &err);
    assert_non_null(cg);
    int p[2];
    assert_int_equal(pipe(p), 0);
    write_pipe_fd = p[1];
    pid_t root = in_group(cg, child_and_orphan, NULL);
    char ready;
    assert_int_equal(read(p[0], &ready, 1), 1);
    close(p[0]);
    close(p[1]);
    assert_int_equal(kf_cgroup_kill_orphans(cg, root), 1);
    usleep(100000);
    assert_int_equal(count_procs(cg), 2); /* the runner and its own child */
    assert_false(gone(root));
    assert_int_equal(kf_cgroup_kill(cg), 2);
    waitpid(root, NULL, 0);
    kf_cgroup_destroy(&cg);
    kf_cgroups_destroy(&cgs);
}

static void test_stale_groups_removed(void **st)
{
    (void)st;
    kf_cgroups *cgs = cgs_or_skip(KF_CG_KILL);
    kf_err err;
    kf_cgroup *probe = kf_cgroup_new(cgs, "t-where", 0, 0, &err);
    assert_non_null(probe);
    /* PARENT/kfleet-PID/t-where/cgroup.procs: PARENT is where agents' groups go. */
    char parent[KF_CG_PATH];
    snprintf(parent, sizeof parent, "%s", kf_cgroup_procs(probe, 0));
    for (int up = 0; up < 3; up++)
        *strrchr(parent, '/') = '\0';
    kf_cgroup_destroy(&probe);
    kf_cgroups_destroy(&cgs);
    /* A dead agent's group, with a process left in it. */
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    waitpid(dead, NULL, 0);
    char stale[KF_CG_PATH + 32], sub[KF_CG_PATH + 64], procs[KF_CG_PATH + 96];
    snprintf(stale, sizeof stale, "%s/kfleet-%d", parent, (int)dead);
    snprintf(sub, sizeof sub, "%s/r1", stale);
    snprintf(procs, sizeof procs, "%s/cgroup.procs", sub);
    assert_int_equal(mkdir(stale, 0755), 0);
    assert_int_equal(mkdir(sub, 0755), 0);
    pid_t left = fork();
    if (left == 0) {
        int fd = open(procs, O_WRONLY);
        if (fd < 0 || write(fd, "0", 1) != 1)
            _exit(1);
        close(fd);
        for (;;)
            pause();
    }
    for (int i = 0; i < 100; i++) {
        FILE *f = fopen(procs, "r");
        int got = 0, x;
        got = f && fscanf(f, "%d", &x) == 1;
        if (f)
            fclose(f);
        if (got)
            break;
        usleep(10000);
    }
    cgs = kf_cgroups_new(); /* a new agent: the dead one's group goes */
    int status;
    assert_int_equal(waitpid(left, &status, 0), left);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_int_equal(access(stale, F_OK), -1);
    kf_cgroups_destroy(&cgs);
}

/* Writes 4 MiB into dir/f, after entering the plan; exits 0 when the
 * tmpfs stopped it at its 1 MiB and its /dev/shm file is there. */
static int fill_private(void *arg)
{
    const char *dir = arg;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/f", dir);
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    static char mib[1 << 20];
    size_t done = 0;
    for (int i = 0; fd >= 0 && i < 4; i++) {
        ssize_t w = write(fd, mib, sizeof mib);
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    int enospc = errno == ENOSPC;
    snprintf(path, sizeof path, "/dev/shm/kf-test-cgroup-%d", (int)getpid());
    int shm = open(path, O_WRONLY | O_CREAT, 0600);
    return fd >= 0 && shm >= 0 && enospc && done <= (1u << 20) ? 0 : 1;
}

static void test_private_tmpfs(void **st)
{
    (void)st;
    if (geteuid() != 0) {
        printf("# skip: private mounts need root (the agent runs without them otherwise)\n");
        skip();
    }
    char dir[] = "/tmp/kf-test-cgroup-XXXXXX";
    assert_non_null(mkdtemp(dir));
    kf_contain_plan plan;
    kf_contain_plan_make(&plan, NULL, 1, 1u << 20, dir);
    pid_t pid = fork();
    if (pid == 0) {
        const char *what;
        if (kf_contain_enter(&plan, &what) != 0) {
            printf("# cannot %s: %s\n", what, strerror(errno));
            _exit(errno == EPERM ? 77 : 120);
        }
        _exit(fill_private(dir));
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77) {
        rmdir(dir);
        printf("# skip: this machine refuses a mount namespace to root\n");
        skip();
    }
    assert_int_equal(WEXITSTATUS(status), 0);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/f", dir);
    assert_int_equal(access(path, F_OK), -1); /* it wrote in its own tmpfs */
    snprintf(path, sizeof path, "/dev/shm/kf-test-cgroup-%d", (int)pid);
    assert_int_equal(access(path, F_OK), -1); /* and its own /dev/shm */
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_takes_setsid_tree),
        cmocka_unit_test(test_pids_limit),
        cmocka_unit_test(test_outer_pids_limit_read),
        cmocka_unit_test(test_memory_limit_is_an_oom_kill_in_the_group),
        cmocka_unit_test(test_self_events),
        cmocka_unit_test(test_orphans_told_from_the_tree),
        cmocka_unit_test(test_stale_groups_removed),
        cmocka_unit_test(test_private_tmpfs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
