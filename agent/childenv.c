/* childenv — the environment of a process the agent is about to exec as
 * a runner (or a warm runner, warms.h), in the forked child: the sandbox's
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

/* The environment of a process about to exec a runner (or a warm runner,
 * warms.h) of GPU slot gpu_index (gpu 0: the CPU), in the forked child. */
void childenv_apply(const kf_childenv *a, int gpu, uint32_t gpu_index)
{
    if (kf_sandbox_enabled())
        kf_sandbox_scrub_env();
    /* In a sanitizer build, let a kernel's fault kill the runner by its
     * signal (what the task reports) instead of ASan's own exit. */
    const char *asan = getenv("ASAN_OPTIONS");
    if (asan) {
        char opts[1024];
        snprintf(opts, sizeof opts, "%s:handle_segv=0:handle_sigbus=0:handle_sigfpe=0", asan);
        setenv("ASAN_OPTIONS", opts, 1);
    }
    if (a->compat_dir && a->compat_dir[0]) {
        /* The toolkit's libcuda before the system's (runner/compat.h). */
        const char *old = getenv("LD_LIBRARY_PATH");
        char libpath[8192];
        snprintf(libpath, sizeof libpath, "%s%s%s", a->compat_dir, old && *old ? ":" : "",
                 old ? old : "");
        setenv("LD_LIBRARY_PATH", libpath, 1);
        setenv("KF_CUDA_COMPAT_DIR", a->compat_dir, 1);
    }
    if (gpu) {
        char dev[128];
        childenv_visible_device(gpu_index, dev, sizeof dev);
        setenv("CUDA_VISIBLE_DEVICES", dev, 1);
    }
    /* The node's Python as the agent probed it (runner/pyenv.h). */
    kf_pyenv_export();
    /* The machine's host-profile lock (runner/hostlock.h): its runners open
     * it before their sandbox, whatever it lets them reach after. */
    if (a->host_lock && a->host_lock[0])
        setenv("KF_HOST_LOCK", a->host_lock, 1);
    else
        unsetenv("KF_HOST_LOCK");
    /* The arch its cache key needs, from the agent's inventory: the
     * runner then starts no CUDA driver (threads the sandbox, entered
     * by one thread, would not hold) before its sandbox. A build takes
     * GPU 0's, as the runner's own device 0 would be. */
    const char *arch_env = getenv("KF_CUDA_ARCH");
    uint32_t want = gpu ? gpu_index : 0;
    size_t ngpus = a->info ? a->info->n_gpus : 0;
    for (size_t g = 0; (!arch_env || !*arch_env) && g < ngpus; g++) {
        const Kfleet__GpuInfo *gi = a->info->gpus[g];
        if (gi->index == want && gi->cc_major > 0) {
            char arch[32];
            kf_build_arch_name((int)gi->cc_major, (int)gi->cc_minor, arch, sizeof arch);
            setenv("KF_CUDA_ARCH", arch, 1);
            break;
        }
    }
}
