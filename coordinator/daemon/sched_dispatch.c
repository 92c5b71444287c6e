/* sched_dispatch — who runs what, and the periodic checks: agents silent
 * past the heartbeat timeout (or revoked) are lost and their attempts
 * requeued; assignments never confirmed within the grace are requeued; the
 * dispatcher gives each agent with a free slot its next task, creating the
 * kernel's build on that agent first (on a free CPU slot while its GPU is
 * busy, so the GPU does not wait for nvcc), and gives an agent that is
 * assigned a profile the baseline of its configuration too (the decisions
 * are sched_baseline.c's: this file makes, pins and ends the tasks). */
#include "daemon/sched_int.h"
#include "common/taskkind.h"
#include "common/log.h"
#include "common/util.h"
#include "common/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sched_check_agents(kf_coord *c)
{
    /* Silence is counted up to the last time every queued agent frame had
     * been read, not to now: what waits unread behind a long turn is not
     * silence (a million-task submit once got a healthy agent lost). */
    uint64_t now = c->agents_drained_mono ? c->agents_drained_mono : kf_mono_ns();
    uint64_t timeout = (uint64_t)(c->cfg.heartbeat_timeout_s * 1e9);
    uint64_t grace = (uint64_t)(c->cfg.assign_grace_s * 1e9);
    for (size_t i = 0; i < c->nagents; i++) {
        kagent *a = c->agents[i];
        if (!a->lost &&
            (a->revoked || (now > a->last_seen_mono && now - a->last_seen_mono > timeout &&
                            (a->registered || a->nrunning > 0)))) {
            char why[256];
            if (a->revoked)
                snprintf(why, sizeof why, "agent %s lost: its key was revoked", a->id);
            else
                snprintf(why, sizeof why, "agent %s lost: no heartbeat for %.1f s", a->id,
                         (double)(now - a->last_seen_mono) / 1e9);
            sched_agent_lost(c, a, why);
            continue;
        }
        /* Assignments the agent never confirmed were lost on the way. */
        for (size_t k = 0; k < a->nrunning;) {
            ksweep *sw;
            ktask *t = sched_task(c, a->running[k], &sw);
            if (t && !t->confirmed && now > t->assigned_mono && now - t->assigned_mono > grace) {
                char why[256];
                snprintf(why, sizeof why, "agent %s did not confirm the assignment within %.1f s",
                         a->id, c->cfg.assign_grace_s);
                sched_requeue(c, sw, t, why);
                continue; /* requeue removed running[k] */
            }
            k++;
        }
    }
}

/* Up to how many tasks past the first startable GPU task pick_in looks
 * for one of the kernel the slot ran last. */
#define KF_AFFINITY_AHEAD 128

static void give_baseline(kf_coord *c, ksweep *sw, uint32_t idx, kagent *a);

