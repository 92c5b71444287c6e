/* orphans — a right kernel that leaves two spinners behind: setup forks a
 * process that calls setsid, forks a spinner and exits, twice, so each
 * spinner is an orphan outside the runner's process tree (re-parented to
 * init or the agent). Contained, they are killed when the task's result
 * comes, and the task fails saying so. Uncontained they spin on after the
 * sweep; each stops by itself after a minute. */
#include "contain_common.h"

#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int on_setup(st_t *s, const kf_params *p, char *err, size_t errlen)
{
    (void)s, (void)p, (void)err, (void)errlen;
    for (int i = 0; i < 2; i++) {
        pid_t mid = fork();
        if (mid == 0) {
            setsid();
            if (fork() == 0) {
                time_t end = time(NULL) + 60;
                for (volatile unsigned long spin = 0; time(NULL) < end; spin++)
                    ;
            }
            _exit(0);
        }
        if (mid > 0)
            waitpid(mid, NULL, 0);
    }
    return 0;
}

CONTAIN_KERNEL("orphans", "leaves two setsid spinners")
