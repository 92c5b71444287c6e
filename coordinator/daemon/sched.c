/* sched — the scheduler's state and its rules: agents, sweeps and tasks in
 * memory, slots, builds, and how attempts and tasks end. Its handlers of
 * what agents send are sched_agents.c; who runs what and the periodic
 * checks, sched_dispatch.c; both build on this file (sched_int.h).
 *
 * The rules:
 *  - A task takes one slot: a GPU slot for a validate/profile task of a CUDA
 *    kernel, else a CPU slot. Builds take a CPU slot.
 *  - Validate and profile tasks run on an agent only once that agent holds a
 *    successful build of the kernel (by kernel hash). The first task that
 *    needs a missing build creates the build task, pinned to that agent; a
 *    failed build fails the tasks that needed it on that agent.
 *  - An attempt ends by its result, or when its agent is lost (no heartbeat
 *    for heartbeat_timeout_s) or never confirms the assignment (assign_grace_s).
 *    Then the task goes back to pending while attempts remain, else fails.
 *  - A result for an attempt that is no longer current is kept as a late,
 *    superseded record and changes nothing. So each task ends in exactly one
 *    terminal record, whatever the agents do.
 *  - An attempt that failed for a reason outside the kernel (Result.infra) is
 *    tried again while attempts remain; a kernel's own failure is final.
 * Every state change is written into the turn's transaction (coord_txn). */
#include "daemon/sched_int.h"
#include "common/taskkind.h"
#include "common/xalloc.h"
#include "common/log.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- lookup and bookkeeping ---- */

/* The state's name for a log line or a message; a value no state has
 * (from a damaged record) is named as such, never dereferenced. */
static const char *state_name(int state)
{
    const ProtobufCEnumValue *v =
        protobuf_c_enum_descriptor_get_value(&kfleet__task_state__descriptor, state);
    return v ? v->name : "UNKNOWN_STATE";
}

/* Replaces a string field of a record. A record unpacked from the store
 * (after a restart) holds protobuf-c's shared empty string wherever the
 * field was empty on the wire; that one must not be freed. */
void sched_set_str(char **field, const char *value)
{
    if (*field != protobuf_c_empty_string)
        free(*field);
    *field = kf_xstrdup(value);
}

kagent *sched_agent(kf_coord *c, const char *id, int create)
{
    for (size_t i = 0; i < c->nagents; i++)
        if (strcmp(c->agents[i]->id, id) == 0)
            return c->agents[i];
    if (!create)
        return NULL;
    if (c->nagents == c->capagents) {
        c->capagents = c->capagents ? c->capagents * 2 : 16;
        c->agents = kf_xrealloc(c->agents, c->capagents * sizeof *c->agents);
    }
    kagent *a = kf_xcalloc(1, sizeof *a);
    a->id = kf_xstrdup(id);
    a->last_seen_mono = kf_mono_ns();
    c->agents[c->nagents++] = a;
    return a;
}

kagent *sched_agent_by_route(kf_coord *c, const void *route, size_t route_len)
{
    if (!route_len)
        return NULL;
    for (size_t i = 0; i < c->nagents; i++) {
        kagent *a = c->agents[i];
        if (a->route_len == route_len && memcmp(a->route, route, route_len) == 0)
            return a;
    }
    return NULL;
}

int sched_agent_index(kf_coord *c, const kagent *a)
{
    for (size_t i = 0; i < c->nagents; i++)
        if (c->agents[i] == a)
            return (int)i;
    return -1;
}

void sched_free_agent(kagent *a)
{
    if (!a)
        return;
    free(a->id);
    if (a->info)
        kfleet__agent_info__free_unpacked(a->info, NULL);
    free(a->acks);
    free(a->running);
    for (size_t i = 0; i < a->nbuilds; i++)
        free(a->builds[i].error);
    free(a->builds);
    free(a);
}

ksweep *sched_sweep(kf_coord *c, uint32_t sweep_id)
{
    for (size_t i = 0; i < c->nsweeps; i++)
        if (c->sweeps[i]->rec->sweep_id == sweep_id)
            return c->sweeps[i];
    return NULL;
}

