/* inventory — what this node is: CPU, memory, free disk of the work dir,
 * the GPUs as libcuda and NVML see them (both dlopen'd; no CUDA toolkit
 * library is linked), the driver and CUDA driver versions, nvcc's version.
 *
 * With no libcuda (or cuInit failing) the node simply has no GPUs; that is
 * not an error. */
#ifndef KF_INVENTORY_H
#define KF_INVENTORY_H

#include "err.h"
#include "kfleet.pb-c.h"

/* Fills a heap-allocated AgentInfo (free with kf_inventory_free). agent_id
 * and workdir are copied in. */
int kf_inventory_collect(const char *agent_id, const char *workdir, Kfleet__AgentInfo **out,
                         kf_err *err);
void kf_inventory_free(Kfleet__AgentInfo **info);

/* The first line of `nvcc --version`'s "release" line ("13.0, V13.0.88"),
 * or "" when nvcc is not found (PATH, then /usr/local/cuda/bin). */
int kf_inventory_nvcc_version(char *out, size_t len);
/* `cc --version`'s first line, or "". */
int kf_inventory_cc_version(char *out, size_t len);

#endif
