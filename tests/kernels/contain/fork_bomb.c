/* fork_bomb — a fork bomb whose processes leave the runner's process
 * group: setup forks a tree in which each process calls setsid and forks
 * two more (retrying a refused fork 50 times, 20 ms apart), down to depth
 * 10 (2,047 processes at most), each then sleeping (for a minute: so that
 * uncontained they still end); setup itself sleeps past any time limit. Contained, the runner's
 * pids.max refuses the forks, the task times out saying so, and the group's kill takes every
 * process, whatever its session. */
#include "contain_common.h"

#include <signal.h>
#include <unistd.h>

static void grow(int depth)
{
    setsid();  /* out of the runner's process group and session */
    alarm(60); /* uncontained, each still ends within a minute */
    for (int i = 0; i < 2 && depth < 10; i++)
        for (int tries = 0; tries < 50; tries++) {
            pid_t p = fork();
            if (p == 0) {
                grow(depth + 1);
                _exit(0);
            }
            if (p > 0)
                break;
            usleep(20000);
        }
    for (;;)
        pause();
}

static int on_setup(st_t *s, const kf_params *p, char *err, size_t errlen)
{
    (void)s, (void)p, (void)err, (void)errlen;
    if (fork() == 0)
        grow(0);
    for (;;)
        pause();
    return 0;
}

CONTAIN_KERNEL("fork_bomb", "a setsid fork bomb")
