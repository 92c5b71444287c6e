/* warmup — which tasks take a warm runner (warms.h), and the warm runners
 * an agent starts with itself. See agent_int.h. */
#include "agent/agent_int.h"
#include "agent/childenv.h"
#include "agent/verdict.h"
#include "agent/warms.h"
#include "common/log.h"
#include "common/taskkind.h"

#include <stdlib.h>
#include <string.h>

/* warms.h's warms_env_fn. */
static void warm_env(void *ctx, int gpu, uint32_t gpu_index, kf_execenv *env)
{
    kf_agent *a = ctx;
    kf_childenv e = {a->compat_dir, a->host_lock, a->info};
    childenv_make(&e, gpu, gpu_index, env);
}

/* The agent's warm runners' table, made on first use; NULL (said once)
 * where the node cannot have them. */
static kwarms *table(kf_agent *a)
{
    if (a->warms || a->warms_off)
        return a->warms;
    kf_err err;
    a->warms = warms_new(a->runner_exe, a->workdir, a->cfg.keep_tmp, warm_env, a, &err);
    if (!a->warms) {
        a->warms_off = 1;
        kf_warn("warm.off", "error=\"%s\" candidates get a fresh runner each", err.msg);
    }
    return a->warms;
}

void warmup_at_start(kf_agent *a, const char *torch)
{
    /* On a GPU node with torch, the sweeps that come are mostly Python
     * problems' (a level, generated candidates): a warm runner started
     * with the agent imports torch while the agent probes torch and
     * measures its ceilings, rather than after the first task came (a
     * fresh runner importing it again meanwhile: 5.2 + 1.5 + 4.4 s before
     * the first reference on an H200, 2026-11-30). One not asked for in
     * WARMS_IDLE_S leaves, as any. KF_WARM=start also starts the CPU's;
     * KF_WARM=later starts none before a task wants one (`kfleet run` of a
     * sweep without a Python problem: the import would only slow the
     * agent's own probe of torch). */
    const char *env = getenv("KF_WARM");
    int cpu = env && strcmp(env, "start") == 0;
    if (env && strcmp(env, "later") == 0) {
        kf_info("warm.later", "why=\"KF_WARM=later: a warm runner starts on the first task "
                              "that wants one\"");
        return;
    }
    size_t gpus = torch && *torch ? a->info->n_gpus : 0;
    if ((!gpus && !cpu) || !table(a))
        return;
    for (size_t g = 0; g < gpus; g++)
        warms_start(a->warms, 1, (uint32_t)g);
    if (cpu)
        warms_start(a->warms, 0, 0);
}

int warmup_for_task(kf_agent *a, const Kfleet__TaskAssign *ta, int gpu)
{
    const Kfleet__TaskSpec *s = ta->spec;
    int python = kf_verdict_wanted(s) ? s->problem_python
                                      : s && kf_task_kind_at(s->kind)->references && s->python;
    if (!python || !table(a))
        return 0;
    int ready = warms_ready(a->warms, gpu, ta->gpu_index);
    if (!ready) /* still importing, or given up on: a fresh runner */
        kf_info("warm.skip", "task=0x%llx why=\"no warm runner is ready\"",
                (unsigned long long)ta->task_id);
    return ready;
}
