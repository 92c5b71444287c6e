/* taskkind — the one table of task kinds: what each is called, which slot
 * it takes, whether it needs its kernel built on the agent first, and which
 * sweep `tasks:` flag asks for it. The scheduler, the client that expands a
 * sweep into tasks, the report and the runner walk it; a new kind is a row
 * here (and its handling in the runner). */
#ifndef KF_TASKKIND_H
#define KF_TASKKIND_H

#include "proto/kfleet.pb-c.h"

typedef enum {
    KF_SLOT_CPU = 0,        /* always a CPU slot (a build runs the compiler) */
    KF_SLOT_GPU_IF_CUDA = 1 /* a GPU slot for a CUDA kernel, else a CPU slot */
} kf_slot_kind;

typedef struct kf_task_kind {
    Kfleet__TaskKind kind;
    const char *name; /* "build", as in reports and the JSON */
    kf_slot_kind slot;
    int needs_build;    /* runs only on an agent holding the kernel's build */
    int per_config;     /* one task per configuration (else one per kernel) */
    unsigned sweep_bit; /* the bit of a sweep's `tasks:` that asks for it; 0: none */
} kf_task_kind;

/* The row of kind k, or NULL for a kind this kfleet does not know. */
const kf_task_kind *kf_task_kind_of(int k);
/* The rows in the order a sweep's tasks are made; NULL-terminated. */
extern const kf_task_kind *const kf_task_kinds[];
/* kf_task_kind_of(k)->name, or "unknown". */
const char *kf_task_kind_name(int k);

#endif
