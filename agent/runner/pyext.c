/* pyext — see pyext.h. */
#include "runner/pyext.h"
#include "runner/proc.h"
#include "runner/pysrc.h"
#include "common/xalloc.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* How long an extension build may take: torch's headers make each unit
 * slow to compile (tens of seconds), but a build that hangs must end. */
#define PYEXT_LIMIT_S 1800.0

void kf_pyext_module(const Kfleet__TaskSpec *sp, char *out, size_t len)
{
    const char *first = sp->n_extension ? sp->extension[0] : "";
    const char *dot = strchr(first, '.');
    snprintf(out, len, "%.*s", (int)(dot ? (size_t)(dot - first) : strlen(first)), first);
}

int kf_pyext_build(const kf_pyenv *py, const Kfleet__TaskSpec *sp, const char *src_dir,
                   const char *out_dir, const char *arch, const char *nvcc, kf_buf *log,
                   int *rejected, kf_err *err)
{
    *rejected = 0;
    char module[256];
    kf_pyext_module(sp, module, sizeof module);
    /* Each file the extension names came with the kernel: the sources were
     * written by name, so a name not among them would compile nothing. */
    for (size_t i = 0; i < sp->n_extension; i++) {
        /* Names become compiler arguments: never an option. */
        if (!sp->extension[i][0] || sp->extension[i][0] == '-' || strchr(sp->extension[i], '/'))
            return kf_err_set(err, KF_EINVAL, "extension file name '%s' refused: plain names only",
                              sp->extension[i]);
        int found = 0;
        for (size_t s = 0; s < sp->n_sources && !found; s++)
            found = strcmp(sp->sources[s]->name, sp->extension[i]) == 0;
        if (!found)
            return kf_err_set(err, KF_EINVAL, "extension file %s did not come with the kernel",
                              sp->extension[i]);
    }
    const char *cxx = getenv("KF_CXX");
    if (!cxx || !*cxx)
        cxx = "c++";
    char **argv = kf_xcalloc(sp->n_extension + 10, sizeof *argv);
    size_t n = 0;
    argv[n++] = (char *)py->executable;
    argv[n++] = "-c";
    argv[n++] = (char *)kf_py_ext_src;
    argv[n++] = (char *)src_dir;
    argv[n++] = (char *)out_dir;
    argv[n++] = module;
    argv[n++] = (char *)arch;
    argv[n++] = (char *)nvcc;
    argv[n++] = (char *)cxx;
    for (size_t i = 0; i < sp->n_extension; i++)
        argv[n++] = sp->extension[i];
    argv[n] = NULL;
    int st = kf_proc_capture_limit(argv, log, 4u << 20, PYEXT_LIMIT_S);
    free(argv);
    if (st == -2)
        return kf_err_set(err, KF_EIO, "the torch extension build ran past %.0f s and was killed",
                          PYEXT_LIMIT_S);
    if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) == 127)
        return kf_err_set(err, KF_ENOTFOUND, "cannot run %s to build the torch extension",
                          py->executable);
    if (WEXITSTATUS(st) == 1) {
        *rejected = 1;
        return kf_err_set(err, KF_EINVAL, "the torch extension %s did not build", module);
    }
    if (WEXITSTATUS(st) != 0) {
        /* pyext.py's last line says why ("kfleet: ..."). */
        const char *why = log->data ? strstr(log->data, "kfleet: ") : NULL;
        return kf_err_set(err, KF_ENOTFOUND, "cannot build the torch extension %s here: %.600s",
                          module, why ? why + 8 : "(no reason printed)");
    }
    return KF_OK;
}

static const char *str_of(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

int kf_pyext_describe(const char *dir, char *line, size_t len, char *so, size_t solen, kf_err *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/record.json", dir);
    json_error_t je;
    json_t *o = json_load_file(path, 0, &je);
    if (!json_is_object(o) || !*str_of(o, "so") || strchr(str_of(o, "so"), '/')) {
        json_decref(o);
        return kf_err_set(err, KF_EIO, "the torch extension's record %s is missing or damaged",
                          path);
    }
    const char *nvcc = strstr(str_of(o, "nvcc"), "release ");
    char arch[40];
    snprintf(arch, sizeof arch, "%s%s", strcmp(str_of(o, "arch"), "native") ? "sm_" : "",
             str_of(o, "arch"));
    snprintf(line, len, "%s: torch %s, CUDA %s, C++11 ABI %lld, %s%s%.*s", str_of(o, "module"),
             str_of(o, "torch"), *str_of(o, "torch_cuda") ? str_of(o, "torch_cuda") : "none",
             (long long)json_integer_value(json_object_get(o, "cxx11_abi")), arch,
             nvcc ? ", nvcc " : "", nvcc ? (int)strcspn(nvcc + 8, ",") : 0, nvcc ? nvcc + 8 : "");
    snprintf(so, solen, "%s/%s", dir, str_of(o, "so"));
    json_decref(o);
    return KF_OK;
}
