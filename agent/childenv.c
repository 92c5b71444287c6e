/* childenv — the environment of a process the agent is about to fork and
 * exec as a runner (or a warm runner, warms.h), made before the fork
 * (common/execenv.h says why): the sandbox's
 * scrub, the GPU it may see, the forward-compatibility libraries, the
 * arch its cache key needs, the node's Python as probed, the machine's
 * host-profile lock. */
#include "agent/childenv.h"

#include "runner/build.h"
#include "runner/pyenv.h"
#include "runner/sandbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The CUDA_VISIBLE_DEVICES entry for the agent's GPU `index`: the agent
 * numbers the GPUs it sees, so when it was itself started with a subset
 * ("2,3"), its GPU 1 is the node's "3", not "1". */
void childenv_visible_device(uint32_t index, char *out, size_t len)
{
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    snprintf(out, len, "%u", index);
    if (!vis || !*vis)
        return;
    const char *p = vis;
    for (uint32_t i = 0; i < index && p; i++) {
        p = strchr(p, ',');
        if (p)
            p++;
    }
    if (p && *p)
        snprintf(out, len, "%.*s", (int)strcspn(p, ","), p);
}

/* A host runner's allocations under 32 MiB come from its heap and stay
 * there when freed (glibc's mmap and trim thresholds fixed): a host kernel
 * that makes temporaries, numpy's `x * x` of a megabyte say, otherwise
 * maps and faults in fresh pages per call or not, by the heap's history in
 * that process (glibc moves its thresholds as blocks are freed), and the
 * same code measured 0.7 ms in one run and 1.1 ms in the next on two local
 * agents (rmsnorm-cpu's numpy_naive, 256 x 1024; 0.55-0.65 ms with the
 * thresholds fixed). The kernel is timed in the steady state of a process
 * that has allocated before. Only the CPU's runners: a GPU runner's host
 * side is the launch's. */
static void childenv_host_malloc(kf_execenv *env)
{
    static const char mine[] = "glibc.malloc.mmap_threshold=33554432:"
                               "glibc.malloc.trim_threshold=1073741824";
    const char *old = kf_execenv_get(env, "GLIBC_TUNABLES");
    char v[2048];
    snprintf(v, sizeof v, "%s%s%s", old && *old ? old : "", old && *old ? ":" : "", mine);
    kf_execenv_set(env, "GLIBC_TUNABLES", v);
}

void childenv_make(const kf_childenv *a, int gpu, uint32_t gpu_index, kf_execenv *env)
{
    if (kf_sandbox_enabled())
        kf_sandbox_scrub_env(env);
    /* In a sanitizer build, let a kernel's fault kill the runner by its
     * signal (what the task reports) instead of ASan's own exit. */
    const char *asan = kf_execenv_get(env, "ASAN_OPTIONS");
    if (asan) {
        char opts[1024];
        snprintf(opts, sizeof opts, "%s:handle_segv=0:handle_sigbus=0:handle_sigfpe=0", asan);
        kf_execenv_set(env, "ASAN_OPTIONS", opts);
    }
    if (a->compat_dir && a->compat_dir[0]) {
        /* The toolkit's libcuda before the system's (runner/compat.h). */
        const char *old = kf_execenv_get(env, "LD_LIBRARY_PATH");
        char libpath[8192];
        snprintf(libpath, sizeof libpath, "%s%s%s", a->compat_dir, old && *old ? ":" : "",
                 old ? old : "");
        kf_execenv_set(env, "LD_LIBRARY_PATH", libpath);
        kf_execenv_set(env, "KF_CUDA_COMPAT_DIR", a->compat_dir);
    }
    if (gpu) {
        char dev[128];
        childenv_visible_device(gpu_index, dev, sizeof dev);
        kf_execenv_set(env, "CUDA_VISIBLE_DEVICES", dev);
    } else {
        childenv_host_malloc(env);
    }
    /* The node's Python as the agent probed it (runner/pyenv.h). */
    kf_pyenv_export(env);
    /* The machine's host-profile lock (runner/hostlock.h): its runners open
     * it before their sandbox, whatever it lets them reach after. */
    if (a->host_lock && a->host_lock[0])
        kf_execenv_set(env, "KF_HOST_LOCK", a->host_lock);
    else
        kf_execenv_unset(env, "KF_HOST_LOCK");
    /* The arch its cache key needs, from the agent's inventory: the
     * runner then starts no CUDA driver (threads the sandbox, entered
     * by one thread, would not hold) before its sandbox. A build takes
     * GPU 0's, as the runner's own device 0 would be. */
    const char *arch_env = kf_execenv_get(env, "KF_CUDA_ARCH");
    uint32_t want = gpu ? gpu_index : 0;
    size_t ngpus = a->info ? a->info->n_gpus : 0;
    for (size_t g = 0; (!arch_env || !*arch_env) && g < ngpus; g++) {
        const Kfleet__GpuInfo *gi = a->info->gpus[g];
        if (gi->index == want && gi->cc_major > 0) {
            char arch[32];
            kf_build_arch_name((int)gi->cc_major, (int)gi->cc_minor, arch, sizeof arch);
            kf_execenv_set(env, "KF_CUDA_ARCH", arch);
            break;
        }
    }
}
