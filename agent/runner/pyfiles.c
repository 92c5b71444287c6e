/* pyfiles — a Python kernel's own files beside its cached artifact; see
 * pyfiles.h. */
#include "runner/pyfiles.h"
#include "common/dirpack.h"
#include "common/util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void kf_pyfiles_dir(const char *artifact, char *out, size_t len)
{
    size_t n = strlen(artifact);
    snprintf(out, len, "%.*s.files", (int)(n > 3 ? n - 3 : n), artifact);
}

int kf_pyfiles_present(const Kfleet__TaskSpec *sp, const char *artifact)
{
    char dir[PATH_MAX], path[PATH_MAX + 256];
    kf_pyfiles_dir(artifact, dir, sizeof dir);
    for (size_t i = 0; i < sp->n_files; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, sp->files[i]); /* "mylib/": a directory */
        if (access(path, R_OK) != 0)
            return 0;
    }
    return 1;
}

/* The source sent as `name`, or NULL. */
static const Kfleet__SourceFile *source_named(const Kfleet__TaskSpec *sp, const char *name)
{
    for (size_t s = 0; s < sp->n_sources; s++)
        if (sp->sources[s]->name && strcmp(sp->sources[s]->name, name) == 0)
            return sp->sources[s];
    return NULL;
}

int kf_pyfiles_install(const Kfleet__TaskSpec *sp, const char *scratch, const char *artifact,
                       kf_err *err)
{
    char out[PATH_MAX], dir[PATH_MAX], from[PATH_MAX + 256], to[PATH_MAX + 256];
    snprintf(out, sizeof out, "%s/files.out", scratch);
    kf_pyfiles_dir(artifact, dir, sizeof dir);
    if (mkdir(out, 0700) != 0 && errno != EEXIST)
        return kf_err_set(err, KF_EIO, "cannot make %s: %s", out, strerror(errno));
    for (size_t i = 0; i < sp->n_files; i++) {
        const char *name = sp->files[i];
        size_t nl = strlen(name);
        if (nl > 1 && name[nl - 1] == '/' && !memchr(name, '/', nl - 1) && name[0] != '.') {
            /* A directory: its pack (NAME.kfdir, dirpack.h), unpacked. */
            char packed[PATH_MAX];
            snprintf(packed, sizeof packed, "%.*s.kfdir", (int)(nl - 1), name);
            const Kfleet__SourceFile *src = source_named(sp, packed);
            if (!src)
                return kf_err_set(err, KF_EINVAL,
                                  "the kernel's directory '%s' came without its pack %s", name,
                                  packed);
            snprintf(to, sizeof to, "%s/%.*s", out, (int)(nl - 1), name);
            int rc = kf_dirpack_unpack(src->content.data, src->content.len, to, err);
            if (rc != KF_OK)
                return rc;
            continue;
        }
        if (!*name || strchr(name, '/') || name[0] == '.' || !source_named(sp, name))
            return kf_err_set(err, KF_EINVAL,
                              "the kernel's file '%s' is not a plain file name among the "
                              "sources sent with it",
                              name);
        snprintf(from, sizeof from, "%s/%s", scratch, name);
        snprintf(to, sizeof to, "%s/%s", out, name);
        if (rename(from, to) != 0)
            return kf_err_set(err, KF_EIO, "cannot move the kernel's file %s into %s: %s", from,
                              out, strerror(errno));
    }
    if (rename(out, dir) != 0) {
        char stale[PATH_MAX];
        snprintf(stale, sizeof stale, "%s/stale.files", scratch);
        if ((errno != ENOTEMPTY && errno != EEXIST) || rename(dir, stale) != 0 ||
            rename(out, dir) != 0)
            return kf_err_set(err, KF_EIO, "cannot move the kernel's files into %s: %s", dir,
                              strerror(errno));
    }
    return KF_OK;
}
