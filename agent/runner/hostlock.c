/* hostlock — the machine's host-profile lock; see hostlock.h. */
#include "runner/hostlock.h"

#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

int kf_hostlock_fd(void)
{
    static int fd = -2; /* -2: not opened yet; one lock file a process */
    if (fd == -2) {
        const char *path = getenv("KF_HOST_LOCK");
        fd = path && *path ? open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
        if (path && *path && fd < 0)
            kf_warn("runner.host_lock", "path=%s error=\"%s\"", path, strerror(errno));
    }
    return fd;
}