ktask *sched_task(kf_coord *c, uint64_t task_id, ksweep **sw_out)
{
    ksweep *sw = sched_sweep(c, kf_task_sweep(task_id));
    uint32_t idx = (uint32_t)task_id;
    if (!sw || idx >= sw->ntasks)
        return NULL;
    if (sw_out)
        *sw_out = sw;
    return &sw->tasks[idx];
}

ksweep *sched_add_sweep(kf_coord *c, Kfleet__Sweep *rec)
{
    if (c->nsweeps == c->capsweeps) {
        c->capsweeps = c->capsweeps ? c->capsweeps * 2 : 8;
        c->sweeps = kf_xrealloc(c->sweeps, c->capsweeps * sizeof *c->sweeps);
    }
    ksweep *sw = kf_xcalloc(1, sizeof *sw);
    sw->rec = rec;
    sw->ran_here = 1;
    c->sweeps[c->nsweeps++] = sw;
    return sw;
}

/* The reference task a candidate's validate or profile waits for: a
 * problem sweep's reference tasks come first, one per configuration that
 * lacked references at submit, in configuration order (sched_expand.c), so a
 * binary search over them finds the one of rec's configuration, at submit
 * and when the coordinator reloads the sweep alike. -1: none. */
static int32_t ref_gate_of(const ksweep *sw, const ktask *t)
{
    const Kfleet__Task *rec = t->rec;
    if (!t->kind->needs_reference || rec->kernel_index >= sw->rec->n_kernels ||
        !sw->rec->kernels[rec->kernel_index]->candidate)
        return -1;
    uint32_t lo = 0, hi = 0;
    while (hi < sw->ntasks && sw->tasks[hi].kind->references)
        hi++;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        uint32_t ci = sw->tasks[mid].rec->config_index;
        if (ci == rec->config_index)
            return (int32_t)mid;
        if (ci < rec->config_index)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

ktask *sched_add_task(kf_coord *c, ksweep *sw, Kfleet__Task *rec)
{
    if (sw->ntasks == sw->cap) {
        sw->cap = sw->cap ? sw->cap * 2 : 64;
        sw->tasks = kf_xrealloc(sw->tasks, sw->cap * sizeof *sw->tasks);
    }
    ktask *t = &sw->tasks[sw->ntasks++];
    memset(t, 0, sizeof *t);
    t->rec = rec;
    t->agent = -1;
    t->slot_gpu = -1;
    t->pin = -1;
    t->kind = kf_task_kind_at(rec->kind);
    t->gate = t->dependent = t->ref_gate = -1;
    if (rec->pin_agent && *rec->pin_agent)
        t->pin = sched_agent_index(c, sched_agent(c, rec->pin_agent, 1));
    /* The task a kind is gated_by comes just before it (a sweep's tasks
     * are made configuration by configuration in the table's order; nodes:
     * all, agent by agent): link the two, so this one waits for it. One
     * pinned nowhere gates one pinned to an agent: a baseline profile
     * pinned to the agent that first needed it (sched_baseline.c). */
    Kfleet__TaskKind gate = t->kind->gated_by;
    if (gate) {
        for (uint32_t back = 1; back <= 64 && back < sw->ntasks; back++) {
            ktask *v = &sw->tasks[sw->ntasks - 1 - back];
            if (v->rec->kind == gate && v->rec->kernel_index == rec->kernel_index &&
                v->rec->config_index == rec->config_index && (v->pin == t->pin || v->pin < 0) &&
                v->dependent < 0) {
                t->gate = (int32_t)(sw->ntasks - 1 - back);
                v->dependent = (int32_t)(sw->ntasks - 1);
                break;
            }
        }
    }
    t->ref_gate = ref_gate_of(sw, t);
    sw->counts[rec->state & 15]++;
    if (t->kind->builds)
        sw->bcounts[rec->state & 15]++;
    if (rec->state == KFLEET__TASK_STATE__PENDING && !sched_needs_gpu(sw, t))
        sw->cpu_pending++;
    sched_order_added(sw, sw->ntasks - 1);
    return t;
}

void sched_free_sweep(ksweep *sw)
{
    if (!sw)
        return;
    for (uint32_t i = 0; i < sw->ntasks; i++)
        kfleet__task__free_unpacked(sw->tasks[i].rec, NULL);
    free(sw->tasks);
    sched_order_free(&sw->order);
    sched_baseline_free(&sw->base);
    kfleet__sweep__free_unpacked(sw->rec, NULL);
    free(sw);
}

void sched_set_state(ksweep *sw, ktask *t, int state)
{
    sw->counts[t->rec->state & 15]--;
    if (t->kind->builds) {
        sw->bcounts[t->rec->state & 15]--;
        sw->bcounts[state & 15]++;
    }
    if (!sched_needs_gpu(sw, t))
        sw->cpu_pending +=
            (state == KFLEET__TASK_STATE__PENDING) - (t->rec->state == KFLEET__TASK_STATE__PENDING);
    t->rec->state = (Kfleet__TaskState)state;
    t->rec->updated_ns = kf_now_ns();
    sw->counts[state & 15]++;
}

uint32_t sched_terminal_count(const ksweep *sw)
{
    return sw->counts[KFLEET__TASK_STATE__SUCCEEDED] + sw->counts[KFLEET__TASK_STATE__FAILED] +
           sw->counts[KFLEET__TASK_STATE__TIMED_OUT] + sw->counts[KFLEET__TASK_STATE__CANCELLED] +
           sw->counts[KFLEET__TASK_STATE__SKIPPED];
}

void sched_put_task(kf_coord *c, const ktask *t)
{
    kf_txn *txn;
    if (coord_txn(c, &txn) == KF_OK && kf_store_put_task(txn, t->rec) != KF_OK)
        kf_error("store.put", "what=task task=0x%llx", (unsigned long long)t->rec->task_id);
}

/* Removes a finished sweep from memory once all its tasks are terminal. */
void sched_maybe_finish_sweep(kf_coord *c, ksweep *sw)
{
    if (sched_terminal_count(sw) != sw->ntasks)
        return;
    sw->rec->finished_ns = kf_now_ns();
    sw->rec->task_count = sw->ntasks;
    kf_txn *txn;
    if (coord_txn(c, &txn) == KF_OK)
        kf_store_put_sweep(txn, sw->rec);
    kf_info("sweep.finished",
            "sweep=%u tasks=%u succeeded=%u failed=%u timed_out=%u cancelled=%u skipped=%u",
            sw->rec->sweep_id, sw->ntasks, sw->counts[KFLEET__TASK_STATE__SUCCEEDED],
            sw->counts[KFLEET__TASK_STATE__FAILED], sw->counts[KFLEET__TASK_STATE__TIMED_OUT],
            sw->counts[KFLEET__TASK_STATE__CANCELLED], sw->counts[KFLEET__TASK_STATE__SKIPPED]);
    if (sw->ran_here)
        sched_priors_finished(&c->priors, sw);
    for (size_t i = 0; i < c->nsweeps; i++) {
        if (c->sweeps[i] == sw) {
            memmove(&c->sweeps[i], &c->sweeps[i + 1], (c->nsweeps - i - 1) * sizeof *c->sweeps);
            c->nsweeps--;
            break;
        }
    }
    sched_free_sweep(sw);
}

/* ---- slots and builds ---- */

int sched_needs_gpu(const ksweep *sw, const ktask *t)
{
    const kf_task_kind *k = t->kind;
    return k && k->slot == KF_SLOT_GPU_IF_CUDA && t->rec->kernel_index < sw->rec->n_kernels &&
           sw->rec->kernels[t->rec->kernel_index]->cuda;
}

int sched_free_gpu(const kagent *a)
{
    for (uint32_t i = 0; i < a->gpu_slots && i < KF_MAX_SLOTS; i++)
        if (!a->gpu_busy[i])
            return (int)i;
    return -1;
}

void sched_take_slot(kagent *a, ktask *t, int gpu)
{
    if (gpu) {
        int g = sched_free_gpu(a);
        t->gpu_index = g < 0 ? 0 : (uint32_t)g;
        if (g >= 0)
            a->gpu_busy[g] = 1;
        t->slot_gpu = 1;
    } else if (t->share_task && !a->installing) {
        /* Installing an artifact another agent built is a download and a
         * hash check, a fraction of a second: it does not wait for the CPU
         * slot, where a compile may run for seconds while the GPU it is for
         * idles (4 x H200, examples/gpu.yaml cold: GPUs started 1-2 s apart
         * so). */
        a->installing = 1;
        t->slot_gpu = 2;
    } else {
        a->cpu_used++;
        t->slot_gpu = 0;
    }
}

void sched_release_slot(kf_coord *c, ktask *t)
{
    if (t->agent < 0 || (size_t)t->agent >= c->nagents)
        return;
    kagent *a = c->agents[t->agent];
    if (t->slot_gpu == 1 && t->gpu_index < KF_MAX_SLOTS)
        a->gpu_busy[t->gpu_index] = 0;
    else if (t->slot_gpu == 0 && a->cpu_used > 0)
        a->cpu_used--;
    else if (t->slot_gpu == 2)
        a->installing = 0;
    t->slot_gpu = -1;
    for (size_t i = 0; i < a->nrunning; i++) {
        if (a->running[i] == t->rec->task_id) {
            a->running[i] = a->running[--a->nrunning];
            break;
        }
    }
}

/* An installed build counts only while its builder may build for others:
 * sharing on and the builder trusted (sched_share.c). */
static kbuild *trusted_or_none(kf_coord *c, kagent *a, kbuild *b)
{
    if (!b || !b->built_by[0] || !kf_state_terminal(b->state) ||
        (!c->cfg.no_shared_builds && sched_share_trusted_id(c, b->built_by)))
        return b;
    kf_info("build.untrusted", "agent=%s kernel=%.12s built_by=%s why=\"%s\"", a->id, b->hash,
            b->built_by,
            c->cfg.no_shared_builds ? "shared builds are off" : "its builder is not trusted");
    char hash[65];
    snprintf(hash, sizeof hash, "%s", b->hash);
    sched_invalidate_build(c, a, hash);
    return NULL;
}

kbuild *sched_agent_build(kf_coord *c, kagent *a, const char *hash)
{
    for (size_t i = 0; i < a->nbuilds; i++)
        if (strcmp(a->builds[i].hash, hash) == 0)
            return trusted_or_none(c, a, &a->builds[i]);
    /* Not in memory: the store may know it (a coordinator restart). */
    Kfleet__BuildRecord *br = NULL;
    kf_txn *txn;
    if (coord_txn(c, &txn) != KF_OK || kf_store_get_build(txn, a->id, hash, &br) != KF_OK)
        return NULL;
    if (strcmp(br->toolchain ? br->toolchain : "", a->toolchain) != 0 ||
        br->state == KFLEET__TASK_STATE__CANCELLED) {
        kfleet__build_record__free_unpacked(br, NULL);
        return NULL; /* built by another toolchain, or abandoned: build again */
    }
    if (a->nbuilds == a->capbuilds) {
        a->capbuilds = a->capbuilds ? a->capbuilds * 2 : 8;
        a->builds = kf_xrealloc(a->builds, a->capbuilds * sizeof *a->builds);
    }
    kbuild *b = &a->builds[a->nbuilds++];
    memset(b, 0, sizeof *b);
    snprintf(b->hash, sizeof b->hash, "%s", hash);
    b->state = br->state;
    b->task_id = br->task_id;
    snprintf(b->artifact_hash, sizeof b->artifact_hash, "%s",
             br->artifact_hash ? br->artifact_hash : "");
    snprintf(b->built_by, sizeof b->built_by, "%s", br->built_by ? br->built_by : "");
    kfleet__build_record__free_unpacked(br, NULL);
    /* A build that was running when the coordinator stopped is re-checked
     * through its task, which is reloaded as open. */
    return trusted_or_none(c, a, b);
}

kbuild *sched_set_build(kf_coord *c, kagent *a, const char *hash, int state, uint64_t task_id,
                        const char *error, const char *artifact_hash, const char *built_by)
{
    kbuild *b = NULL;
    for (size_t i = 0; i < a->nbuilds; i++)
        if (strcmp(a->builds[i].hash, hash) == 0)
            b = &a->builds[i];
    if (!b) {
        if (a->nbuilds == a->capbuilds) {
            a->capbuilds = a->capbuilds ? a->capbuilds * 2 : 8;
            a->builds = kf_xrealloc(a->builds, a->capbuilds * sizeof *a->builds);
        }
        b = &a->builds[a->nbuilds++];
        memset(b, 0, sizeof *b);
        snprintf(b->hash, sizeof b->hash, "%s", hash);
    }
    b->state = state;
    b->task_id = task_id;
    free(b->error);
    b->error = error ? kf_xstrdup(error) : NULL;
    snprintf(b->artifact_hash, sizeof b->artifact_hash, "%s", artifact_hash ? artifact_hash : "");
    snprintf(b->built_by, sizeof b->built_by, "%s", built_by ? built_by : "");
    const kagent *builder = b->built_by[0] ? sched_agent(c, b->built_by, 0) : NULL;
    Kfleet__BuildRecord br = KFLEET__BUILD_RECORD__INIT;
    br.agent_id = a->id;
    br.kernel_hash = b->hash;
    br.task_id = task_id;
    br.state = (Kfleet__TaskState)state;
    br.toolchain = a->toolchain;
    br.artifact_hash = b->artifact_hash;
    br.built_by = b->built_by;
    br.built_by_key = builder ? (char *)builder->key : "";
    kf_txn *txn;
    if (coord_txn(c, &txn) == KF_OK)
        kf_store_put_build(txn, &br);
    return b;
}

void sched_toolchain(const Kfleet__AgentInfo *info, char out[65])
{
    const Kfleet__PythonFacts *py = info->python;
    const char *parts[32];
    size_t n = 0;
    parts[n++] = info->arch;
    parts[n++] = info->nvcc_version;
    parts[n++] = info->cc_version;
    parts[n++] = info->cuda_compat;
    if (py) {
        const char *p[] = {py->executable, py->version, py->numpy, py->torch,
                           py->torch_cuda, py->triton,  py->cupy};
        for (size_t i = 0; i < sizeof p / sizeof *p; i++)
            parts[n++] = p[i];
    }
    for (size_t g = 0; g < info->n_gpus && n < 32; g++)
        parts[n++] = info->gpus[g]->name;
    kf_hash_part hp[32];
    for (size_t i = 0; i < n; i++) /* each with its NUL: ("ab","") != ("a","b") */
        hp[i] = (kf_hash_part){parts[i] ? parts[i] : "", parts[i] ? strlen(parts[i]) + 1 : 1};
    kf_hash_hex(hp, n, out);
}

/* The store's record of an abandoned build says so (CANCELLED, which
 * sched_agent_build reads as "no build"): left saying "building", it would
 * be read back when the agent returns and its tasks would wait forever. */
static void store_abandoned(kf_coord *c, const kagent *a, const kbuild *b)
{
    Kfleet__BuildRecord br = KFLEET__BUILD_RECORD__INIT;
    br.agent_id = a->id;
    br.kernel_hash = (char *)b->hash;
    br.task_id = b->task_id;
    br.state = KFLEET__TASK_STATE__CANCELLED;
    br.toolchain = (char *)a->toolchain;
    kf_txn *txn;
    if (coord_txn(c, &txn) == KF_OK)
        kf_store_put_build(txn, &br);
}

void sched_forget_build(kf_coord *c, kagent *a, const char *hash)
{
    sched_share_abandon(c, a, hash);
    for (size_t i = 0; i < a->nbuilds; i++) {
        if (strcmp(a->builds[i].hash, hash) == 0) {
            if (!kf_state_terminal(a->builds[i].state))
                store_abandoned(c, a, &a->builds[i]);
            free(a->builds[i].error);
            a->builds[i] = a->builds[--a->nbuilds];
            return;
        }
    }
}

void sched_invalidate_build(kf_coord *c, kagent *a, const char *hash)
{
    kbuild gone;
    memset(&gone, 0, sizeof gone);
    snprintf(gone.hash, sizeof gone.hash, "%s", hash);
    for (size_t i = 0; i < a->nbuilds; i++) /* not sched_agent_build: it calls here */
        if (strcmp(a->builds[i].hash, hash) == 0)
            gone.task_id = a->builds[i].task_id;
    sched_forget_build(c, a, hash);
    store_abandoned(c, a, &gone); /* read back as "no build": built again */
}

/* ---- ending attempts and tasks ---- */

void sched_end_attempt(kf_coord *c, ktask *t, int state, const char *note)
{
    Kfleet__Attempt at = KFLEET__ATTEMPT__INIT;
    at.task_id = t->rec->task_id;
    at.attempt = t->rec->attempts;
    at.agent_id = t->rec->agent_id;
    at.ended_ns = kf_now_ns();
    at.state = (Kfleet__TaskState)state;
    at.note = (char *)(note ? note : "");
    kf_txn *txn;
    Kfleet__Attempt *old = NULL;
    if (coord_txn(c, &txn) != KF_OK)
        return;
    at.assigned_ns = t->assigned_ns;
    if (!at.assigned_ns && kf_store_get_attempt(txn, at.task_id, at.attempt, &old) == KF_OK)
        at.assigned_ns = old->assigned_ns;
    kf_store_put_attempt(txn, &at);
    if (old)
        kfleet__attempt__free_unpacked(old, NULL);
    t->assigned_ns = 0; /* the next attempt's is its own */
}

static void gate_done(kf_coord *c, ksweep *sw, ktask *t, int log);

/* sched_finish; `log` 0 leaves the task.end line out, for a whole sweep
 * cancelled at once (a million lines would be the cancel's cost), which
 * logs one line instead. */
static int finish(kf_coord *c, ksweep *sw, ktask *t, int state, const char *error, int log)
{
    Kfleet__Result r = KFLEET__RESULT__INIT;
    r.task_id = t->rec->task_id;
    r.attempt = t->rec->attempts;
    r.state = (Kfleet__TaskState)state;
    r.error = (char *)(error ? error : "");
    r.agent_id = t->rec->agent_id ? t->rec->agent_id : "";
    r.finished_ns = kf_now_ns();
    kf_txn *txn;
    int rc = coord_txn(c, &txn);
    int dup = 0;
    if (rc == KF_OK)
        rc = kf_store_put_result(txn, &r, &dup);
    sched_release_slot(c, t);
    t->agent = -1;
    sched_set_str(&t->rec->error, error);
    sched_set_state(sw, t, state);
    sched_put_task(c, t);
    if (log)
        kf_info("task.end", "task=0x%llx state=%s error=\"%s\"",
                (unsigned long long)t->rec->task_id, state_name(state), error ? error : "");
    gate_done(c, sw, t, log);
    return rc;
}

int sched_finish(kf_coord *c, ksweep *sw, ktask *t, int state, const char *error)
{
    return finish(c, sw, t, state, error, 1);
}

void sched_gate_done(kf_coord *c, ksweep *sw, ktask *t)
{
    gate_done(c, sw, t, 1);
}

/* A reference task that ended without its references: the candidates'
 * tasks of its configuration could not be judged, so they are skipped. */
static void ref_gate_done(kf_coord *c, ksweep *sw, ktask *t, int log)
{
    if (!t->kind->references || !kf_state_terminal(t->rec->state) ||
        t->rec->state == KFLEET__TASK_STATE__SUCCEEDED)
        return;
    int32_t me = (int32_t)(t - sw->tasks);
    char why[400];
    size_t n = strcspn(t->rec->error ? t->rec->error : "", "\n");
    snprintf(why, sizeof why,
             "skipped: the problem's reference for this configuration was not "
             "computed (%s)%s%.*s",
             state_name(t->rec->state), n ? ": " : "", (int)(n < 300 ? n : 300),
             t->rec->error ? t->rec->error : "");
    for (uint32_t i = 0; i < sw->ntasks; i++) {
        ktask *d = &sw->tasks[i];
        if (d->ref_gate == me && !kf_state_terminal(d->rec->state)) {
            if (d->agent >= 0)
                sched_send_cancel(c, c->agents[d->agent], d->rec->task_id, d->rec->attempts);
            finish(c, sw, d, KFLEET__TASK_STATE__SKIPPED, why, log);
        }
    }
}

static void gate_done(kf_coord *c, ksweep *sw, ktask *t, int log)
{
    ref_gate_done(c, sw, t, log);
    if (t->dependent < 0 || (uint32_t)t->dependent >= sw->ntasks ||
        !kf_state_terminal(t->rec->state) || t->rec->state == KFLEET__TASK_STATE__SUCCEEDED)
        return;
    ktask *d = &sw->tasks[t->dependent];
    if (kf_state_terminal(d->rec->state))
        return;
    char why[400], line[300];
    size_t n = strcspn(t->rec->error ? t->rec->error : "", "\n");
    snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1),
             t->rec->error ? t->rec->error : "");
    snprintf(why, sizeof why, "skipped: its validation did not pass (%s)%s%s",
             state_name(t->rec->state), *line ? ": " : "", line);
    finish(c, sw, d, KFLEET__TASK_STATE__SKIPPED, why, log);
}