static void assign(kf_coord *c, ksweep *sw, ktask *t, kagent *a)
{
    int ai = sched_agent_index(c, a);
    t->rec->attempts++;
    sched_set_str(&t->rec->agent_id, a->id);
    t->agent = ai;
    t->assigned_mono = kf_mono_ns();
    t->confirmed = 0;
    sched_take_slot(a, t, sched_needs_gpu(sw, t));
    if (t->slot_gpu == 1 && t->gpu_index < KF_MAX_SLOTS)
        snprintf(a->gpu_kernel[t->gpu_index], sizeof a->gpu_kernel[0], "%s",
                 sw->rec->kernels[t->rec->kernel_index]->hash);
    if (a->nrunning == a->caprunning) {
        a->caprunning = a->caprunning ? a->caprunning * 2 : 16;
        a->running = kf_xrealloc(a->running, a->caprunning * sizeof *a->running);
    }
    a->running[a->nrunning++] = t->rec->task_id;
    sched_set_state(sw, t, KFLEET__TASK_STATE__ASSIGNED);
    sched_put_task(c, t);

    Kfleet__Attempt at = KFLEET__ATTEMPT__INIT;
    at.task_id = t->rec->task_id;
    at.attempt = t->rec->attempts;
    at.agent_id = a->id;
    at.assigned_ns = t->assigned_ns = kf_now_ns();
    at.state = KFLEET__TASK_STATE__ASSIGNED;
    kf_txn *txn = NULL;
    if (coord_txn(c, &txn) == KF_OK)
        kf_store_put_attempt(txn, &at);

    const Kfleet__KernelRef *k = sw->rec->kernels[t->rec->kernel_index];
    Kfleet__TaskSpec spec = KFLEET__TASK_SPEC__INIT;
    spec.kind = t->rec->kind;
    spec.kernel = k->name;
    spec.kernel_hash = k->hash;
    Kfleet__Result *shared = NULL;
    if (t->kind->builds) {
        spec.n_sources = k->n_sources;
        spec.sources = k->sources;
        if (t->share_task)
            sched_share_fill(c, t, &spec, &shared);
        else if (!k->python)
            spec.want_artifact = sched_share_building(c, a, k->hash, t->rec->task_id);
        /* Without an artifact to install it compiles, or takes from its
         * cache only its own earlier compile (sched_share.c, trust). */
        spec.own_build = spec.artifact.len == 0;
    } else {
        /* What this agent's build made: the runner loads nothing else. */
        const kbuild *b = sched_agent_build(c, a, k->hash);
        if (b && b->artifact_hash[0])
            spec.artifact_hash = (char *)b->artifact_hash;
    }
    spec.n_flags = k->n_flags;
    spec.flags = k->flags;
    spec.n_params = t->rec->n_params;
    spec.params = t->rec->params;
    spec.measure = sw->rec->measure;
    spec.time_limit_s = sw->rec->time_limit_s;
    spec.memory_limit_bytes = sw->rec->memory_limit_bytes;
    spec.device_cuda = k->cuda;
    spec.python = k->python;
    spec.n_extension = k->n_extension;
    spec.extension = k->extension;
    spec.n_files = k->n_files;
    spec.files = k->files;
    /* A reference task is told the problem's secret seeds it computes for
     * (docs/problems.md); no other task ever is. */
    uint64_t *seeds = NULL;
    if (t->kind->references && txn &&
        control_reference_seeds(txn, sw->rec, t->rec, kf_now_ns(), &seeds, &spec.n_seeds) != KF_OK)
        kf_warn("task.seeds",
                "task=0x%llx: the store has no seed pool for its problem; the runner will "
                "refuse it",
                (unsigned long long)t->rec->task_id);
    spec.seeds = seeds;
    /* A candidate's validate or profile: the problem's build here, the
     * seeds with a stored reference and those references. */
    Kfleet__Reference **refs = NULL;
    size_t nrefs = 0;
    if (k->candidate && !t->kind->builds && txn) {
        const Kfleet__KernelRef *pk = sw->rec->kernels[sw->rec->n_kernels - 1];
        const kbuild *pb = sched_agent_build(c, a, pk->hash);
        spec.problem_kernel = pk->name;
        spec.problem_hash = pk->hash;
        spec.problem_python = pk->python;
        spec.problem_cuda = pk->cuda;
        spec.problem_files = pk->files;
        spec.n_problem_files = pk->n_files;
        /* The sweep's atol/rtol for the problem's: the checker judges by
         * them. References keep the problem's own, stored for every sweep
         * of the problem (its hash) to share. */
        spec.tol_override = sw->rec->tol_override;
        spec.tol_atol = sw->rec->tol_atol;
        spec.tol_rtol = sw->rec->tol_rtol;
        if (pb && pb->artifact_hash[0])
            spec.problem_artifact_hash = (char *)pb->artifact_hash;
        if (control_candidate_refs(txn, sw->rec, t->rec, kf_now_ns(), &seeds, &refs, &nrefs) !=
            KF_OK)
            kf_warn("task.refs", "task=0x%llx: the store could not read its problem's references",
                    (unsigned long long)t->rec->task_id);
        spec.seeds = seeds;
        spec.n_seeds = nrefs;
        spec.references = refs;
        spec.n_references = nrefs;
    }
    Kfleet__TaskAssign ta = KFLEET__TASK_ASSIGN__INIT;
    ta.task_id = t->rec->task_id;
    ta.attempt = t->rec->attempts;
    ta.spec = &spec;
    ta.gpu_index = t->gpu_index;
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    env.body_case = KFLEET__ENVELOPE__BODY_ASSIGN;
    env.assign = &ta;
    coord_queue_env(c, a, &env);
    if (shared)
        kfleet__result__free_unpacked(shared, NULL);
    if (refs)
        control_candidate_refs_free(seeds, refs, nrefs);
    else
        free(seeds);
    kf_debug("task.assign", "task=0x%llx attempt=%u agent=%s kind=%d",
             (unsigned long long)t->rec->task_id, t->rec->attempts, a->id, t->rec->kind);
    give_baseline(c, sw, (uint32_t)(t - sw->tasks), a);
}

