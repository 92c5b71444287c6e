/* taskkind — the one table of task kinds. A row says what a kind is
 * called, which slot it takes, what it needs (its kernel's build on the
 * agent, the problem's reference, another kind's task of its
 * configuration: gated_by), whether it runs the kernel, whether a sweep's
 * `tasks:` may ask for it and how the report shows it. The sweep parser,
 * the client that expands a sweep into tasks, the control socket, the
 * scheduler, the runner and the report read these fields and never test a
 * kind by its enum value (tests/layout/check_layout.py keeps it so); a new
 * kind is a row here plus its handler in agent/runner/harness.c's table. */
#ifndef KF_TASKKIND_H
#define KF_TASKKIND_H

#include "proto/kfleet.pb-c.h"

typedef enum {
    KF_SLOT_CPU = 0,        /* always a CPU slot (a build runs the compiler) */
    KF_SLOT_GPU_IF_CUDA = 1 /* a GPU slot for a CUDA kernel, else a CPU slot */
} kf_slot_kind;

/* Where the report puts a kind's tasks. */
typedef enum {
    KF_REPORT_NONE = 0,       /* in the failures only */
    KF_REPORT_BUILD = 1,      /* the builds table */
    KF_REPORT_VALIDATION = 2, /* a row's validation column */
    KF_REPORT_TIMING = 3      /* a row's timings, from the samples it stored */
} kf_report_as;

typedef struct kf_task_kind {
    Kfleet__TaskKind kind;
    const char *name; /* "build", as in reports and the JSON */
    kf_slot_kind slot;
    int needs_build;    /* runs only on an agent holding the kernel's build */
    int per_config;     /* one task per configuration (else one per kernel) */
    unsigned sweep_bit; /* 1u << kind when a sweep's `tasks:` may ask for it; 0: never */
    int builds;      /* builds the kernel: a sweep counts its builds, a pinned one is its agent's */
    int runs_kernel; /* loads and runs the kernel in a sandboxed runner */
    int served;      /* a serving runner that keeps its kernel loaded may take it */
    int references;  /* computes a problem's reference, which candidates' tasks wait for */
    int needs_reference;       /* a candidate's task of this kind waits for the reference */
    Kfleet__TaskKind gated_by; /* waits for the task of this kind of its kernel, configuration
                                * and agent pin to succeed; 0: nothing */
    kf_report_as report;
} kf_task_kind;

/* The row of kind k, or NULL for a kind this kfleet does not know. */
const kf_task_kind *kf_task_kind_of(int k);
/* The row of kind k; for a kind this kfleet does not know, a row named
 * "unknown" that needs, gates and reports nothing. Never NULL. */
const kf_task_kind *kf_task_kind_at(int k);
/* The rows, in the order a sweep's tasks are made; the last has a NULL
 * name. */
extern const kf_task_kind kf_task_kinds[];
/* kf_task_kind_of(k)->name, or "unknown". */
const char *kf_task_kind_name(int k);
/* The kind named `name` ("profile"), or NULL. */
const kf_task_kind *kf_task_kind_named(const char *name);
/* The sweep_bit of every kind a sweep's `tasks:` may ask for: what a sweep
 * without `tasks:` runs. */
unsigned kf_task_kind_sweep_all(void);

#endif
