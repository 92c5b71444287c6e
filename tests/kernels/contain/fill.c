/* fill — setup writes a file 1 MiB at a time into (param target) 0:
 * /dev/shm, 1: its TMPDIR, 2: its kernel cache ($TRITON_CACHE_DIR), named
 * kf-fill-TAG (param tag), until a write fails, and fails setup saying
 * where, after how many MiB and why ("No space left on device" at the
 * runner's bound: its private tmpfs, its cache quota). The file is left
 * there: containment must take it away. Uncontained, it stops at 1 GiB,
 * removes the file and fails saying it was never stopped. */
#include "contain_common.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CAP_MIB 1024

static int on_setup(st_t *s, const kf_params *p, char *err, size_t errlen)
{
    (void)s;
    long target = (long)kf_param(p, "target", 0), tag = (long)kf_param(p, "tag", 0);
    const char *dir = target == 0   ? "/dev/shm"
                      : target == 1 ? getenv("TMPDIR")
                                    : getenv("TRITON_CACHE_DIR");
    const char *what = target == 0 ? "/dev/shm" : target == 1 ? "TMPDIR" : "its kernel cache";
    if (!dir) {
        snprintf(err, errlen, "FILL: no directory for %s", what);
        return -1;
    }
    mkdir(dir, 0700);
    char path[4096];
    snprintf(path, sizeof path, "%s/kf-fill-%ld", dir, tag);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "FILL: cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    static char mib[1 << 20];
    memset(mib, 'k', sizeof mib);
    long done = 0;
    for (; done < CAP_MIB; done++) {
        size_t off = 0;
        while (off < sizeof mib) {
            ssize_t w = write(fd, mib + off, sizeof mib - off);
            if (w <= 0) {
                int e = w < 0 ? errno : ENOSPC;
                close(fd);
                snprintf(err, errlen, "FILL: %s full after %ld MiB: %s", what, done, strerror(e));
                return -1;
            }
            off += (size_t)w;
        }
    }
    close(fd);
    unlink(path);
    snprintf(err, errlen, "FILL: wrote %d MiB into %s and was never stopped", CAP_MIB, what);
    return -1;
}

CONTAIN_KERNEL("fill", "fills /dev/shm, TMPDIR or its cache")
