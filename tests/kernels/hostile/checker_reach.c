/* A candidate of test_problems' scale-c problem that tries to reach its
 * judge (issue 43 item 1) before doing the work: every other process it
 * can name, by /proc and by guessing pids, is asked to take a signal
 * (kill 0), to be attached (ptrace) and to have its memory read
 * (/proc/PID/mem, process_vm_readv) (checker_ask.c asks it instead).
 * Whatever answers is written to
 * its stdout and makes its output wrong, so that a reached checker shows
 * as a failed candidate naming what it reached; reaching nothing, it
 * computes the right answer and says "reached nothing". */
#define _GNU_SOURCE
#include "kf_kernel.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static char reached[4096];
static int tried_pids;

static void note(const char *what, long pid)
{
    size_t n = strlen(reached);
    snprintf(reached + n, sizeof reached - n, "%s%s %ld", n ? "; " : "", what, pid);
}

static int own_thread(pid_t pid)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/self/task/%d", (int)pid);
    return access(p, F_OK) == 0;
}

static void try_pid(pid_t pid)
{
    if (pid == getpid() || own_thread(pid))
        return;
    if (kill(pid, 0) != 0)
        return; /* no such process here, or not ours to signal */
    tried_pids++;
    note("can signal", pid);
    if (ptrace(PTRACE_SEIZE, pid, 0, 0) == 0) {
        note("attached to", pid);
        ptrace(PTRACE_DETACH, pid, 0, 0);
    }
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/mem", (int)pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        note("opened the memory of", pid);
        close(fd);
    }
    char byte;
    struct iovec l = {&byte, 1}, r = {(void *)0x400000, 1};
    if (process_vm_readv(pid, &l, 1, &r, 1, 0) == 1 || errno == EFAULT)
        note("can read the memory of", pid);
}

static void probe(void)
{
    reached[0] = '\0';
    /* Every pid a process here could have, named or not by /proc: up to
     * the kernel's pid_max (4194304 on many 64-bit hosts). */
    long max = 1 << 22;
    FILE *f = fopen("/proc/sys/kernel/pid_max", "r");
    if (f) {
        if (fscanf(f, "%ld", &max) != 1)
            max = 1 << 22;
        fclose(f);
    }
    for (pid_t pid = 1; pid < max; pid++)
        try_pid(pid);
    printf("checker_reach: %s\n", reached[0] ? reached : "reached nothing");
    fflush(stdout);
}

static int probed;

static int prepare(void **sc, const kf_params *p, const kf_view *in, size_t nin, const kf_view *out,
                   char *err, size_t errlen)
{
    (void)p, (void)in, (void)nin, (void)out, (void)err, (void)errlen;
    if (!probed++)
        probe();
    *sc = NULL;
    return 0;
}

static int run(void *sc, const kf_view *in, size_t nin, const kf_view *out, char *err,
               size_t errlen)
{
    (void)sc, (void)nin, (void)err, (void)errlen;
    const float *x = in[0].data, *w = in[1].data;
    float *y = out->data;
    for (size_t i = 0; i < out->count; i++)
        y[i] = reached[0] ? 0.0f : 2.0f * x[i] + w[i];
    return 0;
}

static void release(void *sc)
{
    (void)sc;
}
static const kf_candidate c = {KF_KERNEL_ABI_VERSION, "checker_reach", "", prepare, run, release};
const kf_candidate *kf_candidate_get(void)
{
    return &c;
}