/* A task made while the sweep runs (rec, owned from here: a build, a
 * baseline's task), kept and stored with the sweep's new count. */
static ktask *add_made(kf_coord *c, ksweep *sw, Kfleet__Task *rec)
{
    ktask *t = sched_add_task(c, sw, rec);
    sw->rec->task_count = sw->ntasks;
    kf_txn *txn;
    if (coord_txn(c, &txn) == KF_OK) {
        kf_store_put_task(txn, rec);
        kf_store_put_sweep(txn, sw->rec);
    }
    return t;
}

/* Creates the build task of kernel ki pinned to agent a; with `share`
 * ready, it installs that artifact instead of compiling. */
static ktask *new_build(kf_coord *c, ksweep *sw, uint32_t ki, kagent *a, const kshare *share)
{
    Kfleet__Task *rec = kf_xmalloc(sizeof *rec);
    kfleet__task__init(rec);
    rec->task_id = kf_task_id(sw->rec->sweep_id, sw->ntasks);
    rec->sweep_id = sw->rec->sweep_id;
    rec->kind = KFLEET__TASK_KIND__BUILD;
    rec->kernel_index = ki;
    rec->pin_agent = kf_xstrdup(a->id);
    rec->agent_id = kf_xstrdup("");
    rec->error = kf_xstrdup("");
    rec->state = KFLEET__TASK_STATE__PENDING;
    rec->created_ns = rec->updated_ns = kf_now_ns();
    ktask *t = add_made(c, sw, rec);
    t->share_task = share ? share->task_id : 0;
    sched_set_build(c, a, sw->rec->kernels[ki]->hash, KFLEET__TASK_STATE__ASSIGNED, rec->task_id,
                    NULL, NULL, NULL);
    return t;
}

/* Fails task t, whose kernel ki's build b failed on agent a; 1 when that
 * ended its sweep. */
static int build_failed(kf_coord *c, ksweep *sw, ktask *t, const kagent *a, uint32_t ki,
                        const kbuild *b)
{
    char msg[2300];
    /* The compiler's complaint whole (up to 2 KiB), not just its "compile
     * failed:" header: a syntax error's caret and message are its last
     * lines. */
    snprintf(msg, sizeof msg, "the build of %s%s failed on agent %s: %.2048s",
             sw->rec->kernels[ki]->problem ? "problem " : "", sw->rec->kernels[ki]->name, a->id,
             b->error ? b->error : "build did not succeed");
    sched_set_str(&t->rec->agent_id, a->id);
    sched_finish(c, sw, t, KFLEET__TASK_STATE__FAILED, msg);
    if (sched_terminal_count(sw) != sw->ntasks)
        return 0;
    sched_maybe_finish_sweep(c, sw);
    return 1;
}

/* The next task of sw agent a can start now, or NULL; in the sweep's order
 * (sched_order.c: longest expected first), every rule below applying to
 * each task as it comes. May create a build task (returned) or fail tasks
 * whose build failed on a; *again: that failure may have ended the sweep,
 * so the caller starts over. *waiting: the kernel a found another agent
 * building for it. */
