/* kcache — see kcache.h. The copies walk directories by descriptor and
 * never follow a link: the tree is the kernel's to write, and a link it
 * planted must not make the agent read or write elsewhere. */
#include "agent/kcache.h"

#include "common/log.h"
#include "common/util.h"
#include "common/xalloc.h"
#include "runner/confine.h"
#include "runner/contain.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* Free space under which a cache counts as full (its kernel met the
 * quota): a cache is a few files, never within a megabyte of its quota. */
#define KCACHE_FULL_MARGIN (1u << 20)
#define KCACHE_DEPTH 32

struct kcache {
    char dir[PATH_MAX];  /* WORKDIR/kcache/HASH: the kept copy */
    char live[PATH_MAX]; /* the runner's: SCRATCH/kcache, or dir itself */
    uint64_t quota;
    int mounted;
};

/* Copies regular file `name`, at most *budget bytes. The source is
 * judged by what was opened, not by the name's earlier stat: a runner still
 * alive when its cache is kept (kcache_keep) may swap in a FIFO, whose open
 * would wait for a writer for ever, or grow the file while it is read. */
static int copy_file(int sfd, int dfd, const char *name, uint64_t *budget)
{
    struct stat st;
    int in = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    int ok =
        in >= 0 && fstat(in, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size <= *budget;
    int out = !ok ? -1
                  : openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                           st.st_mode & 0700);
    int rc = out >= 0 ? 0 : -1;
    uint64_t left = rc == 0 ? (uint64_t)st.st_size : 0;
    if (rc == 0)
        *budget -= left;
    char buf[65536];
    for (ssize_t n;
         rc == 0 && left > 0 && (n = read(in, buf, left < sizeof buf ? left : sizeof buf)) != 0;) {
        rc = n > 0 && kf_write_all(out, buf, (size_t)n) == KF_OK ? 0 : -1;
        left -= n > 0 ? (uint64_t)n : 0;
    }
    if (in >= 0)
        close(in);
    if (out >= 0 && close(out) != 0)
        rc = -1;
    return rc;
}

/* Copies directory sfd into dfd (both open): files, directories and links
 * as links, at most *budget bytes of files. 0, or -1 (over the budget, or
 * a copy failed). */
static int copy_dir(int sfd, int dfd, uint64_t *budget, int depth)
{
    int dup_fd = dup(sfd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d) {
        if (dup_fd >= 0)
            close(dup_fd);
        return -1;
    }
    int rc = depth < KCACHE_DEPTH ? 0 : -1;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(sfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue; /* gone meanwhile */
        if (S_ISDIR(st.st_mode)) {
            int s2 = -1, d2 = -1;
            if (mkdirat(dfd, e->d_name, 0700) == 0)
                d2 = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            s2 = openat(sfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            rc = s2 >= 0 && d2 >= 0 ? copy_dir(s2, d2, budget, depth + 1) : -1;
            if (s2 >= 0)
                close(s2);
            if (d2 >= 0)
                close(d2);
        } else if (S_ISREG(st.st_mode)) {
            rc = copy_file(sfd, dfd, e->d_name, budget);
        } else if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX];
            ssize_t n = readlinkat(sfd, e->d_name, target, sizeof target - 1);
            if (n >= 0) {
                target[n] = '\0';
                rc = symlinkat(target, dfd, e->d_name) == 0 ? 0 : -1;
            }
        } /* sockets, FIFOs, devices: not a cache's */
    }
    closedir(d);
    return rc;
}

/* Copies directory src into dst (made here), at most budget bytes. */
static int copy_tree(const char *src, const char *dst, uint64_t budget)
{
    int s = open(src, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (s < 0)
        return errno == ENOENT ? 0 : -1;
    int d = -1, rc = -1;
    if (mkdir(dst, 0700) == 0 || errno == EEXIST)
        d = open(dst, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (d >= 0) {
        rc = copy_dir(s, d, &budget, 0);
        close(d);
    }
    close(s);
    return rc;
}

/* Bytes of the files under the directory fd (links not followed). */
static uint64_t dir_bytes(int fd, int depth)
{
    int dup_fd = dup(fd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d) {
        if (dup_fd >= 0)
            close(dup_fd);
        return 0;
    }
    uint64_t sum = 0;
    for (struct dirent *e; (e = readdir(d));) {
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        sum += (uint64_t)st.st_blocks * 512u;
        if (S_ISDIR(st.st_mode) && depth < KCACHE_DEPTH) {
            int sub = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) {
                sum += dir_bytes(sub, depth + 1);
                close(sub);
            }
        }
    }
    closedir(d);
    return sum;
}

static uint64_t tree_bytes(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    uint64_t n = dir_bytes(fd, 0);
    close(fd);
    return n;
}

void kcache_sweep(const char *workdir)
{
    char dir[PATH_MAX + 16], path[PATH_MAX + 300];
    snprintf(dir, sizeof dir, "%s/kcache", workdir);
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));)
        if (strstr(e->d_name, ".new-") || strstr(e->d_name, ".old-")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            kf_remove_tree(path);
        }
    closedir(d);
}

