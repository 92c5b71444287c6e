/* pyenv — the node's Python, as a Python kernel needs it: which interpreter
 * ($KF_PYTHON, else python3 on PATH), its version, prefix and module path,
 * the shared libpython the runner embeds, and the versions of numpy, torch
 * (with its CUDA) and triton. Read by running pyprobe.py in that
 * interpreter (no package imported: tens of milliseconds), once per
 * process and interpreter path, as kf_build_compiler_version memoizes a
 * compiler's version line. */
#ifndef KF_PYENV_H
#define KF_PYENV_H

#include "common/buf.h"
#include "common/err.h"
#include "common/execenv.h"

#include <limits.h>

typedef struct kf_pyenv {
    char interpreter[PATH_MAX]; /* as asked for: $KF_PYTHON or "python3" */
    char executable[PATH_MAX];  /* sys.executable */
    char version[32];           /* "3.11.2" */
    char base_prefix[PATH_MAX];
    char base_exec_prefix[PATH_MAX];
    char libpython[PATH_MAX]; /* "" when the interpreter has no shared library */
    char *path_json;          /* sys.path as a JSON list (also a Python literal) */
    char numpy[32], torch[64], torch_cuda[16], triton[32], cupy[32]; /* "" when absent */
    char torch_abi[4]; /* torch's _GLIBCXX_USE_CXX11_ABI ("1", "0"), from its CMake package */
    /* What the cache key covers: "Python 3.11.2 /usr/bin/python3 numpy
     * 1.24.2 torch - triton -" (with torch: its version, CUDA and C++11
     * ABI): a new interpreter or package rebuilds. */
    char identity[512];
} kf_pyenv;

/* The node's Python, probed on first use. *out points into a per-process
 * memo. Returns 0, or KF_ENOTFOUND with err saying what is missing and what
 * to install or set. */
int kf_pyenv_get(const kf_pyenv **out, kf_err *err);

/* What this process probed (when it did, for the interpreter the runner
 * will ask for) goes into `env`, a runner's environment made before its
 * fork, and the runner's kf_pyenv_get reads it there instead of starting
 * the interpreter again; else the variables are removed. The agent probes
 * at its start, so a runner sees the Python the agent registered with. */
void kf_pyenv_export(kf_execenv *env);

/* Checks that a kernel's source compiles in that interpreter (a syntax
 * error comes back in `log` with the user's file name and line). Returns 0,
 * KF_EINVAL (log says why) or KF_ENOTFOUND. */
int kf_pyenv_compile(const kf_pyenv *py, const char *path, const char *filename, kf_buf *log,
                     kf_err *err);

#endif