static ktask *pick_in(kf_coord *c, kagent *a, int ai, ksweep *sw, int cpu_free, int gpu_free,
                      const char **waiting, int *again)
{
    uint32_t i;
    /* A GPU slot stays on the kernel it ran last while that kernel has a
     * task it can start (long chains excepted: they go first): its runner
     * serves it, where a switch costs a new runner and CUDA context. The
     * first startable task of another kernel is held (fallback) while the
     * walk looks KF_AFFINITY_AHEAD further. With artifacts installed beside
     * compiles, GPUs took up kernels as builds landed and switched back:
     * 31 runner starts for 24 (4 x H200, examples/gpu.yaml, cold). */
    ktask *fallback = NULL;
    unsigned ahead = 0;
    int g = gpu_free ? sched_free_gpu(a) : -1;
    const char *warm = g >= 0 && g < KF_MAX_SLOTS ? a->gpu_kernel[g] : "";
    while ((!fallback || ++ahead <= KF_AFFINITY_AHEAD) && sched_order_next(sw, &i)) {
        ktask *t = &sw->tasks[i];
        if (t->pin >= 0 && t->pin != ai)
            continue;
        /* A profile waits for its configuration's validation. */
        if (t->gate >= 0 && (uint32_t)t->gate < sw->ntasks &&
            !kf_state_terminal(sw->tasks[t->gate].rec->state))
            continue;
        /* A candidate's task waits for its configuration's reference; a
         * free CPU slot builds its kernel meanwhile (below). */
        int ref_wait = t->ref_gate >= 0 && (uint32_t)t->ref_gate < sw->ntasks &&
                       sw->tasks[t->ref_gate].rec->state != KFLEET__TASK_STATE__SUCCEEDED;
        if (ref_wait && !cpu_free)
            continue;
        /* A Python kernel goes where its imports are (sched_match). */
        if (!sched_can_run(a, sw->rec->kernels[t->rec->kernel_index], NULL, 0))
            continue;
        const kf_task_kind *tk = t->kind;
        if (!tk || !tk->needs_build) { /* a build, on a CPU slot */
            if (!cpu_free)
                continue;
            return t;
        }
        /* A candidate's task needs the problem's build here too
         * (docs/problems.md): the problem makes its inputs. */
        if (sw->rec->kernels[t->rec->kernel_index]->candidate) {
            uint32_t pi = (uint32_t)sw->rec->n_kernels - 1;
            const char *ph = sw->rec->kernels[pi]->hash;
            if (!sched_can_run(a, sw->rec->kernels[pi], NULL, 0))
                continue;
            kbuild *pb = sched_agent_build(c, a, ph);
            if (!pb) {
                const kshare *ps = sched_share_find(c, a, ph);
                if (ps && ps->unshareable)
                    ps = NULL;
                if ((ps && !ps->ready) || !cpu_free)
                    continue;
                return new_build(c, sw, pi, a, ps);
            }
            if (!kf_state_terminal(pb->state))
                continue;
            if (pb->state != KFLEET__TASK_STATE__SUCCEEDED) {
                if (build_failed(c, sw, t, a, pi, pb)) {
                    *again = 1;
                    return NULL;
                }
                continue;
            }
        }
        int gpu = sched_needs_gpu(sw, t);
        const char *hash = sw->rec->kernels[t->rec->kernel_index]->hash;
        if (hash == *waiting)
            continue;
        kbuild *b = sched_agent_build(c, a, hash);
        /* Another agent with this toolchain building it: wait for its
         * artifact rather than run the same compile (sched_share.c). */
        const kshare *share = b ? NULL : sched_share_find(c, a, hash);
        if (share && share->unshareable) {
            share = NULL;
        } else if (share && !share->ready) {
            *waiting = hash;
            continue;
        }
        /* Its reference still being computed (the problem's one task a
         * configuration, on one slot of the fleet): the kernel built here
         * now, on a CPU slot that would otherwise wait too (on 2 x H200 the
         * second agent's sat idle 6 s behind it), so that the candidate's
         * first task finds its build done when the reference is. */
        if (ref_wait) {
            if (!b && !(gpu && a->gpu_slots == 0))
                return new_build(c, sw, t->rec->kernel_index, a, share);
            continue;
        }
        if (gpu ? !gpu_free : !cpu_free) {
            /* Its GPU is busy, but a CPU slot is free: build the kernel
             * now, so the GPU does not sit idle through nvcc when it
             * reaches this kernel (on 2xH200 that idle time was 7% of
             * the makespan of examples/gpu.yaml). */
            if (gpu && (cpu_free || (share && !a->installing)) && !b && a->gpu_slots > 0)
                return new_build(c, sw, t->rec->kernel_index, a, share);
            continue;
        }
        if (b && b->state == KFLEET__TASK_STATE__SUCCEEDED) {
            if (gpu && *warm && strncmp(hash, warm, sizeof a->gpu_kernel[0] - 1) != 0 &&
                !sched_order_long(sw, i)) {
                if (!fallback)
                    fallback = t;
                continue;
            }
            return t;
        }
        if (b && kf_state_terminal(b->state)) {
            if (build_failed(c, sw, t, a, t->rec->kernel_index, b)) {
                *again = 1;
                return NULL;
            }
            continue;
        }
        if (b)
            continue;                                /* building: wait for it */
        if (!cpu_free && !(share && !a->installing)) /* an install needs no CPU slot */
            continue;
        return new_build(c, sw, t->rec->kernel_index, a, share);
    }
    return fallback;
}

