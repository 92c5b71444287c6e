/* pyext — a Python kernel's torch C++/CUDA extension: built by the build
 * task into the artifact cache beside the kernel's .py, described for the
 * build record, and found by the runner that loads the kernel.
 *
 * The extension's sources travel with the kernel (TaskSpec.extension names
 * them; the first's stem is the module, TORCH_EXTENSION_NAME). pyext.py
 * compiles them in the node's Python with its torch, into a directory
 * holding MODULE<EXT_SUFFIX> and record.json: the torch version, torch's
 * CUDA, the C++11 ABI flag, the GPU arch and nvcc it was built for. The
 * cache key of such a kernel covers the torch version and CUDA (the
 * interpreter identity), nvcc and the arch (build.c), so a torch upgrade
 * builds anew; the runner's glue checks the record against the torch it
 * imports before loading, so an extension built for another torch is
 * never loaded. */
#ifndef KF_PYEXT_H
#define KF_PYEXT_H

#include "common/buf.h"
#include "common/err.h"
#include "proto/kfleet.pb-c.h"
#include "runner/pyenv.h"

#include <stddef.h>

/* The module an extension builds: its first source's stem. */
void kf_pyext_module(const Kfleet__TaskSpec *sp, char *out, size_t len);

/* Builds sp's extension from the sources in src_dir into out_dir (created)
 * with the interpreter py, nvcc and the host C++ compiler ($KF_CXX, else
 * c++), for arch ("90a", or "native"). What the build printed is appended
 * to log. Returns 0; KF_EINVAL when a compiler refused the sources
 * (*rejected = 1, log says why); KF_ENOTFOUND when the node cannot build it
 * (no torch, nvcc of another CUDA major than torch's); KF_EIO otherwise. */
int kf_pyext_build(const kf_pyenv *py, const Kfleet__TaskSpec *sp, const char *src_dir,
                   const char *out_dir, const char *arch, const char *nvcc, kf_buf *log,
                   int *rejected, kf_err *err);

/* Reads dir/record.json: a line for the build record ("mod: torch
 * 2.11.0+cu130, CUDA 13.0, C++11 ABI 1, sm_90a, nvcc 13.0") and the path of
 * the built module. Returns 0, or KF_EIO (err says what is wrong). */
int kf_pyext_describe(const char *dir, char *line, size_t len, char *so, size_t solen, kf_err *err);

#endif