void sched_send_cancel(kf_coord *c, const kagent *a, uint64_t task_id, uint32_t attempt)
{
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    Kfleet__Cancel cn = KFLEET__CANCEL__INIT;
    cn.task_id = task_id;
    cn.attempt = attempt;
    env.body_case = KFLEET__ENVELOPE__BODY_CANCEL;
    env.cancel = &cn;
    coord_queue_env(c, a, &env);
}

void sched_cancel_sweep(kf_coord *c, ksweep *sw, const char *why)
{
    uint32_t n = 0;
    sw->rec->cancelled = 1;
    for (uint32_t i = 0; i < sw->ntasks; i++) {
        ktask *t = &sw->tasks[i];
        if (kf_state_terminal(t->rec->state))
            continue;
        if (t->agent >= 0)
            sched_send_cancel(c, c->agents[t->agent], t->rec->task_id, t->rec->attempts);
        finish(c, sw, t, KFLEET__TASK_STATE__CANCELLED, why, 0);
        n++;
    }
    kf_info("sweep.cancel", "sweep=%u tasks=%u why=\"%s\"", sw->rec->sweep_id, n, why);
}

/* Takes the current attempt away from its agent: back to pending while
 * attempts remain, else failed. Builds pinned to a lost agent are cancelled
 * (another agent builds for itself). */