/* A GPU agent's steady state is its GPU busy and a CPU slot free: then only
 * a CPU task or a build ahead of its GPU can start. With no CPU task
 * pending in sw and every kernel of sw it can run built (or building) here,
 * or no GPU to build ahead for, there is none: 1, and the walk (every
 * pending task, in order, each turn) is skipped. */
static int nothing_for_cpu(kf_coord *c, kagent *a, ksweep *sw)
{
    if (sw->cpu_pending)
        return 0;
    if (a->gpu_slots == 0)
        return 1;
    for (size_t k = 0; k < sw->rec->n_kernels; k++)
        if (sched_can_run(a, sw->rec->kernels[k], NULL, 0) &&
            !sched_agent_build(c, a, sw->rec->kernels[k]->hash))
            return 0;
    return 1;
}

/* The next task agent a can start now, or NULL: the sweeps in submission
 * order, each sweep's tasks in its order (pick_in). */
static ktask *pick(kf_coord *c, kagent *a, int ai, ksweep **sw_out)
{
    int cpu_free = a->cpu_used < a->cpu_slots;
    int gpu_free = sched_free_gpu(a) >= 0;
    /* Every way below to a task (or a build) needs a free slot: an agent
     * with none would only walk every pending task for nothing, and that
     * walk, agents x pending tasks a turn, was over half the coordinator's
     * time dispatching to 64 agents (docs/performance.md). */
    if (!cpu_free && !gpu_free)
        return NULL;
    /* The kernel this agent last found another agent building for it: its
     * other tasks are passed over at once, without a store lookup each,
     * which with many agents waiting on a million-task sweep would stall
     * the turn. */
    const char *waiting = NULL;
    for (size_t s = 0; s < c->nsweeps; s++) {
        ksweep *sw = c->sweeps[s];
        /* control.c's "why nothing moves" walks from the cursor. */
        while (sw->cursor < sw->ntasks &&
               sw->tasks[sw->cursor].rec->state != KFLEET__TASK_STATE__PENDING)
            sw->cursor++;
        if (sw->cursor == sw->ntasks)
            continue;
        if (!gpu_free && nothing_for_cpu(c, a, sw))
            continue;
        if (!sw->order) {
            kf_txn *txn = NULL;
            sched_order_plan(sw, coord_txn(c, &txn) == KF_OK ? txn : NULL, &c->priors);
        }
        int again = 0;
        ktask *t = pick_in(c, a, ai, sw, cpu_free, gpu_free, &waiting, &again);
        if (again) /* sw may be gone (finished and freed) */
            return pick(c, a, ai, sw_out);
        sched_order_rewind(sw, t ? (uint32_t)(t - sw->tasks) : UINT32_MAX);
        if (t) {
            *sw_out = sw;
            return t;
        }
    }
    return NULL;
}

/* ---- the baseline on every node (sched_baseline.c) ---- */

/* Whether agent a can run task t's kernel (else why): a Python kernel's
 * imports (sched_match), a GPU for a CUDA kernel's validate or profile. */
static int runs_on(const ksweep *sw, const ktask *t, const kagent *a, char *why, size_t len)
{
    if (!sched_can_run(a, sw->rec->kernels[t->rec->kernel_index], why, len))
        return 0;
    if (sched_needs_gpu(sw, t) && a->gpu_slots == 0) {
        snprintf(why, len, "%s has no GPU", a->id);
        return 0;
    }
    return 1;
}

/* A copy of task tmpl (its kind, kernel and configuration), new and
 * pinned to a; its index. */
static uint32_t made_like(kf_coord *c, ksweep *sw, uint32_t tmpl, const kagent *a)
{
    Kfleet__Task *rec = kf_pb_copy(&sw->tasks[tmpl].rec->base);
    rec->task_id = kf_task_id(sw->rec->sweep_id, sw->ntasks);
    rec->state = KFLEET__TASK_STATE__PENDING;
    rec->attempts = 0;
    sched_set_str(&rec->pin_agent, a->id);
    sched_set_str(&rec->agent_id, "");
    sched_set_str(&rec->error, "");
    rec->created_ns = rec->updated_ns = kf_now_ns();
    add_made(c, sw, rec);
    return sw->ntasks - 1;
}

