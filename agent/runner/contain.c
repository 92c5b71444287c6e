/* contain — see contain.h. */
#include "runner/contain.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

void kf_contain_plan_make(kf_contain_plan *p, const kf_cgroup *cg, int mounts, uint64_t tmpfs_bytes,
                          const char *tmpdir)
{
    memset(p, 0, sizeof *p);
    for (size_t i = 0; i < kf_cgroup_nprocs(cg) && i < KF_CG_MAX_DIRS; i++)
        snprintf(p->procs[p->nprocs++], sizeof p->procs[0], "%s", kf_cgroup_procs(cg, i));
    if (!mounts || !tmpfs_bytes)
        return;
    p->mounts = 1;
    /* /dev/shm as the node's is (world-writable, sticky); TMPDIR the
     * runner's alone. nr_inodes bounds a fill by empty files too. */
    snprintf(p->shm_opts, sizeof p->shm_opts, "size=%" PRIu64 ",nr_inodes=65536,mode=1777",
             tmpfs_bytes);
    snprintf(p->tmp_opts, sizeof p->tmp_opts, "size=%" PRIu64 ",nr_inodes=65536,mode=0700",
             tmpfs_bytes);
    if (tmpdir)
        snprintf(p->tmpdir, sizeof p->tmpdir, "%s", tmpdir);
}

static int fail(const char **what, const char *step)
{
    if (what)
        *what = step;
    return -1;
}

int kf_contain_enter(const kf_contain_plan *p, const char **what)
{
    for (uint32_t i = 0; i < p->nprocs && i < KF_CG_MAX_DIRS; i++) {
        int fd = open(p->procs[i], O_WRONLY | O_CLOEXEC);
        if (fd < 0)
            return fail(what, "join its control group (open cgroup.procs)");
        ssize_t w = write(fd, "0", 1);
        int e = errno;
        close(fd);
        if (w != 1) {
            errno = e;
            return fail(what, "join its control group (write cgroup.procs)");
        }
    }
    if (!p->mounts)
        return 0;
    if (unshare(CLONE_NEWNS) != 0)
        return fail(what, "make its mount namespace");
    /* Private: its tmpfs never reach the agent's namespace or the node's. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        return fail(what, "make its mounts private");
    struct stat st;
    if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
        mount("kfleet-shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, p->shm_opts) != 0)
        return fail(what, "mount its /dev/shm");
    if (p->tmpdir[0] &&
        mount("kfleet-tmp", p->tmpdir, "tmpfs", MS_NOSUID | MS_NODEV, p->tmp_opts) != 0)
        return fail(what, "mount its TMPDIR");
    return 0;
}

int kf_contain_private_mounts(kf_err *err)
{
    if (unshare(CLONE_NEWNS) != 0)
        return kf_err_set(err, errno == EPERM ? KF_EUNAVAIL : KF_EIO,
                          "cannot have a mount namespace of its own: %s%s", strerror(errno),
                          errno == EPERM ? " (it needs root or CAP_SYS_ADMIN)" : "");
    /* A slave: the node's later mounts (a dataset, an NFS home) still
     * appear here, and nothing mounted here goes back. */
    if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0)
        return kf_err_set(err, KF_EIO, "cannot make its mounts a slave of the node's: %s",
                          strerror(errno));
    return KF_OK;
}

int kf_contain_tmpfs(const char *dir, uint64_t bytes, kf_err *err)
{
    char opts[96];
    snprintf(opts, sizeof opts, "size=%" PRIu64 ",nr_inodes=65536,mode=0700", bytes);
    if (mount("kfleet-kcache", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) != 0)
        return kf_err_set(err, KF_EIO, "cannot mount a tmpfs of %" PRIu64 " bytes on %s: %s", bytes,
                          dir, strerror(errno));
    return KF_OK;
}

void kf_contain_unmount(const char *dir)
{
    umount2(dir, MNT_DETACH);
}