void sched_requeue_as(kf_coord *c, ksweep *sw, ktask *t, int attempt_state, const char *why)
{
    kagent *a = t->agent >= 0 ? c->agents[t->agent] : NULL;
    sched_end_attempt(c, t, attempt_state, why);
    if (a)
        sched_send_cancel(c, a, t->rec->task_id, t->rec->attempts);
    sched_release_slot(c, t);
    t->agent = -1;
    t->confirmed = 0;
    char msg[512];
    if (t->kind->builds && t->pin >= 0) {
        if (a)
            sched_forget_build(c, a, sw->rec->kernels[t->rec->kernel_index]->hash);
        snprintf(msg, sizeof msg, "build abandoned: %s", why);
        sched_finish(c, sw, t, KFLEET__TASK_STATE__CANCELLED, msg);
        sched_maybe_finish_sweep(c, sw);
        return;
    }
    uint32_t max = sw->rec->max_attempts ? sw->rec->max_attempts : 3;
    if (t->rec->attempts >= max) {
        snprintf(msg, sizeof msg, "gave up after %u attempts; the last: %s", t->rec->attempts, why);
        sched_finish(c, sw, t, KFLEET__TASK_STATE__FAILED, msg);
        sched_maybe_finish_sweep(c, sw);
        return;
    }
    sched_set_state(sw, t, KFLEET__TASK_STATE__PENDING);
    sched_put_task(c, t);
    uint32_t idx = (uint32_t)t->rec->task_id;
    if (idx < sw->cursor)
        sw->cursor = idx;
    sched_order_push(sw, idx);
    kf_warn("task.requeue", "task=0x%llx attempt=%u why=\"%s\"",
            (unsigned long long)t->rec->task_id, t->rec->attempts, why);
    c->dispatch_needed = 1;
}

