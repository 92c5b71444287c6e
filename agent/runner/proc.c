/* proc — see proc.h. */
#include "runner/proc.h"

#include "common/execenv.h"
#include "common/util.h"
#include "runner/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The sandbox the tools of this process run in (a build runner's), or
 * NULL: see kf_proc_sandbox. */
static kf_sandbox *tool_sandbox;

void kf_proc_sandbox(kf_sandbox *sb)
{
    tool_sandbox = sb;
}

pid_t kf_proc_spawn(char *const argv[], int out_fd, const char *cwd)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0 ||
        (cwd && chdir(cwd) != 0))
        _exit(126);
    kf_sandbox_close_fds(3);
    if (tool_sandbox) {
        kf_err err;
        if (kf_sandbox_enter(tool_sandbox, NULL, &err) != KF_OK) {
            kf_exec_say(2, "kfleet: ", "cannot enter the tools' sandbox", err.msg);
            _exit(126);
        }
    }
    execvp(argv[0], argv);
    kf_exec_say(2, "cannot run ", argv[0], kf_exec_why(errno));
    _exit(127);
}

int kf_proc_wait(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return st;
}

int kf_proc_capture(char *const argv[], kf_buf *out, size_t cap)
{
    return kf_proc_capture_limit(argv, out, cap, 0);
}

int kf_proc_capture_limit(char *const argv[], kf_buf *out, size_t cap, double limit_s)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    pid_t pid = kf_proc_spawn(argv, fds[1], NULL);
    close(fds[1]);
    if (pid <= 0) {
        close(fds[0]);
        return -1;
    }
    uint64_t deadline = limit_s > 0 ? kf_mono_ns() + (uint64_t)(limit_s * 1e9) : 0;
    char buf[4096];
    size_t kept = 0;
    int timed_out = 0;
    for (;;) {
        int wait_ms = -1;
        if (deadline) {
            uint64_t now = kf_mono_ns();
            if (now >= deadline) {
                timed_out = 1;
                break;
            }
            wait_ms = (int)((deadline - now) / 1000000) + 1;
        }
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        int r = poll(&p, 1, wait_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        if (r == 0)
            continue; /* the deadline check above ends it */
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (kept < cap) {
            size_t take = (size_t)n < cap - kept ? (size_t)n : cap - kept;
            kf_buf_add(out, buf, take);
            kept += take;
        }
    }
    close(fds[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    int st = kf_proc_wait(pid);
    return timed_out ? -2 : st;
}
