/* pyfiles — a Python kernel's own files on the node (`files = [...]` in the
 * kernel, docs/python-kernels.md): the modules it imports and the data it
 * reads, shipped with it and kept beside its cached artifact in
 * cache/<key>.files/, which the runner puts first on sys.path. They are in
 * the kernel's hash (the client hashes every source), so the directory is
 * as much the build's as the .py is. */
#ifndef KF_PYFILES_H
#define KF_PYFILES_H

#include "common/err.h"
#include "proto/kfleet.pb-c.h"

#include <stddef.h>

/* The directory of the files of the Python artifact cache/<key>.py:
 * cache/<key>.files. */
void kf_pyfiles_dir(const char *artifact, char *out, size_t len);

/* 1 when every file sp names is in the artifact's directory (or it names
 * none): a cached .py without them builds anew. */
int kf_pyfiles_present(const Kfleet__TaskSpec *sp, const char *artifact);

/* Moves the files sp names from `scratch` (where the build wrote every
 * source) into the artifact's directory, replacing one left by an earlier
 * build (moved aside into scratch, which the agent removes). Call before
 * the .py is moved into the cache, so that a reader that sees the .py
 * finds its files. 0 or KF_EINVAL (a name that is not a plain file name,
 * or not among the sources) / KF_EIO, with what and where. */
int kf_pyfiles_install(const Kfleet__TaskSpec *sp, const char *scratch, const char *artifact,
                       kf_err *err);

#endif