void sched_requeue(kf_coord *c, ksweep *sw, ktask *t, const char *why)
{
    sched_requeue_as(c, sw, t, KFLEET__TASK_STATE__CANCELLED, why);
}

/* ---- restart ---- */

static int load_task(void *ctx, const Kfleet__Task *rec)
{
    void **pp = ctx;
    kf_coord *c = pp[0];
    ksweep *sw = pp[1];
    Kfleet__Task *own = kf_pb_copy(&(rec)->base);
    /* Ids are dense per sweep: fill any hole so idx == position. */
    while (sw->ntasks < (uint32_t)own->task_id) {
        Kfleet__Task *hole = kf_xmalloc(sizeof *hole);
        kfleet__task__init(hole);
        hole->task_id = kf_task_id(sw->rec->sweep_id, sw->ntasks);
        hole->state = KFLEET__TASK_STATE__CANCELLED;
        sched_add_task(c, sw, hole);
    }
    ktask *t = sched_add_task(c, sw, own);
    if (own->state == KFLEET__TASK_STATE__ASSIGNED || own->state == KFLEET__TASK_STATE__RUNNING) {
        /* Its agent has to confirm it once it reconnects, else it is
         * requeued by the grace check (or the lost check). */
        kagent *a = sched_agent(c, own->agent_id ? own->agent_id : "", 1);
        t->agent = sched_agent_index(c, a);
        t->assigned_mono = kf_mono_ns();
        if (a->nrunning == a->caprunning) {
            a->caprunning = a->caprunning ? a->caprunning * 2 : 16;
            a->running = kf_xrealloc(a->running, a->caprunning * sizeof *a->running);
        }
        a->running[a->nrunning++] = own->task_id;
    }
    return 0;
}

