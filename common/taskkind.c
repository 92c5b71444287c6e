/* taskkind — the table of task kinds; see taskkind.h. */
#include "common/taskkind.h"

#include <stddef.h>
#include <string.h>

#define BIT(k) (1u << (k))

/* The test tree adds a kind here, to prove that a kind is a row and its
 * runner handler (tests/kinds/; only the tests' own kfleet and
 * kfleet-agent are built with it). */
#ifdef KF_TASK_KINDS_EXTRA
#include KF_TASK_KINDS_EXTRA
#else
#define KF_TASK_KIND_EXTRA_ROWS
#endif

const kf_task_kind kf_task_kinds[] = {
    {.kind = KFLEET__TASK_KIND__BUILD,
     .name = "build",
     .slot = KF_SLOT_CPU,
     .sweep_bit = BIT(KFLEET__TASK_KIND__BUILD),
     .builds = 1,
     .report = KF_REPORT_BUILD},
    {.kind = KFLEET__TASK_KIND__VALIDATE,
     .name = "validate",
     .slot = KF_SLOT_GPU_IF_CUDA,
     .needs_build = 1,
     .per_config = 1,
     .sweep_bit = BIT(KFLEET__TASK_KIND__VALIDATE),
     .runs_kernel = 1,
     .served = 1,
     .needs_reference = 1,
     .report = KF_REPORT_VALIDATION},
    /* A profile's timings mean nothing for a kernel that computes the
     * wrong answer: it waits for its configuration's validation. */
    {.kind = KFLEET__TASK_KIND__PROFILE,
     .name = "profile",
     .slot = KF_SLOT_GPU_IF_CUDA,
     .needs_build = 1,
     .per_config = 1,
     .sweep_bit = BIT(KFLEET__TASK_KIND__PROFILE),
     .runs_kernel = 1,
     .served = 1,
     .needs_reference = 1,
     .gated_by = KFLEET__TASK_KIND__VALIDATE,
     .report = KF_REPORT_TIMING},
    {.kind = KFLEET__TASK_KIND__DOCTOR, .name = "doctor", .slot = KF_SLOT_GPU_IF_CUDA},
    /* A problem's reference outputs for its pool's seeds, per configuration,
     * on a runner that loads only the problem (docs/problems.md). Made by
     * the coordinator for the seeds the store lacks, never by `tasks:`. */
    {.kind = KFLEET__TASK_KIND__REFERENCE,
     .name = "reference",
     .slot = KF_SLOT_GPU_IF_CUDA,
     .needs_build = 1,
     .per_config = 1,
     .runs_kernel = 1,
     .references = 1},
    /* clang-format off */
    KF_TASK_KIND_EXTRA_ROWS
    /* clang-format on */
    {.name = NULL},
};

static const kf_task_kind unknown = {.name = "unknown"};

const kf_task_kind *kf_task_kind_of(int k)
{
    for (size_t i = 0; kf_task_kinds[i].name; i++)
        if ((int)kf_task_kinds[i].kind == k)
            return &kf_task_kinds[i];
    return NULL;
}

const kf_task_kind *kf_task_kind_at(int k)
{
    const kf_task_kind *t = kf_task_kind_of(k);
    return t ? t : &unknown;
}

const char *kf_task_kind_name(int k)
{
    return kf_task_kind_at(k)->name;
}

const kf_task_kind *kf_task_kind_named(const char *name)
{
    for (size_t i = 0; kf_task_kinds[i].name; i++)
        if (strcmp(kf_task_kinds[i].name, name) == 0)
            return &kf_task_kinds[i];
    return NULL;
}

unsigned kf_task_kind_sweep_all(void)
{
    unsigned all = 0;
    for (size_t i = 0; kf_task_kinds[i].name; i++)
        all |= kf_task_kinds[i].sweep_bit;
    return all;
}
