/* build — compiles a kernel's sources into a shared object in the agent's
 * artifact cache, for the harness's BUILD task (see harness.h for the
 * cache layout under the work dir).
 *
 * The artifact is named by a key that covers everything that changes the
 * machine code: the coordinator's hash of the sources and flags, the
 * compiler's identity line, the machine (uname) and, for CUDA, the target
 * arch. So a second sweep recompiles nothing, while a new compiler or a
 * changed header does. Host kernels are built with $KF_CC (else cc), CUDA
 * kernels with $KF_NVCC (else nvcc, then /usr/local/cuda/bin/nvcc).
 *
 * A kernel source may carry its own compiler arguments on lines of the form
 *     //@kfleet flags: -lcublas -DTILE=128
 * (split on blanks, no shell): they go after the sweep's flags. CUDA
 * artifacts get an rpath to the toolkit's lib64, so a kernel that links a
 * toolkit library (cuBLAS) loads in the runner with no LD_LIBRARY_PATH.
 *
 * Before compiling CUDA, the CUDA version nvcc builds for is compared with
 * the newest one the driver runs (cuDriverGetVersion): an nvcc newer than
 * the driver would build code that fails at its first launch
 * (cudaErrorInsufficientDriver), so the build fails first, naming both. */
#ifndef KF_BUILD_H
#define KF_BUILD_H

#include "common/buf.h"
#include "common/err.h"
#include "runner/build_sass.h"
#include "proto/kfleet.pb-c.h"

#include <stddef.h>
#include <stdio.h>

/* What a kernel is written in: which compiler (or interpreter) builds it,
 * and what its artifact is (a shared object, or the checked Python source). */
enum { KF_LANG_C = 0, KF_LANG_CUDA = 1, KF_LANG_PYTHON = 2, KF_LANG_TORCH_EXT = 3 };

/* KF_LANG_TORCH_EXT: a Python kernel with a torch extension (pyext.h),
 * whose artifact is the checked .py and the built extension beside it. */
static inline int kf_build_lang(const Kfleet__TaskSpec *sp)
{
    if (sp->python)
        return sp->n_extension ? KF_LANG_TORCH_EXT : KF_LANG_PYTHON;
    return sp->device_cuda ? KF_LANG_CUDA : KF_LANG_C;
}

static inline int kf_build_is_python(int lang)
{
    return lang == KF_LANG_PYTHON || lang == KF_LANG_TORCH_EXT;
}

/* Free space a build needs in the work dir (compiler temporaries + .so). */
#define KF_BUILD_MIN_FREE (256ull << 20)

typedef struct kf_build_info {
    char key[65];           /* cache key, 64 hex chars */
    char artifact_hash[65]; /* BLAKE2b of the .so */
    int cached;             /* 1: the artifact was already there */
    double compile_s;
    char compiler[512]; /* the compiler's identity line */
    /* Everything the compiler printed (KF_BUF_INIT'd by kf_build_kernel;
     * release with kf_build_info_release). */
    kf_buf log;
    /* 1: the compiler ran and rejected the sources; `log` says why. */
    int rejected;
    int registers, shared_bytes, stack_bytes, spill_bytes; /* CUDA, from ptxas -v */
    /* CUDA: the machine code the artifact holds ("sm_90a"), whether it
     * carries PTX, and whether this node's GPU would have to JIT that PTX
     * because no machine code matches it (a slow first launch, and code
     * that is not what was tuned). */
    char sass_archs[128];
    int has_ptx, jit_fallback;
    char nvcc_cuda[16];        /* CUDA version nvcc builds for, "13.0" */
    char driver_cuda[16];      /* newest CUDA the node's driver runs, "13.0" */
    char forward_compat[4096]; /* forward-compat libraries runners load, "" when none */
    char torch_ext[512];       /* KF_LANG_TORCH_EXT: kf_pyext_describe's line */
    /* Installed from another agent's build (TaskSpec.artifact): its id. */
    char built_by[256];
    /* The artifact's bytes when the task asked for them (want_artifact) and
     * it is one file of at most KF_MAX_SHARED_ARTIFACT; else empty. */
    kf_buf artifact;
} kf_build_info;