static int load_sweep(void *ctx, const Kfleet__Sweep *rec)
{
    kf_coord *c = ctx;
    if (rec->finished_ns)
        return 0;
    ksweep *sw = sched_add_sweep(c, kf_pb_copy(&(rec)->base));
    sw->ran_here = 0; /* its ended tasks' durations are in the store only */
    void *pp[2] = {c, sw};
    kf_txn *txn;
    int rc = coord_txn(c, &txn);
    if (rc)
        return rc;
    rc = kf_store_foreach_task(txn, rec->sweep_id, load_task, pp);
    /* The order is not stored: planned again from the store, as at submit
     * (sched_order.c); a failure to read priors only leaves them out. */
    if (rc == KF_OK)
        sched_order_plan(sw, txn, &c->priors);
    return rc;
}

int sched_load(kf_coord *c, kf_err *err)
{
    kf_txn *txn;
    int rc = coord_txn(c, &txn);
    if (rc)
        return kf_err_set(err, rc, "cannot read the store");
    rc = kf_store_foreach_sweep(txn, load_sweep, c);
    if (rc)
        return kf_err_set(err, rc, "cannot load open sweeps from the store: %s", kf_strerror(rc));
    size_t open = 0;
    for (size_t i = 0; i < c->nsweeps; i++)
        open += c->sweeps[i]->ntasks - sched_terminal_count(c->sweeps[i]);
    if (c->nsweeps)
        kf_info("coordinator.resume", "sweeps=%zu open_tasks=%zu", c->nsweeps, open);
    /* A sweep whose tasks all ended before the crash is finished now. */
    for (size_t i = c->nsweeps; i-- > 0;)
        sched_maybe_finish_sweep(c, c->sweeps[i]);
    return kf_store_commit(&c->txn, err);
}

