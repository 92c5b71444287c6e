/* artifact — what runs is what the record says (issue 31, item 2): a cached
 * artifact (a C or CUDA .so, a Python kernel's .py, a .py with its torch
 * extension) is hashed again before it is loaded, or before a build takes
 * it from the cache, and compared with the hash its build recorded: the
 * coordinator's record of this agent's build when the task carries it
 * (TaskSpec.artifact_hash on a validate or profile), else the build's
 * sidecar (cache/KEY.json, written by the build runner, which no kernel's
 * sandbox can write). An artifact that does not match, or has no record,
 * is removed with its extension and sidecar, logged, and never run: the
 * build compiles it again. */
#ifndef KF_ARTIFACT_H
#define KF_ARTIFACT_H

#include "common/err.h"
#include "proto/kfleet.pb-c.h"

struct kf_build_info;

#include <stddef.h>

/* Checks sp's cached artifact in workdir against `expected` (NULL or "":
 * its sidecar's record). Returns 0 when it matches; KF_ENOTFOUND when
 * there is no artifact; KF_EINVAL when it does not match or has no record,
 * after removing it (err says what was found and what was recorded);
 * another code when the key cannot be computed. */
int kf_artifact_check(const char *workdir, const Kfleet__TaskSpec *sp, const char *expected,
                      kf_err *err);

/* For a build with TaskSpec.own_build: a cached artifact installed from
 * another agent (its sidecar names a builder) is removed, so the build
 * compiles this agent's own. Returns 1 when one was removed (*builder
 * gets who had built it), else 0. */
int kf_artifact_drop_installed(const char *workdir, const Kfleet__TaskSpec *sp, char *builder,
                               size_t len);

/* Builds sp as kf_build_kernel does, after the cache is made fit for it:
 * with sp->own_build an artifact installed from another agent is removed
 * (kf_artifact_drop_installed), and a cached artifact that is not what its
 * build recorded is removed (kf_artifact_check); either way the build then
 * compiles, and says why in the log. */
int kf_artifact_build(const Kfleet__TaskSpec *sp, const char *workdir, const char *scratch,
                      struct kf_build_info *bi, kf_err *err);

#endif
