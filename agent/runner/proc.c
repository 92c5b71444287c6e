/* proc — see proc.h. */
#include "runner/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

pid_t kf_proc_spawn(char *const argv[], int out_fd, const char *cwd)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0 ||
        (cwd && chdir(cwd) != 0))
        _exit(126);
    execvp(argv[0], argv);
    dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
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
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    pid_t pid = kf_proc_spawn(argv, fds[1], NULL);
    close(fds[1]);
    char buf[4096];
    ssize_t n;
    size_t kept = 0;
    while (pid > 0 && ((n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))) {
        if (n <= 0 || kept >= cap)
            continue;
        size_t take = (size_t)n < cap - kept ? (size_t)n : cap - kept;
        kf_buf_add(out, buf, take);
        kept += take;
    }
    close(fds[0]);
    return pid > 0 ? kf_proc_wait(pid) : -1;
}