void sched_agent_lost(kf_coord *c, kagent *a, const char *why)
{
    uint64_t silent = kf_mono_ns() - a->last_seen_mono;
    a->lost = 1;
    a->baseline_recheck = 1; /* the dispatcher ends its baseline tasks */
    c->dispatch_needed = 1;
    /* An agent that said goodbye stopped as asked: not a warning. */
    kf_log(a->stopped ? KF_LOG_INFO : KF_LOG_WARN, a->stopped ? "agent.stopped" : "agent.lost",
           "agent=%s silent_s=%.1f running=%zu why=\"%s\"", a->id, (double)silent / 1e9,
           a->nrunning, why);
    if (a->info) {
        a->info->lost = 1;
        a->info->stopped = a->stopped;
        a->info->last_seen_ns = kf_now_ns() - silent;
        kf_txn *txn;
        if (coord_txn(c, &txn) == KF_OK)
            kf_store_put_agent(txn, a->info);
    }
    while (a->nrunning > 0) {
        ksweep *sw;
        ktask *t = sched_task(c, a->running[a->nrunning - 1], &sw);
        if (!t) {
            a->nrunning--;
            continue;
        }
        sched_requeue(c, sw, t, why);
    }
    /* Builds in flight there will never report: forget them, and let
     * whoever waited for them build for themselves. */
    sched_share_abandon(c, a, NULL);
    for (size_t b = 0; b < a->nbuilds;) {
        if (!kf_state_terminal(a->builds[b].state)) {
            store_abandoned(c, a, &a->builds[b]);
            free(a->builds[b].error);
            a->builds[b] = a->builds[--a->nbuilds];
        } else {
            b++;
        }
    }
}