/* The identity line of the host (KF_LANG_C) or CUDA compiler: the first
 * line of `cc --version`, the "release" line of `nvcc --version` (its first
 * line is the same for every version); for KF_LANG_PYTHON the interpreter's
 * (pyenv.h). Memoized per process and compiler path.
 * *out points into that memo. Returns 0, or KF_ENOTFOUND (err filled) when
 * the compiler does not run. */
int kf_build_compiler_version(int lang, const char **out, kf_err *err);

/* The directory (…/cuda-13.0) and CUDA release ("13.0") of the nvcc that
 * builds (KF_NVCC, PATH, then the default install). KF_ENOTFOUND without one. */
int kf_build_toolkit(char *dir, size_t dlen, char *cuda, size_t clen);

/* The cache key of a kernel on this node (64 hex chars + NUL). Returns 0,
 * or KF_ENOTFOUND (err filled) when the compiler does not run. */
int kf_build_cache_key(const char *kernel_hash, int lang, char out[65], kf_err *err);

/* The arch name a GPU of compute capability major.minor is built for ("90a"
 * on Hopper, where wgmma needs the arch-specific target; else "86"). The
 * agent passes it to its runners as KF_CUDA_ARCH, so that no runner starts
 * the CUDA driver (and its threads) before its sandbox. */
static inline void kf_build_arch_name(int major, int minor, char *out, size_t len)
{
    snprintf(out, len, "%d%d%s", major, minor, major == 9 ? "a" : "");
}

/* The key and the artifact path (workdir/cache/<key>.so, .py for Python) of
 * a kernel. */
int kf_build_artifact(const char *workdir, const char *kernel_hash, int lang, char key[65],
                      char *path, size_t len, kf_err *err);

/* The directory of a KF_LANG_TORCH_EXT artifact's extension: the artifact
 * path (cache/<key>.py) with .ext for .py. */
void kf_build_ext_dir(const char *artifact, char *out, size_t len);

/* Builds spec's kernel: if workdir/cache/<key>.so exists, only hashes it
 * (out->cached = 1); else writes the sources into `scratch` (created 0700),
 * compiles there and renames the .so into the cache, with a .json sidecar
 * (kernel, flags, compiler, artifact hash) written first. A C or CUDA
 * build that brings another agent's artifact (spec->artifact) installs it
 * instead of compiling, if it matches spec->artifact_hash (else it
 * compiles). With spec->want_artifact, out->artifact gets the .so's bytes
 * (one file up to KF_MAX_SHARED_ARTIFACT; not an installed one). Returns 0, or a
 * KF_E* code with err filled: KF_EINVAL "compile failed..." (out->rejected
 * set when the compiler's output in out->log says why), KF_EFULL when the
 * work dir has less than KF_BUILD_MIN_FREE free, KF_EIO for OS failures.
 * out->log is filled in either case; the caller releases it. */
int kf_build_kernel(const Kfleet__TaskSpec *spec, const char *workdir, const char *scratch,
                    kf_build_info *out, kf_err *err);

/* Frees what kf_build_kernel allocated in bi (its log, the artifact). */
void kf_build_info_release(kf_build_info *bi);

/* The `//@kfleet flags:` arguments of a source text, appended to *argv
 * (grown with realloc; *argc updated; the strings are malloc'd). Returns 0,
 * KF_ENOMEM, or KF_EINVAL (err filled, with the line) when there are more
 * than 64. */
int kf_build_source_flags(const char *text, size_t len, char ***argv, size_t *argc, kf_err *err);

/* BLAKE2b of a file's content as 64 hex chars. Returns 0 or KF_EIO. */
int kf_build_file_hash(const char *path, char out[65]);

/* The artifact's hash as a build records it: of the file, or for a torch
 * extension of the .py and the extension's module together (its record's
 * line into `line` when line is not NULL). ext_dir "" or NULL: no
 * extension. Returns 0, or KF_EIO with err saying what cannot be read. */
int kf_build_artifact_hash(const char *path, const char *ext_dir, char *line, size_t linelen,
                           char out[65], kf_err *err);

#endif
