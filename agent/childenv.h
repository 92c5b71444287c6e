/* childenv — a runner's environment, made before its fork; see
 * childenv.c. */
#ifndef KF_CHILDENV_H
#define KF_CHILDENV_H

#include "common/execenv.h"
#include "proto/kfleet.pb-c.h"

#include <stddef.h>
#include <stdint.h>

/* The CUDA_VISIBLE_DEVICES entry for the agent's GPU `index`: the agent
 * numbers the GPUs it sees, so when it was itself started with a subset
 * ("2,3"), its GPU 1 is the node's "3", not "1". */
void childenv_visible_device(uint32_t index, char *out, size_t len);

/* What of the agent a runner's environment takes. */
typedef struct kf_childenv {
    const char *compat_dir;        /* forward-compat libraries to load first, "" for none */
    const char *host_lock;         /* the machine's host-profile lock, "" for none */
    const Kfleet__AgentInfo *info; /* its GPUs' archs */
} kf_childenv;

/* `env` (a copy of the agent's, kf_execenv_new) made the environment of a
 * runner of GPU slot gpu_index (gpu 0: the CPU). */
void childenv_make(const kf_childenv *a, int gpu, uint32_t gpu_index, kf_execenv *env);

#endif
