/* refstore — the agent's references; see refstore.h. The budget is kept at
 * adoption: the files' sizes are summed from the directory (a few hundred
 * files at most), and the oldest by access time go first. */
#include "agent/refstore.h"

#include "common/util.h"
#include "common/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define VERIFIED_MAX 256

struct kf_refstore {
    char dir[PATH_MAX];
    uint64_t budget; /* bytes */
    char verified[VERIFIED_MAX][65];
    size_t nverified, next;
};

kf_refstore *kf_refstore_open(const char *workdir, kf_err *err)
{
    kf_refstore *rs = kf_xcalloc(1, sizeof *rs);
    snprintf(rs->dir, sizeof rs->dir, "%s/refs", workdir);
    if (kf_mkdirs(rs->dir, 0700, err) != KF_OK) {
        free(rs);
        return NULL;
    }
    const char *gb = getenv("KF_REFS_MAX_GB");
    struct statvfs vfs;
    if (gb && *gb && atof(gb) > 0)
        rs->budget = (uint64_t)(atof(gb) * 1073741824.0);
    else if (statvfs(rs->dir, &vfs) == 0)
        rs->budget = (uint64_t)vfs.f_blocks * vfs.f_frsize / 2;
    else
        rs->budget = 16ull << 30;
    return rs;
}

void kf_refstore_close(kf_refstore **self)
{
    if (!self || !*self)
        return;
    free(*self);
    *self = NULL;
}

int kf_refstore_digest_ok(const char *digest)
{
    if (!digest || strlen(digest) != 64)
        return 0;
    for (const char *c = digest; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return 0;
    return 1;
}

int kf_refstore_path(const kf_refstore *rs, const char *digest, char *out, size_t len)
{
    if (!kf_refstore_digest_ok(digest))
        return KF_EINVAL;
    snprintf(out, len, "%s/%s.ref", rs->dir, digest);
    return KF_OK;
}

int kf_refstore_has(const kf_refstore *rs, const char *digest)
{
    char p[PATH_MAX + 80];
    return kf_refstore_path(rs, digest, p, sizeof p) == KF_OK && access(p, R_OK) == 0;
}

/* Drops the least recently used files until `need` more bytes fit. */
static void make_room(kf_refstore *rs, uint64_t need)
{
    for (;;) {
        DIR *d = opendir(rs->dir);
        if (!d)
            return;
        uint64_t total = 0;
        time_t oldest_t = 0;
        char oldest[NAME_MAX + 1] = "";
        struct dirent *e;
        while ((e = readdir(d))) {
            size_t l = strlen(e->d_name);
            struct stat sb;
            char p[PATH_MAX + NAME_MAX + 2];
            if (l < 5 || strcmp(e->d_name + l - 4, ".ref") != 0)
                continue;
            snprintf(p, sizeof p, "%s/%s", rs->dir, e->d_name);
            if (stat(p, &sb) != 0)
                continue;
            total += (uint64_t)sb.st_size;
            if (!oldest[0] || sb.st_atime < oldest_t) {
                oldest_t = sb.st_atime;
                snprintf(oldest, sizeof oldest, "%s", e->d_name);
            }
        }
        closedir(d);
        if (total + need <= rs->budget || !oldest[0])
            return;
        char p[PATH_MAX + NAME_MAX + 2];
        snprintf(p, sizeof p, "%s/%s", rs->dir, oldest);
        if (unlink(p) != 0)
            return;
    }
}

int kf_refstore_adopt(kf_refstore *rs, const char *from, const char *digest, kf_err *err)
{
    char to[PATH_MAX + 80];
    if (kf_refstore_path(rs, digest, to, sizeof to) != KF_OK) {
        unlink(from);
        return kf_err_set(err, KF_EINVAL, "a reference with a malformed digest '%.80s'",
                          digest ? digest : "");
    }
    struct stat sb;
    if (stat(from, &sb) != 0)
        return kf_err_set(err, KF_EIO, "the reference %s computed here is missing (%s): %s", digest,
                          from, strerror(errno));
    if (access(to, F_OK) == 0) {
        unlink(from);
        return KF_OK;
    }
    if ((uint64_t)sb.st_size > rs->budget) {
        unlink(from);
        return kf_err_set(err, KF_EINVAL,
                          "the reference %s (%.1f GiB) is larger than the agent's reference store "
                          "may hold (%.1f GiB: KF_REFS_MAX_GB, by default half its file system)",
                          digest, (double)sb.st_size / 1073741824.0,
                          (double)rs->budget / 1073741824.0);
    }
    make_room(rs, (uint64_t)sb.st_size);
    chmod(from, 0400);
    if (rename(from, to) != 0) {
        int e = errno;
        unlink(from);
        return kf_err_set(err, KF_EIO, "cannot keep the reference %s in %s: %s", digest, rs->dir,
                          strerror(e));
    }
    return KF_OK;
}

void kf_refstore_drop(kf_refstore *rs, const char *digest)
{
    char p[PATH_MAX + 80];
    if (kf_refstore_path(rs, digest, p, sizeof p) == KF_OK)
        unlink(p);
    for (size_t i = 0; i < rs->nverified; i++)
        if (strcmp(rs->verified[i], digest) == 0)
            rs->verified[i][0] = '\0';
}

int kf_refstore_verified(const kf_refstore *rs, const char *digest)
{
    for (size_t i = 0; digest && i < rs->nverified; i++)
        if (strcmp(rs->verified[i], digest) == 0)
            return 1;
    return 0;
}

void kf_refstore_mark_verified(kf_refstore *rs, const char *digest)
{
    if (!kf_refstore_digest_ok(digest) || kf_refstore_verified(rs, digest))
        return;
    snprintf(rs->verified[rs->next], sizeof rs->verified[0], "%s", digest);
    rs->next = (rs->next + 1) % VERIFIED_MAX;
    if (rs->nverified < VERIFIED_MAX)
        rs->nverified++;
}
