/* taskkind — the table of task kinds; see taskkind.h. */
#include "common/taskkind.h"

#include <stddef.h>

/* The sweep's `tasks:` bits are core/sweep.h's KF_TASK_BUILD (1 << 1),
 * KF_TASK_VALIDATE (1 << 2) and KF_TASK_PROFILE (1 << 3); common/ cannot
 * include core/, so they are repeated here, and tests/unit/test_sweep.c
 * checks the two agree. */
static const kf_task_kind rows[] = {
    {KFLEET__TASK_KIND__BUILD, "build", KF_SLOT_CPU, 0, 0, 1u << 1},
    {KFLEET__TASK_KIND__VALIDATE, "validate", KF_SLOT_GPU_IF_CUDA, 1, 1, 1u << 2},
    {KFLEET__TASK_KIND__PROFILE, "profile", KF_SLOT_GPU_IF_CUDA, 1, 1, 1u << 3},
    {KFLEET__TASK_KIND__DOCTOR, "doctor", KF_SLOT_GPU_IF_CUDA, 0, 0, 0},
    /* A problem's reference outputs for its pool's seeds, per configuration,
     * on a runner that loads only the problem (docs/problems.md). Made by
     * the coordinator for the seeds the store lacks, never by `tasks:`. */
    {KFLEET__TASK_KIND__REFERENCE, "reference", KF_SLOT_GPU_IF_CUDA, 1, 1, 0},
};

const kf_task_kind *const kf_task_kinds[] = {&rows[0], &rows[1], &rows[2],
                                             &rows[3], &rows[4], NULL};

const kf_task_kind *kf_task_kind_of(int k)
{
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        if ((int)rows[i].kind == k)
            return &rows[i];
    return NULL;
}

const char *kf_task_kind_name(int k)
{
    const kf_task_kind *t = kf_task_kind_of(k);
    return t ? t->name : "unknown";
}
