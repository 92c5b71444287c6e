/* artifact — see artifact.h. */
#include "runner/artifact.h"

#include "common/buf.h"
#include "common/log.h"
#include "common/util.h"
#include "runner/build.h"
#include "runner/pyext.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int kf_artifact_hash(const char *path, const char *ext_dir, char *line, size_t linelen,
                     char out[65], kf_err *err)
{
    if (!ext_dir || !*ext_dir) {
        if (kf_build_file_hash(path, out) != KF_OK)
            return kf_err_set(err, KF_EIO, "cannot read the artifact %s: %s", path,
                              strerror(errno));
        return KF_OK;
    }
    char so[PATH_MAX], dummy[512];
    int rc = kf_pyext_describe(ext_dir, line ? line : dummy, line ? linelen : sizeof dummy, so,
                               sizeof so, err);
    if (rc != KF_OK)
        return rc;
    kf_buf a = KF_BUF_INIT, b = KF_BUF_INIT;
    if (kf_buf_read_file(&a, path) != KF_OK || kf_buf_read_file(&b, so) != KF_OK) {
        int e = errno;
        kf_buf_release(&a);
        kf_buf_release(&b);
        return kf_err_set(err, KF_EIO, "cannot read the built extension %s: %s", so, strerror(e));
    }
    kf_hash_part parts[] = {{a.data, a.len}, {b.data, b.len}};
    kf_hash_hex(parts, 2, out);
    kf_buf_release(&a);
    kf_buf_release(&b);
    return KF_OK;
}

/* The artifact_hash of cache/KEY.json, or "" when there is none. */
static void sidecar_hash(const char *workdir, const char *key, char out[65])
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/cache/%s.json", workdir, key);
    json_t *o = json_load_file(path, 0, NULL);
    const char *h = json_string_value(json_object_get(o, "artifact_hash"));
    snprintf(out, 65, "%s", h && strlen(h) == 64 ? h : "");
    json_decref(o);
}

int kf_artifact_check(const char *workdir, const Kfleet__TaskSpec *sp, const char *expected,
                      kf_err *err)
{
    char key[65], path[PATH_MAX], ext[PATH_MAX] = "", side[PATH_MAX], want[65], got[65] = "";
    int lang = kf_build_lang(sp);
    int rc = kf_build_artifact(workdir, sp->kernel_hash, lang, key, path, sizeof path, err);
    if (rc != KF_OK)
        return rc;
    if (access(path, F_OK) != 0)
        return kf_err_set(err, KF_ENOTFOUND, "artifact %s not in cache", key);
    if (lang == KF_LANG_TORCH_EXT)
        kf_build_ext_dir(path, ext, sizeof ext);
    const char *from = "the coordinator's record of this agent's build";
    if (expected && *expected) {
        snprintf(want, sizeof want, "%s", expected);
    } else {
        sidecar_hash(workdir, key, want);
        from = "its build's record";
    }
    kf_err herr;
    if (want[0] && kf_artifact_hash(path, ext, NULL, 0, got, &herr) == KF_OK &&
        strcmp(got, want) == 0)
        return KF_OK;
    snprintf(side, sizeof side, "%s/cache/%s.json", workdir, key);
    kf_warn("artifact.stale", "kernel=%s key=%s hash=%s recorded=%s from=\"%s\"",
            sp->kernel ? sp->kernel : "", key, got[0] ? got : "unreadable", want[0] ? want : "none",
            from);
    unlink(path);
    unlink(side);
    if (ext[0])
        kf_remove_tree(ext);
    return kf_err_set(err, KF_EINVAL,
                      "the cached artifact of kernel %s changed since it was built (it hashes to "
                      "%.12s, %s says %.12s): removed and not run; it is built again",
                      sp->kernel ? sp->kernel : "?", got[0] ? got : "(unreadable)", from,
                      want[0] ? want : "(none)");
}
