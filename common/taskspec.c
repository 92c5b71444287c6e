/* taskspec — see taskspec.h. */
#include "common/taskspec.h"

void kf_taskspec_problem(const Kfleet__TaskSpec *s, Kfleet__TaskSpec *out)
{
    *out = *s;
    out->kernel = s->problem_kernel;
    out->kernel_hash = s->problem_hash;
    out->artifact_hash = s->problem_artifact_hash;
    out->python = s->problem_python;
    out->device_cuda = s->problem_cuda;
    out->n_extension = 0;
    out->files = s->problem_files; /* its own files, beside its build */
    out->n_files = s->n_problem_files;
}