/* Gives agent a what it lacks of a baseline (need): the unplaced
 * submitted profile pinned to it, or a validate and a profile of its own;
 * those are skipped at once, saying why, on an agent that cannot run the
 * baseline, so that its candidates' rows say why they have no speedup. */
static void give_need(kf_coord *c, ksweep *sw, const sched_bneed *need, kagent *a)
{
    char why[700];
    int runs = runs_on(sw, &sw->tasks[need->profile], a, why, sizeof why);
    if (runs && need->unplaced >= 0) {
        ktask *p = &sw->tasks[need->unplaced];
        p->pin = sched_agent_index(c, a);
        sched_set_str(&p->rec->pin_agent, a->id);
        sched_put_task(c, p);
        kf_info("baseline.pinned", "task=0x%llx agent=%s", (unsigned long long)p->rec->task_id,
                a->id);
        return;
    }
    uint32_t v = need->validate >= 0 ? made_like(c, sw, (uint32_t)need->validate, a) : UINT32_MAX;
    uint32_t p = made_like(c, sw, need->profile, a);
    kf_info("baseline.made", "task=0x%llx agent=%s kernel=%s config=%u%s%s",
            (unsigned long long)sw->tasks[p].rec->task_id, a->id,
            sw->rec->kernels[sw->tasks[p].rec->kernel_index]->name, sw->tasks[p].rec->config_index,
            runs ? "" : " skipped: ", runs ? "" : why);
    if (runs)
        return;
    char msg[800];
    snprintf(msg, sizeof msg, "skipped: the baseline cannot run on this agent: %s", why);
    sched_finish(c, sw, &sw->tasks[p], KFLEET__TASK_STATE__SKIPPED, msg);
    if (v != UINT32_MAX)
        sched_finish(c, sw, &sw->tasks[v], KFLEET__TASK_STATE__SKIPPED, msg);
}

/* Task idx, just assigned to a: a profile whose configuration has a
 * baseline gets that baseline measured on a too. */
static void give_baseline(kf_coord *c, ksweep *sw, uint32_t idx, kagent *a)
{
    sched_bneed need[8];
    size_t n = sched_baseline_placed(c, sw, idx, sched_agent_index(c, a), need, 8);
    for (size_t i = 0; i < n; i++)
        give_need(c, sw, &need[i], a);
}

/* An agent that registered or was lost since the last dispatch: back, it
 * gets again the baselines of the configurations its candidates ran (those
 * it held were cancelled when it was lost); lost, the baseline tasks
 * pinned to it are cancelled, so that the sweep can end without them. */
static void baseline_recheck(kf_coord *c, kagent *a)
{
    a->baseline_recheck = 0;
    int ai = sched_agent_index(c, a);
    char why[300];
    snprintf(why, sizeof why, "baseline not measured here: agent %s was lost", a->id);
    for (size_t s = c->nsweeps; s-- > 0;) { /* a sweep may end (and go) */
        ksweep *sw = c->sweeps[s];
        if (!a->lost) {
            sched_bneed *need = NULL;
            size_t n = sched_baseline_wanted(c, sw, ai, &need);
            for (size_t i = 0; i < n; i++)
                give_need(c, sw, &need[i], a);
            free(need);
            continue;
        }
        uint32_t *idx = NULL;
        size_t n = sched_baseline_pinned(c, sw, ai, &idx);
        for (size_t i = 0; i < n; i++)
            if (!kf_state_terminal(sw->tasks[idx[i]].rec->state))
                sched_finish(c, sw, &sw->tasks[idx[i]], KFLEET__TASK_STATE__CANCELLED, why);
        free(idx);
        if (n)
            sched_maybe_finish_sweep(c, sw);
    }
}

void sched_dispatch(kf_coord *c)
{
    if (c->nsweeps == 0)
        return;
    for (size_t i = 0; i < c->nagents; i++)
        if (c->agents[i]->baseline_recheck)
            baseline_recheck(c, c->agents[i]);
    if (c->nsweeps == 0)
        return;
    /* Round-robin start so that no agent is always served first. */
    size_t n = c->nagents;
    for (size_t k = 0; k < n; k++) {
        size_t ai = (c->rr + k) % n;
        kagent *a = c->agents[ai];
        if (!a->registered || a->lost)
            continue;
        for (;;) {
            ksweep *sw = NULL;
            ktask *t = pick(c, a, (int)ai, &sw);
            if (!t)
                break;
            assign(c, sw, t, a);
        }
    }
    c->rr++;
}
