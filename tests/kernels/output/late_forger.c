/* late_forger — a kernel whose first run forks a process that leaves the
 * runner's process group (setsid) and writes a frame header too long to
 * be one on the runner's message channel (descriptor 4, runner/channel.h),
 * waits until the agent has read it and the runner is dead, then writes a
 * well-formed Result saying the task succeeded on the same channel: the
 * agent kills the runner for the header, and the Result comes after.
 * Nothing a runner's channel carries after its kill is its runner's: the
 * task fails for the header, the Result is dropped.
 * tests/integration/test_kernel_output.sh writes late_version.h beside
 * it: LATE_VERSION, the wire's protocol version (common/wire.h), which
 * fits one varint byte. */
#include "late_version.h"
#include "output_common.h"

#include <sched.h>
#include <sys/ioctl.h>
#include <unistd.h>

static void on_setup(st_t *s)
{
    (void)s;
}

static int run(void *state, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    st_t *s = state;
    if (s->runs == 0) {
        /* Envelope{version, result{state: SUCCEEDED (10)}}, framed. */
        static const unsigned char late[] = {7,    0,    0, 0,    0x08, LATE_VERSION,
                                             0x82, 0x01, 2, 0x18, 10};
        const unsigned char bad[4] = {0xff, 0xff, 0xff, 0x7f};
        int dies[2]; /* its read ends when the runner's end closes: at its death */
        if (pipe(dies) != 0)
            return -1;
        pid_t pid = fork();
        if (pid == 0) {
            setsid();
            close(dies[1]);
            if (write(4, bad, sizeof bad) != (ssize_t)sizeof bad)
                _exit(1);
            int left = 1; /* bytes in the pipe: 0 once the agent read them */
            while (ioctl(4, FIONREAD, &left) == 0 && left > 0)
                sched_yield();
            char c;
            while (read(dies[0], &c, 1) != 0)
                ;
            ssize_t w = write(4, late, sizeof late);
            _exit(w == (ssize_t)sizeof late ? 0 : 1);
        }
        close(dies[0]);
        if (pid < 0)
            return -1;
        for (;;) /* the agent kills this process for the child's header */
            pause();
    }
    compute(s);
    return 0;
}

OUTPUT_KERNEL("late_forger", "writes a Result on the runner's channel after its kill")
