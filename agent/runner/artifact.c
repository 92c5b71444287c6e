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

/* A string field of cache/KEY.json, or "" when there is none. */
static void sidecar_field(const char *workdir, const char *key, const char *field, char *out,
                          size_t len)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/cache/%s.json", workdir, key);
    json_t *o = json_load_file(path, 0, NULL);
    const char *v = json_string_value(json_object_get(o, field));
    snprintf(out, len, "%s", v ? v : "");
    json_decref(o);
}

/* The artifact at path, its extension dir (or "") and its sidecar: gone. */
static void remove_artifact(const char *workdir, const char *key, const char *path, const char *ext)
{
    char side[PATH_MAX];
    snprintf(side, sizeof side, "%s/cache/%s.json", workdir, key);
    unlink(path);
    unlink(side);
    if (ext[0])
        kf_remove_tree(ext);
}

/* sp's cached artifact: its key, path and extension dir. */
static int locate(const char *workdir, const Kfleet__TaskSpec *sp, char key[65], char *path,
                  char *ext, kf_err *err)
{
    int lang = kf_build_lang(sp);
    int rc = kf_build_artifact(workdir, sp->kernel_hash, lang, key, path, PATH_MAX, err);
    if (rc == KF_OK && lang == KF_LANG_TORCH_EXT)
        kf_build_ext_dir(path, ext, PATH_MAX);
    return rc;
}

int kf_artifact_drop_installed(const char *workdir, const Kfleet__TaskSpec *sp, char *builder,
                               size_t len)
{
    char key[65], path[PATH_MAX], ext[PATH_MAX] = "";
    kf_err err;
    if (locate(workdir, sp, key, path, ext, &err) != KF_OK || access(path, F_OK) != 0)
        return 0;
    sidecar_field(workdir, key, "built_by", builder, len);
    if (!builder[0])
        return 0;
    remove_artifact(workdir, key, path, ext);
    return 1;
}

int kf_artifact_check(const char *workdir, const Kfleet__TaskSpec *sp, const char *expected,
                      kf_err *err)
{
    char key[65], path[PATH_MAX], ext[PATH_MAX] = "", want[65], got[65] = "";
    int rc = locate(workdir, sp, key, path, ext, err);
    if (rc != KF_OK)
        return rc;
    if (access(path, F_OK) != 0)
        return kf_err_set(err, KF_ENOTFOUND, "artifact %s not in cache", key);
    const char *from = "the coordinator's record of this agent's build";
    if (expected && *expected) {
        snprintf(want, sizeof want, "%s", expected);
    } else {
        sidecar_field(workdir, key, "artifact_hash", want, sizeof want);
        if (strlen(want) != 64)
            want[0] = '\0';
        from = "its build's record";
    }
    kf_err herr;
    if (want[0] && kf_build_artifact_hash(path, ext, NULL, 0, got, &herr) == KF_OK &&
        strcmp(got, want) == 0)
        return KF_OK;
    kf_warn("artifact.stale", "kernel=%s key=%s hash=%s recorded=%s from=\"%s\"",
            sp->kernel ? sp->kernel : "", key, got[0] ? got : "unreadable", want[0] ? want : "none",
            from);
    remove_artifact(workdir, key, path, ext);
    return kf_err_set(err, KF_EINVAL,
                      "the cached artifact of kernel %s changed since it was built (it hashes to "
                      "%.12s, %s says %.12s): removed and not run; it is built again",
                      sp->kernel ? sp->kernel : "?", got[0] ? got : "(unreadable)", from,
                      want[0] ? want : "(none)");
}

int kf_artifact_build(const Kfleet__TaskSpec *sp, const char *workdir, const char *scratch,
                      kf_build_info *bi, kf_err *err)
{
    char builder[128];
    kf_err why;
    if (sp->own_build && sp->kernel_hash &&
        kf_artifact_drop_installed(workdir, sp, builder, sizeof builder))
        kf_info("build.rebuild",
                "kernel=%s why=\"the cached artifact was installed from %s; this build compiles "
                "its own\"",
                sp->kernel ? sp->kernel : "", builder);
    if (sp->kernel_hash && kf_artifact_check(workdir, sp, NULL, &why) == KF_EINVAL)
        kf_info("build.rebuild", "kernel=%s why=\"%s\"", sp->kernel ? sp->kernel : "", why.msg);
    return kf_build_kernel(sp, workdir, scratch, bi, err);
}
