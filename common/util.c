/* util — small OS helpers; see util.h. */
#include "common/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

uint64_t kf_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t kf_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t kf_unpredictable_u64(void)
{
    uint64_t x = 0;
    if (getrandom(&x, sizeof x, 0) != (ssize_t)sizeof x)
        x = kf_mono_ns() * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() << 32;
    return x;
}

double kf_sleep_s(double seconds)
{
    if (!(seconds > 0))
        return 0;
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    uint64_t t0 = kf_mono_ns();
    nanosleep(&ts, NULL);
    return (double)(kf_mono_ns() - t0) / 1e9;
}

int kf_mkdirs(const char *path, unsigned mode, kf_err *err)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
        return kf_err_set(err, KF_EINVAL, "path too long: %s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, (mode_t)mode) != 0 && errno != EEXIST)
            return kf_err_set(err, KF_EIO, "cannot create directory %s: %s", tmp, strerror(errno));
        *p = '/';
    }
    if (mkdir(tmp, (mode_t)mode) != 0 && errno != EEXIST)
        return kf_err_set(err, KF_EIO, "cannot create directory %s: %s", tmp, strerror(errno));
    return KF_OK;
}

int kf_lock_file(const char *path, kf_err *err)
{
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return kf_err_set(err, errno == EACCES ? KF_EINVAL : KF_EIO, "cannot open lock file %s: %s",
                          path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(fd);
        if (e == EWOULDBLOCK)
            return kf_err_set(err, KF_EBUSY, "%s is locked by another process", path);
        return kf_err_set(err, KF_EIO, "cannot lock %s: %s", path, strerror(e));
    }
    return fd;
}

void kf_hash_hex(const kf_hash_part *parts, size_t n, char out[65])
{
    crypto_generichash_state st;
    unsigned char h[32];
    crypto_generichash_init(&st, NULL, 0, sizeof h);
    for (size_t i = 0; i < n; i++) {
        /* Length-prefix each part so ("ab","c") and ("a","bc") differ. */
        uint64_t len = parts[i].len;
        crypto_generichash_update(&st, (const unsigned char *)&len, sizeof len);
        crypto_generichash_update(&st, parts[i].data, parts[i].len);
    }
    crypto_generichash_final(&st, h, sizeof h);
    sodium_bin2hex(out, 65, h, sizeof h);
}

int kf_free_bytes(const char *path, uint64_t *out)
{
    struct statvfs sv;
    if (statvfs(path, &sv) != 0)
        return KF_EIO;
    *out = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
    return KF_OK;
}

int kf_exe_dir(char *out, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", out, len - 1);
    if (n <= 0)
        return KF_EIO;
    out[n] = '\0';
    char *slash = strrchr(out, '/');
    if (slash)
        *slash = '\0';
    return KF_OK;
}

int kf_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return KF_EIO;
        }
        c += w;
        n -= (size_t)w;
    }
    return KF_OK;
}

int kf_send_fds(int sock, const void *p, size_t n, const int *fds, size_t nfds)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * KF_SEND_FDS_MAX)];
        struct cmsghdr align;
    } u;
    if (nfds == 0 || nfds > KF_SEND_FDS_MAX) {
        errno = EINVAL;
        return KF_EIO;
    }
    memset(&u, 0, sizeof u);
    struct iovec iov = {.iov_base = (void *)p, .iov_len = n};
    struct msghdr msg = {.msg_iov = &iov,
                         .msg_iovlen = 1,
                         .msg_control = u.buf,
                         .msg_controllen = CMSG_SPACE(sizeof(int) * nfds)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
    ssize_t w;
    do
        w = sendmsg(sock, &msg, MSG_NOSIGNAL);
    while (w < 0 && errno == EINTR);
    if (w == (ssize_t)n)
        return KF_OK;
    if (w >= 0)
        errno = EIO;
    return KF_EIO;
}

int kf_write_file(const char *path, const void *data, size_t len, unsigned mode, kf_err *err)
{
    /* The temporary is made with O_CREAT|O_EXCL under a random name
     * (mkostemp): a symlink planted at a predictable name cannot redirect the
     * write, and rename() replaces whatever sits at path (a symlink too)
     * without following it. */
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof tmp)
        return kf_err_set(err, KF_EINVAL, "path too long: %s", path);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return kf_err_set(err, errno == EACCES ? KF_EINVAL : KF_EIO, "cannot write %s: %s", path,
                          strerror(errno));
    if (kf_write_all(fd, data, len) != KF_OK) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return kf_err_set(err, e == ENOSPC ? KF_EFULL : KF_EIO, "cannot write %s: %s", tmp,
                          strerror(e));
    }
    if (fchmod(fd, (mode_t)mode) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return kf_err_set(err, KF_EIO, "cannot write %s: %s", path, strerror(e));
    }
    return KF_OK;
}

