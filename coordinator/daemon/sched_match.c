/* sched_match — which agents can run which kernel, beyond slots: a Python
 * kernel needs an interpreter on the node with every package it imports
 * (numpy, torch, triton, cupy, read from its source at submit), so that
 * its tasks never go to a node where they can only fail, and a sweep that
 * no agent can run says so instead of waiting. A CUDA kernel likewise
 * skips an agent whose toolkit is newer than its driver with no
 * forward-compatibility libraries to bridge them (its cuda_compat_error),
 * and a GPU kernel importing torch skips a GPU node whose torch sees none. */
#include "daemon/coord_int.h"

#include <stdio.h>
#include <string.h>

/* The version of package `name` in py, "" when absent. */
static const char *package_version(const Kfleet__PythonFacts *py, const char *name)
{
    const char *v = strcmp(name, "numpy") == 0    ? py->numpy
                    : strcmp(name, "torch") == 0  ? py->torch
                    : strcmp(name, "triton") == 0 ? py->triton
                    : strcmp(name, "cupy") == 0   ? py->cupy
                                                  : NULL;
    return v ? v : "";
}

int sched_can_run(const kagent *a, const Kfleet__KernelRef *k, char *why, size_t why_len)
{
    const char *cuda_err = a->info ? a->info->cuda_compat_error : NULL;
    if (k->cuda && !k->python && cuda_err && cuda_err[0]) { /* torch brings its own runtime */
        if (why)
            snprintf(why, why_len, "%s: %s", a->id, cuda_err);
        return 0;
    }
    if (!k->python)
        return 1;
    const Kfleet__PythonFacts *py = a->info ? a->info->python : NULL;
    if (!py || !py->version || !py->version[0]) {
        if (why)
            snprintf(why, why_len, "%s: %s", a->id,
                     py && py->error && py->error[0] ? py->error : "no Python interpreter");
        return 0;
    }
    for (size_t i = 0; i < k->n_needs; i++) {
        /* A GPU kernel using torch on a GPU node whose torch sees no GPU
         * (a CPU-only wheel, a CUDA the driver does not run). */
        if (package_version(py, k->needs[i])[0] && strcmp(k->needs[i], "torch") == 0 && k->cuda &&
            a->info->n_gpus > 0 && py->torch_gpus == 0) {
            if (why)
                snprintf(why, why_len, "%s: %s", a->id,
                         py->torch_note && py->torch_note[0] ? py->torch_note
                                                             : "torch sees no GPU");
            return 0;
        }
        if (package_version(py, k->needs[i])[0])
            continue;
        if (why) {
            int n = snprintf(why, why_len, "%s: Python %s (%s) has no %s; has", a->id, py->version,
                             py->executable ? py->executable : "?", k->needs[i]);
            const char *pk[] = {"numpy", "torch", "triton", "cupy"};
            int any = 0;
            for (size_t j = 0; j < sizeof pk / sizeof *pk && n > 0 && (size_t)n < why_len; j++) {
                const char *v = package_version(py, pk[j]);
                if (v[0]) {
                    n += snprintf(why + n, why_len - (size_t)n, "%s %s %s", any ? "," : "", pk[j],
                                  v);
                    any = 1;
                }
            }
            if (!any && n > 0 && (size_t)n < why_len)
                snprintf(why + n, why_len - (size_t)n, " none of numpy, torch, triton, cupy");
        }
        return 0;
    }
    return 1;
}

int sched_kernel_unrunnable(const kf_coord *c, const Kfleet__KernelRef *k, kagent *const *only,
                            size_t nonly, char *why, size_t why_len)
{
    char one[600] = "";
    size_t up = 0, able = 0, shown = 0;
    int n = 0;
    size_t count = only ? nonly : c->nagents;
    for (size_t i = 0; i < count; i++) {
        const kagent *a = only ? only[i] : c->agents[i];
        if (!a->registered || a->lost || a->revoked)
            continue;
        up++;
        if (sched_can_run(a, k, one, sizeof one)) {
            able++;
            continue;
        }
        if (only || shown < 3) { /* the agents that lack it, the first few */
            /* In a problem sweep, the words of problems and candidates. */
            const char *role = k->candidate ? "candidate" : k->problem ? "problem" : "kernel";
            if (n == 0 && !k->python)
                n = snprintf(why, why_len, "%s '%s' is a CUDA %s that %s", role, k->name, role,
                             only ? "an agent of `nodes: all` cannot run:" : "no agent can run:");
            else if (n == 0)
                n = snprintf(why, why_len, "%s '%s' is a Python %s%s%s%s that %s", role, k->name,
                             role, k->n_needs ? " importing " : "", k->n_needs ? k->needs[0] : "",
                             k->n_needs > 1 ? " (and more)" : "",
                             only ? "an agent of `nodes: all` cannot run:" : "no agent can run:");
            if (n > 0 && (size_t)n < why_len)
                n += snprintf(why + n, why_len - (size_t)n, " [%s]", one);
            shown++;
        }
        if (only)
            break;
    }
    if (up == 0 || (only ? able == up : able > 0))
        return 0;
    if (n > 0 && (size_t)n < why_len && !k->python)
        snprintf(why + n, why_len - (size_t)n,
                 ". Fix the toolkit or driver as said, or launch an "
                 "agent on a node whose driver runs its CUDA");
    else if (n > 0 && (size_t)n < why_len)
        snprintf(why + n, why_len - (size_t)n,
                 ". Install what it imports in that Python (pip install ...), point KF_PYTHON "
                 "at an interpreter that has it before starting the agent, or launch an agent "
                 "on a node that has it. A running agent reads its Python once, when it "
                 "starts: restart it after installing");
    return 1;
}
