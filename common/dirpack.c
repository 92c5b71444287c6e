/* dirpack — a directory as one byte string and back; see dirpack.h. */
#include "common/dirpack.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char magic[] = "kfdir1\n";

static int pack_tree(const char *root, const char *rel, kf_buf *out, size_t *total, size_t max,
                     char *why, size_t wlen)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s%s%s", root, *rel ? "/" : "", rel);
    struct dirent **ents = NULL;
    int n = scandir(path, &ents, NULL, alphasort);
    if (n < 0) {
        snprintf(why, wlen, "cannot read the directory %s: %s", path, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        const char *name = ents[i]->d_name;
        char sub[PATH_MAX], full[PATH_MAX];
        struct stat st;
        if (rc || name[0] == '.' || strcmp(name, "__pycache__") == 0)
            continue;
        snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", name);
        snprintf(full, sizeof full, "%s/%s", root, sub);
        if (strchr(name, '\n')) {
            snprintf(why, wlen, "%s has a newline in its name", full);
            rc = -1;
        } else if (lstat(full, &st) != 0) {
            snprintf(why, wlen, "cannot read %s: %s", full, strerror(errno));
            rc = -1;
        } else if (S_ISDIR(st.st_mode)) {
            rc = pack_tree(root, sub, out, total, max, why, wlen);
        } else if (!S_ISREG(st.st_mode)) {
            snprintf(why, wlen, "%s is %s, not a regular file", full,
                     S_ISLNK(st.st_mode) ? "a symbolic link" : "a special file");
            rc = -1;
        } else {
            kf_buf data = KF_BUF_INIT;
            char rwhy[160];
            if (kf_buf_read_file_max(&data, full, max, rwhy, sizeof rwhy) != KF_OK) {
                snprintf(why, wlen, "%s: %s", full, rwhy);
                rc = -1;
            } else if ((*total += data.len) > max) {
                snprintf(why, wlen, "its files add up to more than %zu bytes", max);
                rc = -1;
            } else {
                kf_buf_addf(out, "%zu %zu\n", strlen(sub), data.len);
                kf_buf_adds(out, sub);
                kf_buf_add(out, data.data, data.len);
            }
            kf_buf_release(&data);
        }
    }
    for (int i = 0; i < n; i++)
        free(ents[i]);
    free(ents);
    return rc;
}

int kf_dirpack_pack(const char *dir, kf_buf *out, size_t max, char *why, size_t wlen)
{
    size_t total = 0;
    kf_buf_adds(out, magic);
    return pack_tree(dir, "", out, &total, max, why, wlen);
}

/* A relative path whose every component is a plain name. */
static int safe_path(const char *p, size_t n)
{
    if (n == 0 || p[0] == '/')
        return 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && p[j] != '/')
            j++;
        if (j == i || p[i] == '.' || memchr(p + i, '\0', j - i))
            return 0; /* empty, ".", "..", a dot-file */
        i = j + 1;
        if (j == n - 1)
            return 0; /* a trailing slash */
    }
    return 1;
}

int kf_dirpack_unpack(const void *data, size_t len, const char *dest, kf_err *err)
{
    const char *p = data, *end = p + len;
    size_t ml = sizeof magic - 1;
    if (len < ml || memcmp(p, magic, ml) != 0)
        return kf_err_set(err, KF_EINVAL, "the packed directory for %s is not a kfdir1 pack", dest);
    int rc = kf_mkdirs(dest, 0700, err);
    for (p += ml; rc == KF_OK && p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        unsigned long long pl, dl;
        char tail;
        if (!nl || nl - p > 40 || sscanf(p, "%llu %llu%c", &pl, &dl, &tail) != 3 || tail != '\n' ||
            pl > PATH_MAX / 2 || pl > (size_t)(end - nl - 1) || dl > (size_t)(end - nl - 1) - pl)
            return kf_err_set(err, KF_EINVAL,
                              "the packed directory for %s is cut short or malformed", dest);
        const char *path = nl + 1, *bytes = path + pl;
        if (!safe_path(path, (size_t)pl))
            return kf_err_set(err, KF_EINVAL,
                              "the packed directory for %s names '%.*s', which is not a plain "
                              "relative path",
                              dest, (int)(pl > 100 ? 100 : pl), path);
        char full[PATH_MAX + 1];
        snprintf(full, sizeof full, "%s/%.*s", dest, (int)pl, path);
        char *slash = strrchr(full, '/');
        *slash = '\0';
        rc = kf_mkdirs(full, 0700, err);
        *slash = '/';
        if (rc == KF_OK)
            rc = kf_write_file(full, bytes, (size_t)dl, 0600, err);
        p = bytes + dl;
    }
    return rc;
}