kcache *kcache_open(const char *workdir, const char *hash, const char *scratch, uint64_t quota,
                    int mounts, kf_err *err)
{
    kcache *k = kf_xcalloc(1, sizeof *k);
    k->quota = quota;
    if (kf_confine_kcache_dir(workdir, hash, k->dir, sizeof k->dir) != 0) {
        free(k);
        kf_err_set(err, KF_EINVAL, "kernel hash '%.140s' names no cache", hash);
        return NULL;
    }
    if (!mounts) {
        snprintf(k->live, sizeof k->live, "%s", k->dir);
        return k;
    }
    snprintf(k->live, sizeof k->live, "%s/kcache", scratch);
    char parent[PATH_MAX + 16];
    snprintf(parent, sizeof parent, "%s/kcache", workdir); /* where the kept copies go */
    int rc = kf_mkdirs(parent, 0700, err);
    if (rc == KF_OK)
        rc = kf_mkdirs(k->live, 0700, err);
    if (rc == KF_OK)
        rc = kf_contain_tmpfs(k->live, quota, err);
    if (rc != KF_OK) {
        free(k);
        return NULL;
    }
    k->mounted = 1;
    /* The kept copy, unless it no longer fits (the quota was lowered). */
    if (copy_tree(k->dir, k->live, quota) != 0) {
        kf_warn("kcache.not_loaded",
                "cache=%s quota=%" PRIu64 " why=\"it is over the quota or cannot be read: "
                "removed, the kernel starts with an empty cache\"",
                k->dir, quota);
        kf_remove_tree(k->dir);
        kf_contain_unmount(k->live);
        if (kf_contain_tmpfs(k->live, quota, err) != KF_OK) {
            free(k);
            return NULL;
        }
    }
    return k;
}

/* The tmpfs's contents as the new kept copy: copied beside it, swapped in
 * by rename, the old removed. */
static void keep(kcache *k)
{
    char fresh[PATH_MAX + 32], old[PATH_MAX + 32];
    snprintf(fresh, sizeof fresh, "%s.new-%d", k->dir, (int)getpid());
    snprintf(old, sizeof old, "%s.old-%d", k->dir, (int)getpid());
    kf_remove_tree(fresh);
    if (copy_tree(k->live, fresh, k->quota) != 0) {
        kf_warn("kcache.not_kept", "cache=%s error=\"%s\"", k->dir, strerror(errno));
        kf_remove_tree(fresh);
        return;
    }
    int had = rename(k->dir, old) == 0;
    if (rename(fresh, k->dir) != 0) {
        kf_warn("kcache.not_kept", "cache=%s error=\"%s\"", k->dir, strerror(errno));
        kf_remove_tree(fresh);
    }
    if (had)
        kf_remove_tree(old);
}

/* Whether the mounted tmpfs is full: the kernel reached its quota. */
static int tmpfs_full(const kcache *k)
{
    struct statvfs vs;
    return statvfs(k->live, &vs) == 0 &&
           ((uint64_t)vs.f_bavail * vs.f_frsize < KCACHE_FULL_MARGIN || vs.f_favail < 16);
}

void kcache_keep(kcache *k)
{
    if (k && k->mounted && !tmpfs_full(k))
        keep(k);
}

int kcache_close(kcache **self)
{
    kcache *k = *self;
    if (!k)
        return 0;
    int full;
    if (k->mounted) {
        full = tmpfs_full(k);
        if (!full)
            keep(k);
        kf_contain_unmount(k->live);
    } else {
        full = tree_bytes(k->dir) > k->quota;
    }
    if (full) {
        kf_warn("kcache.full",
                "cache=%s quota=%" PRIu64 " the kernel filled its cache quota: not kept", k->dir,
                k->quota);
        kf_remove_tree(k->dir);
    }
    free(k);
    *self = NULL;
    return full;
}
