/* inventory — what this node is: CPU, memory, free disk of the work dir,
 * the GPUs as libcuda and NVML see them (both dlopen'd; no CUDA toolkit
 * library is linked), the driver and CUDA driver versions, nvcc's version.
 *
 * With no libcuda (or cuInit failing) the node simply has no GPUs; that is
 * not an error. Every probe is best-effort: one that fails leaves its field
 * empty ("" or 0) and the collection goes on. KF_FAKE_NO_GPU=1 in the
 * environment skips the GPU probes (tests on GPU machines). */
#ifndef KF_INVENTORY_H
#define KF_INVENTORY_H

#include "common/err.h"
#include "proto/kfleet.pb-c.h"

#include <stddef.h>

/* Fills a heap-allocated AgentInfo (free with kf_inventory_free). agent_id
 * and workdir are copied in. gpu_slots is the number of GPUs found and
 * cpu_slots is 1; the caller may change either, and may set labels.
 *
 * Ownership: every string (including labels[] and the labels array) and
 * every GpuInfo is a separate malloc'd block that kf_inventory_free frees.
 * A caller that replaces a string field or adds labels must use malloc'd
 * memory too (never protobuf_c_empty_string or a literal).
 *
 * Returns 0, KF_EINVAL (NULL agent_id, workdir or out) or KF_ENOMEM, with
 * err filled; *out is NULL on failure. */
int kf_inventory_collect(const char *agent_id, const char *workdir, Kfleet__AgentInfo **out,
                         kf_err *err);
/* Frees what kf_inventory_collect built and sets *info to NULL. NULL and
 * *info == NULL are fine. Not for messages from protobuf-c's unpack: those
 * go to kfleet__agent_info__free_unpacked. */
void kf_inventory_free(Kfleet__AgentInfo **info);

/* The first line of `nvcc --version`'s "release" line ("13.0, V13.0.88"),
 * or "" when nvcc is not found (PATH, then /usr/local/cuda/bin). Returns 0,
 * or KF_ENOTFOUND (out = "") when there is no nvcc or it says no release. */
int kf_inventory_nvcc_version(char *out, size_t len);
/* `cc --version`'s first line, or "". Returns 0 or KF_ENOTFOUND (out = ""). */
int kf_inventory_cc_version(char *out, size_t len);

/* Parses `nvcc --version` output: copies what follows "release " on its
 * line ("13.0, V13.0.88") into out (truncated to len-1). Returns 0, or
 * KF_ENOTFOUND with out = "" when no such line exists. Split out so tests
 * can feed it canned text. */
int kf_inventory_parse_nvcc(const char *text, char *out, size_t len);

#endif