static int remove_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int kf_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : -1;
    return nftw(path, remove_cb, 16, FTW_DEPTH | FTW_PHYS);
}

int kf_private_dir(const char *path, kf_err *err)
{
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return kf_err_set(err, errno == EACCES ? KF_EINVAL : KF_EIO,
                          "cannot create directory %s: %s", path, strerror(errno));
    return kf_check_private_dir(path, err);
}

int kf_check_private_dir(const char *path, kf_err *err)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return kf_err_set(err, errno == ENOENT ? KF_ENOTFOUND : KF_EIO, "cannot read %s: %s", path,
                          strerror(errno));
    if (S_ISLNK(st.st_mode))
        return kf_err_set(err, KF_EINVAL,
                          "%s is a symbolic link: kfleet keeps keys, sockets and its store there "
                          "and follows no link to them. Remove it (or pass --home DIR)",
                          path);
    if (!S_ISDIR(st.st_mode))
        return kf_err_set(err, KF_EINVAL, "%s is not a directory; remove it (or pass --home DIR)",
                          path);
    if (st.st_uid != geteuid() || (st.st_mode & 022))
        return kf_err_set(err, KF_EINVAL,
                          "%s belongs to uid %u with mode %04o: kfleet keeps keys, sockets and "
                          "its store there and refuses a directory another user owns or can "
                          "write (someone may have made it for you). Remove it, or pass --home "
                          "DIR",
                          path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
    return KF_OK;
}

int kf_parse_duration(const char *s, double *seconds)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    /* strtod also reads "nan" and "inf": no duration (found by fuzz_inventory). */
    if (end == s || errno != 0 || !isfinite(v) || v < 0)
        return KF_EINVAL;
    double mul = 1;
    if (strcmp(end, "") == 0 || strcmp(end, "s") == 0)
        mul = 1;
    else if (strcmp(end, "ms") == 0)
        mul = 1e-3;
    else if (strcmp(end, "us") == 0)
        mul = 1e-6;
    else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
        mul = 60;
    else if (strcmp(end, "h") == 0)
        mul = 3600;
    else
        return KF_EINVAL;
    if (!isfinite(v * mul))
        return KF_EINVAL; /* "1e308h" */
    *seconds = v * mul;
    return KF_OK;
}

int kf_parse_size(const char *s, uint64_t *bytes)
{
    if (!isdigit((unsigned char)*s))
        return KF_EINVAL;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0)
        return KF_EINVAL;
    static const char units[] = "KMGT";
    unsigned shift = 0;
    const char *u = *end ? strchr(units, *end) : NULL;
    if (u) {
        shift = 10u * (unsigned)(u - units + 1);
        end++;
        if (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0)
            end += strlen(end);
    } else if (strcmp(end, "B") == 0) {
        end++;
    }
    if (*end || v > (UINT64_MAX >> shift))
        return KF_EINVAL;
    *bytes = (uint64_t)v << shift;
    return KF_OK;
}

int kf_find_exe(const char *name, char *out, size_t len)
{
    if (strchr(name, '/')) {
        snprintf(out, len, "%s", name);
        return access(out, X_OK) == 0;
    }
    const char *p = getenv("PATH");
    while (p && *p) {
        size_t n = strcspn(p, ":");
        int w = snprintf(out, len, "%.*s/%s", (int)n, p, name);
        if (n > 0 && w > 0 && (size_t)w < len && access(out, X_OK) == 0)
            return 1;
        p += n;
        if (*p == ':')
            p++;
    }
    return 0;
}

int kf_word_ok(const char *s, const char *extra, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max || s[0] == '-')
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr(extra, *s))
            return 0;
    return 1;
}

int kf_version_cmp(const char *a, const char *b)
{
    for (;;) {
        char *ea, *eb;
        unsigned long x = strtoul(a, &ea, 10), y = strtoul(b, &eb, 10);
        if (x != y)
            return x < y ? -1 : 1;
        int ma = *ea == '.', mb = *eb == '.';
        if (!ma && !mb)
            return 0;
        a = ma ? ea + 1 : ea;
        b = mb ? eb + 1 : eb;
    }
}

int kf_memfd(const char *name)
{
    return (int)syscall(SYS_memfd_create, name, MFD_CLOEXEC);
}
