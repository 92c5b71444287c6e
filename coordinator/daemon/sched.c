/* sched — agents, tasks and their dispatch: the coordinator's handlers for
 * what agents send, and the decisions of who runs what.
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
 * Every state change is written into the batch's transaction (coord_txn). */
#include "daemon/coord_int.h"
#include "common/xalloc.h"
#include "common/log.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- lookup and bookkeeping ---- */

/* Replaces a string field of a record. A record unpacked from the store
 * (after a restart) holds protobuf-c's shared empty string wherever the
 * field was empty on the wire; that one must not be freed. */
static void set_str(char **field, const char *value)
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

static int agent_index(kf_coord *c, const kagent *a)
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
    c->sweeps[c->nsweeps++] = sw;
    return sw;
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
    if (rec->pin_agent && *rec->pin_agent)
        t->pin = agent_index(c, sched_agent(c, rec->pin_agent, 1));
    sw->counts[rec->state & 15]++;
    if (rec->kind == KFLEET__TASK_KIND__BUILD)
        sw->bcounts[rec->state & 15]++;
    return t;
}

void sched_free_sweep(ksweep *sw)
{
    if (!sw)
        return;
    for (uint32_t i = 0; i < sw->ntasks; i++)
        kfleet__task__free_unpacked(sw->tasks[i].rec, NULL);
    free(sw->tasks);
    kfleet__sweep__free_unpacked(sw->rec, NULL);
    free(sw);
}

void sched_set_state(ksweep *sw, ktask *t, int state)
{
    sw->counts[t->rec->state & 15]--;
    if (t->rec->kind == KFLEET__TASK_KIND__BUILD) {
        sw->bcounts[t->rec->state & 15]--;
        sw->bcounts[state & 15]++;
    }
    t->rec->state = (Kfleet__TaskState)state;
    t->rec->updated_ns = kf_now_ns();
    sw->counts[state & 15]++;
}

static uint32_t terminal_count(const ksweep *sw)
{
    return sw->counts[KFLEET__TASK_STATE__SUCCEEDED] + sw->counts[KFLEET__TASK_STATE__FAILED] +
           sw->counts[KFLEET__TASK_STATE__TIMED_OUT] + sw->counts[KFLEET__TASK_STATE__CANCELLED];
}

static void put_task(kf_coord *c, const ktask *t)
{
    kf_txn *txn;
    if (coord_txn(c, &txn) == KF_OK && kf_store_put_task(txn, t->rec) != KF_OK)
        kf_error("store.put", "what=task task=%llx", (unsigned long long)t->rec->task_id);
}

/* Removes a finished sweep from memory once all its tasks are terminal. */
void sched_maybe_finish_sweep(kf_coord *c, ksweep *sw)
{
    if (terminal_count(sw) != sw->ntasks)
        return;
    sw->rec->finished_ns = kf_now_ns();
    sw->rec->task_count = sw->ntasks;
    kf_txn *txn;
    if (coord_txn(c, &txn) == KF_OK)
        kf_store_put_sweep(txn, sw->rec);
    kf_info("sweep.finished", "sweep=%u tasks=%u succeeded=%u failed=%u timed_out=%u cancelled=%u",
            sw->rec->sweep_id, sw->ntasks, sw->counts[KFLEET__TASK_STATE__SUCCEEDED],
            sw->counts[KFLEET__TASK_STATE__FAILED], sw->counts[KFLEET__TASK_STATE__TIMED_OUT],
            sw->counts[KFLEET__TASK_STATE__CANCELLED]);
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

static int needs_gpu(const ksweep *sw, const ktask *t)
{
    if (t->rec->kind == KFLEET__TASK_KIND__BUILD)
        return 0;
    return t->rec->kernel_index < sw->rec->n_kernels &&
           sw->rec->kernels[t->rec->kernel_index]->cuda;
}

static int free_gpu(const kagent *a)
{
    for (uint32_t i = 0; i < a->gpu_slots && i < KF_MAX_SLOTS; i++)
        if (!a->gpu_busy[i])
            return (int)i;
    return -1;
}

static void take_slot(kagent *a, ktask *t, int gpu)
{
    if (gpu) {
        int g = free_gpu(a);
        t->gpu_index = g < 0 ? 0 : (uint32_t)g;
        if (g >= 0)
            a->gpu_busy[g] = 1;
        t->slot_gpu = 1;
    } else {
        a->cpu_used++;
        t->slot_gpu = 0;
    }
}

static void release_slot(kf_coord *c, ktask *t)
{
    if (t->agent < 0 || (size_t)t->agent >= c->nagents)
        return;
    kagent *a = c->agents[t->agent];
    if (t->slot_gpu == 1 && t->gpu_index < KF_MAX_SLOTS)
        a->gpu_busy[t->gpu_index] = 0;
    else if (t->slot_gpu == 0 && a->cpu_used > 0)
        a->cpu_used--;
    t->slot_gpu = -1;
    for (size_t i = 0; i < a->nrunning; i++) {
        if (a->running[i] == t->rec->task_id) {
            a->running[i] = a->running[--a->nrunning];
            break;
        }
    }
}

static kbuild *agent_build(kf_coord *c, kagent *a, const char *hash)
{
    for (size_t i = 0; i < a->nbuilds; i++)
        if (strcmp(a->builds[i].hash, hash) == 0)
            return &a->builds[i];
    /* Not in memory: the store may know it (a coordinator restart). */
    Kfleet__BuildRecord *br = NULL;
    kf_txn *txn;
    if (coord_txn(c, &txn) != KF_OK || kf_store_get_build(txn, a->id, hash, &br) != KF_OK)
        return NULL;
    if (a->nbuilds == a->capbuilds) {
        a->capbuilds = a->capbuilds ? a->capbuilds * 2 : 8;
        a->builds = kf_xrealloc(a->builds, a->capbuilds * sizeof *a->builds);
    }
    kbuild *b = &a->builds[a->nbuilds++];
    memset(b, 0, sizeof *b);
    snprintf(b->hash, sizeof b->hash, "%s", hash);
    b->state = br->state;
    b->task_id = br->task_id;
    kfleet__build_record__free_unpacked(br, NULL);
    /* A build that was running when the coordinator stopped is re-checked
     * through its task, which is reloaded as open. */
    return b;
}

static kbuild *set_build(kf_coord *c, kagent *a, const char *hash, int state, uint64_t task_id,
                         const char *error)
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
    Kfleet__BuildRecord br = KFLEET__BUILD_RECORD__INIT;
    br.agent_id = a->id;
    br.kernel_hash = b->hash;
    br.task_id = task_id;
    br.state = (Kfleet__TaskState)state;
    kf_txn *txn;
    if (coord_txn(c, &txn) == KF_OK)
        kf_store_put_build(txn, &br);
    return b;
}

static void forget_build(kagent *a, const char *hash)
{
    for (size_t i = 0; i < a->nbuilds; i++) {
        if (strcmp(a->builds[i].hash, hash) == 0) {
            free(a->builds[i].error);
            a->builds[i] = a->builds[--a->nbuilds];
            return;
        }
    }
}

/* ---- ending attempts and tasks ---- */

static void end_attempt(kf_coord *c, ktask *t, int state, const char *note)
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
    if (kf_store_get_attempt(txn, at.task_id, at.attempt, &old) == KF_OK)
        at.assigned_ns = old->assigned_ns;
    kf_store_put_attempt(txn, &at);
    if (old)
        kfleet__attempt__free_unpacked(old, NULL);
}

int sched_finish(kf_coord *c, ksweep *sw, ktask *t, int state, const char *error)
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
    release_slot(c, t);
    t->agent = -1;
    set_str(&t->rec->error, error);
    sched_set_state(sw, t, state);
    put_task(c, t);
    kf_info("task.end", "task=%llx state=%s error=\"%s\"", (unsigned long long)t->rec->task_id,
            protobuf_c_enum_descriptor_get_value(&kfleet__task_state__descriptor, state)->name,
            error ? error : "");
    return rc;
}

static void send_cancel(kf_coord *c, const kagent *a, uint64_t task_id, uint32_t attempt)
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
    sw->rec->cancelled = 1;
    for (uint32_t i = 0; i < sw->ntasks; i++) {
        ktask *t = &sw->tasks[i];
        if (kf_state_terminal(t->rec->state))
            continue;
        if (t->agent >= 0)
            send_cancel(c, c->agents[t->agent], t->rec->task_id, t->rec->attempts);
        sched_finish(c, sw, t, KFLEET__TASK_STATE__CANCELLED, why);
    }
}

/* Takes the current attempt away from its agent: back to pending while
 * attempts remain, else failed. Builds pinned to a lost agent are cancelled
 * (another agent builds for itself). */
static void requeue_as(kf_coord *c, ksweep *sw, ktask *t, int attempt_state, const char *why)
{
    kagent *a = t->agent >= 0 ? c->agents[t->agent] : NULL;
    end_attempt(c, t, attempt_state, why);
    if (a)
        send_cancel(c, a, t->rec->task_id, t->rec->attempts);
    release_slot(c, t);
    t->agent = -1;
    t->confirmed = 0;
    char msg[512];
    if (t->rec->kind == KFLEET__TASK_KIND__BUILD && t->pin >= 0) {
        if (a)
            forget_build(a, sw->rec->kernels[t->rec->kernel_index]->hash);
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
    put_task(c, t);
    uint32_t idx = (uint32_t)t->rec->task_id;
    if (idx < sw->cursor)
        sw->cursor = idx;
    kf_warn("task.requeue", "task=%llx attempt=%u why=\"%s\"", (unsigned long long)t->rec->task_id,
            t->rec->attempts, why);
    c->dispatch_needed = 1;
}

static void requeue(kf_coord *c, ksweep *sw, ktask *t, const char *why)
{
    requeue_as(c, sw, t, KFLEET__TASK_STATE__CANCELLED, why);
}

/* ---- handlers for agent messages ---- */

/* The agent a frame comes from: the one registered on its connection, with
 * the key its id is bound to. Anything else must register first: it is
 * told so (and then resends its outbox). */
static kagent *known_agent(kf_coord *c, const kf_peer *peer)
{
    kagent *a = sched_agent_by_route(c, peer->id, peer->id_len);
    if (a && a->registered && strcmp(a->key, peer->user ? peer->user : "") != 0) {
        /* Cannot happen while routes are libzmq's own per connection; if it
         * ever does, the frame is not this agent's. */
        kf_warn("agent.key_mismatch", "agent=%s bound_key=%s key=%s", a->id, a->key,
                peer->user ? peer->user : "");
        return NULL;
    }
    if (!a || !a->registered) {
        Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
        Kfleet__Welcome w = KFLEET__WELCOME__INIT;
        w.reregister = 1;
        w.heartbeat_interval_ms = (uint32_t)(c->cfg.heartbeat_interval_s * 1000);
        env.body_case = KFLEET__ENVELOPE__BODY_WELCOME;
        env.welcome = &w;
        coord_queue_route(c, peer->id, peer->id_len, &env);
        return NULL;
    }
    a->last_seen_mono = kf_mono_ns();
    if (a->lost) {
        a->lost = 0;
        if (a->info) {
            a->info->lost = 0;
            kf_txn *txn;
            if (coord_txn(c, &txn) == KF_OK)
                kf_store_put_agent(txn, a->info);
        }
        kf_info("agent.back", "agent=%s", a->id);
        c->dispatch_needed = 1;
    }
    return a;
}

/* Agent ids travel in logs, file names and reports: short and printable. */
static int valid_agent_id(const char *id)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n > 128)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)id[i] <= ' ' || (unsigned char)id[i] >= 0x7f || id[i] == '"')
            return 0;
    return 1;
}

static void refuse_register(kf_coord *c, const kf_peer *peer, Kfleet__RejectKind kind,
                            const char *reason)
{
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    Kfleet__Reject rej = KFLEET__REJECT__INIT;
    rej.reason = (char *)reason;
    rej.kind = kind;
    rej.coordinator_protocol = KF_PROTOCOL_VERSION;
    env.body_case = KFLEET__ENVELOPE__BODY_REJECT;
    env.reject = &rej;
    coord_queue_route(c, peer->id, peer->id_len, &env);
}

/* The key agent a's id is bound to: in memory, else in its stored record
 * (a coordinator restart), else "" (never registered: the first key wins). */
static void bound_key(kf_coord *c, kagent *a)
{
    if (a->key[0])
        return;
    Kfleet__AgentInfo *stored = NULL;
    kf_txn *txn;
    if (coord_txn(c, &txn) == KF_OK && kf_store_get_agent(txn, a->id, &stored) == KF_OK) {
        snprintf(a->key, sizeof a->key, "%s", stored->key ? stored->key : "");
        kfleet__agent_info__free_unpacked(stored, NULL);
    }
}

/* Whether a Register for agent a on this connection may stand. An id is
 * bound to the key it first registered with, for good: another key takes
 * it only once that key has left the allow list (revoked). And one agent
 * process holds an id at a time: a second process with the same id and key
 * waits until the first is lost. Else the refusal names the conflict. */
static int may_register(kf_coord *c, kagent *a, const kf_peer *peer, const Kfleet__AgentInfo *info,
                        int *rebind)
{
    const char *key = peer->user ? peer->user : "";
    char why[600];
    *rebind = 0;
    bound_key(c, a);
    if (a->key[0] && strcmp(a->key, key) != 0) {
        if (auth_allowed(c, a->key)) {
            snprintf(why, sizeof why,
                     "agent id %s is bound to another key (%s); this agent's key is %s. Start it "
                     "with its own --name, or revoke the old key first (kfleet agent-key revoke)",
                     a->id, a->key, key);
            kf_warn("agent.impostor", "agent=%s bound_key=%s key=%s host=%s pid=%u", a->id, a->key,
                    key, info->hostname ? info->hostname : "", info->pid);
            refuse_register(c, peer, KFLEET__REJECT_KIND__REJECT_IDENTITY, why);
            return 0;
        }
        *rebind = 1;
    }
    if (!*rebind && a->registered && !a->lost && a->info && a->route_len &&
        (a->route_len != peer->id_len || memcmp(a->route, peer->id, peer->id_len) != 0) &&
        (a->info->pid != info->pid || strcmp(a->info->hostname ? a->info->hostname : "",
                                             info->hostname ? info->hostname : ""))) {
        uint64_t ago = kf_mono_ns() - a->last_seen_mono;
        snprintf(why, sizeof why,
                 "agent %s is already connected (host %s pid %u, heard from %.1f s ago); a second "
                 "agent may not take its name: start this one with its own --name. Retrying until "
                 "that agent is lost",
                 a->id, a->info->hostname ? a->info->hostname : "?", a->info->pid,
                 (double)ago / 1e9);
        kf_warn("agent.name_in_use", "agent=%s host=%s pid=%u other_host=%s other_pid=%u", a->id,
                a->info->hostname ? a->info->hostname : "", a->info->pid,
                info->hostname ? info->hostname : "", info->pid);
        refuse_register(c, peer, KFLEET__REJECT_KIND__REJECT_NAME_IN_USE, why);
        return 0;
    }
    return 1;
}

static int on_register(void *ctx, const kf_peer *peer, const Kfleet__Envelope *env)
{
    kf_coord *c = ctx;
    const Kfleet__AgentInfo *info = env->register_ ? env->register_->info : NULL;
    if (!info || !valid_agent_id(info->agent_id) || peer->id_len == 0 ||
        peer->id_len > KF_ROUTE_MAX)
        return KF_EPROTO;
    kagent *a = sched_agent(c, info->agent_id, 1);
    int rebind = 0;
    if (!may_register(c, a, peer, info, &rebind))
        return KF_OK;
    if (rebind)
        kf_warn("agent.rebind", "agent=%s old_key=%s key=%s why=\"the old key was revoked\"", a->id,
                a->key, peer->user ? peer->user : "");
    /* Another registered agent on this connection (it re-registered under a
     * new id) gives it up. */
    kagent *prev = sched_agent_by_route(c, peer->id, peer->id_len);
    if (prev && prev != a)
        prev->route_len = 0;
    if (a->info)
        kfleet__agent_info__free_unpacked(a->info, NULL);
    a->info = kf_pb_copy(&(info)->base);
    a->info->registered_at_ns = kf_now_ns();
    a->info->last_seen_ns = a->info->registered_at_ns;
    a->info->lost = 0;
    a->registered = 1;
    a->lost = 0;
    a->revoked = 0; /* its key passed the allow list on this very frame */
    memcpy(a->route, peer->id, peer->id_len);
    a->route_len = peer->id_len;
    /* The key the id is bound to, and the one a revocation looks for. */
    snprintf(a->key, sizeof a->key, "%s", peer->user ? peer->user : "");
    set_str(&a->info->key, a->key);
    a->last_seen_mono = kf_mono_ns();
    a->gpu_slots = info->gpu_slots > KF_MAX_SLOTS ? KF_MAX_SLOTS : info->gpu_slots;
    a->cpu_slots = info->cpu_slots ? info->cpu_slots : 1;
    kf_txn *txn;
    if (coord_txn(c, &txn) == KF_OK)
        kf_store_put_agent(txn, a->info);
    kf_info("agent.register", "agent=%s host=%s gpus=%zu cpu_slots=%u gpu_slots=%u", a->id,
            info->hostname ? info->hostname : "", info->n_gpus, a->cpu_slots, a->gpu_slots);
    Kfleet__Envelope out = KFLEET__ENVELOPE__INIT;
    Kfleet__Welcome w = KFLEET__WELCOME__INIT;
    w.heartbeat_interval_ms = (uint32_t)(c->cfg.heartbeat_interval_s * 1000);
    w.coordinator_version = KF_VERSION;
    out.body_case = KFLEET__ENVELOPE__BODY_WELCOME;
    out.welcome = &w;
    coord_queue_env(c, a, &out);
    c->dispatch_needed = 1;
    return KF_OK;
}

static int on_heartbeat(void *ctx, const kf_peer *peer, const Kfleet__Envelope *env)
{
    kf_coord *c = ctx;
    kagent *a = known_agent(c, peer);
    if (!a)
        return KF_OK;
    int ai = agent_index(c, a);
    const Kfleet__Heartbeat *hb = env->heartbeat;
    for (size_t i = 0; i < hb->n_active; i++) {
        const Kfleet__AttemptRef *ref = hb->active[i];
        ktask *t = sched_task(c, ref->task_id, NULL);
        if (t && t->agent == ai && t->rec->attempts == ref->attempt) {
            if (!t->confirmed && t->slot_gpu < 0) {
                /* Confirmed after a coordinator restart: the slot is taken. */
                ksweep *sw = sched_sweep(c, kf_task_sweep(ref->task_id));
                take_slot(a, t, needs_gpu(sw, t));
            }
            t->confirmed = 1;
        } else if (!t || kf_state_terminal(t->rec->state) || t->agent != ai ||
                   t->rec->attempts != ref->attempt) {
            /* The agent works on an attempt that is no longer its: stop it.
             * (Its result, if one comes, is kept as superseded.) */
            send_cancel(c, a, ref->task_id, ref->attempt);
        }
    }
    return KF_OK;
}

static int on_progress(void *ctx, const kf_peer *peer, const Kfleet__Envelope *env)
{
    kf_coord *c = ctx;
    kagent *a = known_agent(c, peer);
    if (!a)
        return KF_OK;
    const Kfleet__Progress *p = env->progress;
    ksweep *sw;
    ktask *t = sched_task(c, p->task_id, &sw);
    if (t && t->agent == agent_index(c, a) && t->rec->attempts == p->attempt &&
        p->state == KFLEET__TASK_STATE__RUNNING && t->rec->state == KFLEET__TASK_STATE__ASSIGNED) {
        t->confirmed = 1;
        sched_set_state(sw, t, KFLEET__TASK_STATE__RUNNING);
        put_task(c, t);
    }
    if (env->oseq)
        coord_ack_later(a, env->oseq);
    return KF_OK;
}

/* Why agent a may not write into attempt (task_id, attempt), or NULL when
 * it may: it holds that attempt now, or held it (the attempt's record names
 * it) and the task's sweep is still open. *benign is set when a did hold
 * the attempt and only the sweep has finished: an outbox resend after a
 * crash, not an intrusion. */
static const char *no_right(kf_coord *c, const kagent *a, uint64_t task_id, uint32_t attempt,
                            int *benign)
{
    *benign = 0;
    ktask *t = sched_task(c, task_id, NULL);
    if (t && t->agent >= 0 && c->agents[t->agent] == a && t->rec->attempts == attempt)
        return NULL;
    Kfleet__Attempt *at = NULL;
    kf_txn *txn;
    if (attempt == 0 || coord_txn(c, &txn) != KF_OK ||
        kf_store_get_attempt(txn, task_id, attempt, &at) != KF_OK)
        return "no such attempt";
    int mine = strcmp(at->agent_id ? at->agent_id : "", a->id) == 0;
    kfleet__attempt__free_unpacked(at, NULL);
    if (!mine)
        return "the attempt is another agent's";
    if (!t) {
        *benign = 1;
        return "its sweep is finished";
    }
    return NULL;
}

/* A frame refused for want of the right to send it: logged with the key
 * (rate-limited per agent), never stored, and acked so that an agent's
 * outbox does not resend it forever. */
static void refuse_frame(kagent *a, const char *what, uint64_t task_id, uint32_t attempt,
                         const char *why, int benign)
{
    a->refused++;
    if (benign)
        kf_debug("frame.dropped", "what=%s agent=%s task=%llx attempt=%u why=\"%s\"", what, a->id,
                 (unsigned long long)task_id, attempt, why);
    else if (a->refused <= 10 || (a->refused & (a->refused - 1)) == 0)
        kf_warn("frame.refused",
                "what=%s agent=%s key=%s task=%llx attempt=%u why=\"%s\" refused_total=%llu", what,
                a->id, a->key, (unsigned long long)task_id, attempt, why,
                (unsigned long long)a->refused);
}

static int on_samples(void *ctx, const kf_peer *peer, const Kfleet__Envelope *env)
{
    kf_coord *c = ctx;
    kagent *a = known_agent(c, peer);
    if (!a)
        return KF_OK;
    const Kfleet__SampleBatch *sb = env->samples;
    kf_txn *txn;
    int rc = coord_txn(c, &txn);
    if (rc)
        return rc;
    int benign = 0;
    const char *why = no_right(c, a, sb->task_id, sb->attempt, &benign);
    if (why) {
        refuse_frame(a, "samples", sb->task_id, sb->attempt, why, benign);
    } else {
        for (size_t i = 0; i < sb->n_samples; i++) {
            int dup = 0;
            if ((rc = kf_store_put_sample(txn, sb->task_id, sb->attempt, sb->samples[i], &dup)))
                return rc;
        }
        for (size_t i = 0; i < sb->n_telemetry; i++) {
            int dup = 0;
            if ((rc =
                     kf_store_put_telemetry(txn, sb->task_id, sb->attempt, sb->telemetry[i], &dup)))
                return rc;
        }
    }
    if (env->oseq)
        coord_ack_later(a, env->oseq);
    return KF_OK;
}

static void first_line(const char *s, char *out, size_t len)
{
    size_t n = strcspn(s ? s : "", "\n");
    if (n >= len)
        n = len - 1;
    memcpy(out, s ? s : "", n);
    out[n] = '\0';
}

/* Whether r is the very result already stored as its task's terminal
 * record: an agent resends what the coordinator committed but could not ack
 * before it died. Such a resend is no superseded attempt; it is only acked.
 * (A terminal record the coordinator made up for the same attempt, e.g.
 * "gave up", has another agent or finish time, so a real late result of
 * that attempt is still kept.) */
static int is_stored_result(kf_txn *txn, const Kfleet__Result *r)
{
    Kfleet__Result *stored = NULL;
    if (kf_store_get_result(txn, r->task_id, &stored) != KF_OK)
        return 0;
    int same = stored->attempt == r->attempt && stored->finished_ns == r->finished_ns &&
               strcmp(stored->agent_id, r->agent_id ? r->agent_id : "") == 0;
    kfleet__result__free_unpacked(stored, NULL);
    return same;
}

static int on_result(void *ctx, const kf_peer *peer, const Kfleet__Envelope *env)
{
    kf_coord *c = ctx;
    kagent *a = known_agent(c, peer);
    if (!a)
        return KF_OK;
    Kfleet__Result *r = env->result;
    kf_txn *txn;
    int rc = coord_txn(c, &txn);
    if (rc)
        return rc;
    ksweep *sw = NULL;
    ktask *t = sched_task(c, r->task_id, &sw);
    int ai = agent_index(c, a);
    char *saved_agent = r->agent_id;
    r->agent_id = a->id;
    if (!t || kf_state_terminal(t->rec->state) || t->agent != ai ||
        t->rec->attempts != r->attempt) {
        /* Not the current attempt. What was already stored (a resend after
         * a crash) is only acked; a superseded attempt of this agent's, in
         * an open sweep, is kept as a late record and changes nothing;
         * anything else is not this agent's to write. */
        int benign = 0;
        const char *why = NULL;
        if (!is_stored_result(txn, r)) {
            why = no_right(c, a, r->task_id, r->attempt, &benign);
            if (why) {
                refuse_frame(a, "result", r->task_id, r->attempt, why, benign);
            } else {
                int dup = 0;
                r->superseded = 1;
                rc = kf_store_put_late(txn, r, &dup);
                if (!dup)
                    kf_info("result.late", "task=%llx attempt=%u agent=%s",
                            (unsigned long long)r->task_id, r->attempt, a->id);
            }
        }
        r->agent_id = saved_agent;
        if (rc == KF_OK && env->oseq)
            coord_ack_later(a, env->oseq);
        return rc;
    }
    if (!kf_state_terminal(r->state))
        r->state = KFLEET__TASK_STATE__FAILED;
    /* The node failed the attempt, not the kernel (docs/sweep-format.md):
     * the attempt ends failed with the agent's reason and the task is tried
     * again while attempts remain. A build pinned to its agent is not. */
    if (r->infra && r->state != KFLEET__TASK_STATE__SUCCEEDED &&
        !(t->rec->kind == KFLEET__TASK_KIND__BUILD && t->pin >= 0)) {
        char why[300];
        first_line(r->error, why, sizeof why);
        r->agent_id = saved_agent;
        requeue_as(c, sw, t, KFLEET__TASK_STATE__FAILED, why);
        if (env->oseq)
            coord_ack_later(a, env->oseq);
        return KF_OK;
    }
    r->superseded = 0;
    int dup = 0;
    rc = kf_store_put_result(txn, r, &dup);
    r->agent_id = saved_agent;
    if (rc)
        return rc;
    end_attempt(c, t, r->state, NULL);
    release_slot(c, t);
    t->agent = -1;
    char line[300];
    first_line(r->error, line, sizeof line);
    set_str(&t->rec->error, line);
    sched_set_state(sw, t, r->state);
    put_task(c, t);
    if (t->rec->kind == KFLEET__TASK_KIND__BUILD) {
        const char *hash = sw->rec->kernels[t->rec->kernel_index]->hash;
        int st = r->state == KFLEET__TASK_STATE__SUCCEEDED ? KFLEET__TASK_STATE__SUCCEEDED
                                                           : KFLEET__TASK_STATE__FAILED;
        set_build(c, a, hash, st, t->rec->task_id, r->error);
    }
    kf_debug("task.result", "task=%llx attempt=%u agent=%s state=%d",
             (unsigned long long)r->task_id, r->attempt, a->id, r->state);
    if (env->oseq)
        coord_ack_later(a, env->oseq);
    sched_maybe_finish_sweep(c, sw);
    c->dispatch_needed = 1;
    return KF_OK;
}

const kf_wire_handler kf_sched_handlers[KF_WIRE_BODY_MAX] = {
    [KFLEET__ENVELOPE__BODY_REGISTER] = on_register,
    [KFLEET__ENVELOPE__BODY_HEARTBEAT] = on_heartbeat,
    [KFLEET__ENVELOPE__BODY_PROGRESS] = on_progress,
    [KFLEET__ENVELOPE__BODY_SAMPLES] = on_samples,
    [KFLEET__ENVELOPE__BODY_RESULT] = on_result,
};

/* ---- periodic checks ---- */

void sched_check_agents(kf_coord *c)
{
    uint64_t now = kf_mono_ns();
    uint64_t timeout = (uint64_t)(c->cfg.heartbeat_timeout_s * 1e9);
    uint64_t grace = (uint64_t)(c->cfg.assign_grace_s * 1e9);
    for (size_t i = 0; i < c->nagents; i++) {
        kagent *a = c->agents[i];
        if (!a->lost && (a->revoked || (now - a->last_seen_mono > timeout &&
                                        (a->registered || a->nrunning > 0)))) {
            a->lost = 1;
            char why[256];
            if (a->revoked)
                snprintf(why, sizeof why, "agent %s lost: its key was revoked", a->id);
            else
                snprintf(why, sizeof why, "agent %s lost: no heartbeat for %.1f s", a->id,
                         (double)(now - a->last_seen_mono) / 1e9);
            kf_warn("agent.lost", "agent=%s silent_s=%.1f running=%zu", a->id,
                    (double)(now - a->last_seen_mono) / 1e9, a->nrunning);
            if (a->info) {
                a->info->lost = 1;
                a->info->last_seen_ns = kf_now_ns() - (now - a->last_seen_mono);
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
                requeue(c, sw, t, why);
            }
            /* Builds in flight there will never report: forget them. */
            for (size_t b = 0; b < a->nbuilds;) {
                if (!kf_state_terminal(a->builds[b].state)) {
                    free(a->builds[b].error);
                    a->builds[b] = a->builds[--a->nbuilds];
                } else {
                    b++;
                }
            }
            continue;
        }
        /* Assignments the agent never confirmed were lost on the way. */
        for (size_t k = 0; k < a->nrunning;) {
            ksweep *sw;
            ktask *t = sched_task(c, a->running[k], &sw);
            if (t && !t->confirmed && now - t->assigned_mono > grace) {
                char why[256];
                snprintf(why, sizeof why, "agent %s did not confirm the assignment within %.1f s",
                         a->id, c->cfg.assign_grace_s);
                requeue(c, sw, t, why);
                continue; /* requeue removed running[k] */
            }
            k++;
        }
    }
}

/* ---- dispatch ---- */

static void assign(kf_coord *c, ksweep *sw, ktask *t, kagent *a)
{
    int ai = agent_index(c, a);
    t->rec->attempts++;
    set_str(&t->rec->agent_id, a->id);
    t->agent = ai;
    t->assigned_mono = kf_mono_ns();
    t->confirmed = 0;
    take_slot(a, t, needs_gpu(sw, t));
    if (a->nrunning == a->caprunning) {
        a->caprunning = a->caprunning ? a->caprunning * 2 : 16;
        a->running = kf_xrealloc(a->running, a->caprunning * sizeof *a->running);
    }
    a->running[a->nrunning++] = t->rec->task_id;
    sched_set_state(sw, t, KFLEET__TASK_STATE__ASSIGNED);
    put_task(c, t);

    Kfleet__Attempt at = KFLEET__ATTEMPT__INIT;
    at.task_id = t->rec->task_id;
    at.attempt = t->rec->attempts;
    at.agent_id = a->id;
    at.assigned_ns = kf_now_ns();
    at.state = KFLEET__TASK_STATE__ASSIGNED;
    kf_txn *txn;
    if (coord_txn(c, &txn) == KF_OK)
        kf_store_put_attempt(txn, &at);

    const Kfleet__KernelRef *k = sw->rec->kernels[t->rec->kernel_index];
    Kfleet__TaskSpec spec = KFLEET__TASK_SPEC__INIT;
    spec.kind = t->rec->kind;
    spec.kernel = k->name;
    spec.kernel_hash = k->hash;
    if (t->rec->kind == KFLEET__TASK_KIND__BUILD) {
        spec.n_sources = k->n_sources;
        spec.sources = k->sources;
    }
    spec.n_flags = k->n_flags;
    spec.flags = k->flags;
    spec.n_params = t->rec->n_params;
    spec.params = t->rec->params;
    spec.measure = sw->rec->measure;
    spec.time_limit_s = sw->rec->time_limit_s;
    spec.device_cuda = k->cuda;
    Kfleet__TaskAssign ta = KFLEET__TASK_ASSIGN__INIT;
    ta.task_id = t->rec->task_id;
    ta.attempt = t->rec->attempts;
    ta.spec = &spec;
    ta.gpu_index = t->gpu_index;
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    env.body_case = KFLEET__ENVELOPE__BODY_ASSIGN;
    env.assign = &ta;
    coord_queue_env(c, a, &env);
    kf_debug("task.assign", "task=%llx attempt=%u agent=%s kind=%d",
             (unsigned long long)t->rec->task_id, t->rec->attempts, a->id, t->rec->kind);
}

/* Creates the build task of kernel ki pinned to agent a. */
static ktask *new_build(kf_coord *c, ksweep *sw, uint32_t ki, kagent *a)
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
    ktask *t = sched_add_task(c, sw, rec);
    sw->rec->task_count = sw->ntasks;
    kf_txn *txn;
    if (coord_txn(c, &txn) == KF_OK) {
        kf_store_put_task(txn, rec);
        kf_store_put_sweep(txn, sw->rec);
    }
    set_build(c, a, sw->rec->kernels[ki]->hash, KFLEET__TASK_STATE__ASSIGNED, rec->task_id, NULL);
    return t;
}

/* The next task agent a can start now, or NULL. May create a build task
 * (returned) or fail tasks whose build failed on a. */
static ktask *pick(kf_coord *c, kagent *a, int ai, ksweep **sw_out)
{
    int cpu_free = a->cpu_used < a->cpu_slots;
    int gpu_free = free_gpu(a) >= 0;
    /* Every way below to a task (or a build) needs a free slot: an agent
     * with none would only walk every pending task for nothing, and that
     * walk, agents x pending tasks a turn, was over half the coordinator's
     * time dispatching to 64 agents (docs/performance.md). */
    if (!cpu_free && !gpu_free)
        return NULL;
    for (size_t s = 0; s < c->nsweeps; s++) {
        ksweep *sw = c->sweeps[s];
        while (sw->cursor < sw->ntasks &&
               sw->tasks[sw->cursor].rec->state != KFLEET__TASK_STATE__PENDING)
            sw->cursor++;
        for (uint32_t i = sw->cursor; i < sw->ntasks; i++) {
            ktask *t = &sw->tasks[i];
            if (t->rec->state != KFLEET__TASK_STATE__PENDING)
                continue;
            if (t->pin >= 0 && t->pin != ai)
                continue;
            if (t->rec->kind == KFLEET__TASK_KIND__BUILD) {
                if (!cpu_free)
                    continue;
                *sw_out = sw;
                return t;
            }
            int gpu = needs_gpu(sw, t);
            const char *hash = sw->rec->kernels[t->rec->kernel_index]->hash;
            kbuild *b = agent_build(c, a, hash);
            if (gpu ? !gpu_free : !cpu_free) {
                /* Its GPU is busy, but a CPU slot is free: build the kernel
                 * now, so the GPU does not sit idle through nvcc when it
                 * reaches this kernel (on 2xH200 that idle time was 7% of
                 * the makespan of examples/gpu.yaml). */
                if (gpu && cpu_free && !b && a->gpu_slots > 0) {
                    *sw_out = sw;
                    return new_build(c, sw, t->rec->kernel_index, a);
                }
                continue;
            }
            if (b && b->state == KFLEET__TASK_STATE__SUCCEEDED) {
                *sw_out = sw;
                return t;
            }
            if (b && kf_state_terminal(b->state)) {
                char msg[1200];
                /* The first lines of the compiler's complaint, not just
                 * its "compile failed:" header. */
                snprintf(msg, sizeof msg, "the build of %s failed on agent %s: %.1000s",
                         sw->rec->kernels[t->rec->kernel_index]->name, a->id,
                         b->error ? b->error : "build did not succeed");
                char *cut = msg;
                for (int l = 0; l < 4 && cut; l++)
                    cut = strchr(cut + 1, '\n');
                if (cut)
                    *cut = '\0';
                set_str(&t->rec->agent_id, a->id);
                sched_finish(c, sw, t, KFLEET__TASK_STATE__FAILED, msg);
                if (terminal_count(sw) == sw->ntasks) {
                    sched_maybe_finish_sweep(c, sw);
                    return pick(c, a, ai, sw_out);
                }
                continue;
            }
            if (b)
                continue; /* building: wait for it */
            if (!cpu_free)
                continue;
            ktask *bt = new_build(c, sw, t->rec->kernel_index, a);
            *sw_out = sw;
            return bt;
        }
    }
    return NULL;
}

void sched_dispatch(kf_coord *c)
{
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
        t->agent = agent_index(c, a);
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
    void *pp[2] = {c, sw};
    kf_txn *txn;
    int rc = coord_txn(c, &txn);
    if (rc)
        return rc;
    return kf_store_foreach_task(txn, rec->sweep_id, load_task, pp);
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
        open += c->sweeps[i]->ntasks - terminal_count(c->sweeps[i]);
    if (c->nsweeps)
        kf_info("coordinator.resume", "sweeps=%zu open_tasks=%zu", c->nsweeps, open);
    /* A sweep whose tasks all ended before the crash is finished now. */
    for (size_t i = c->nsweeps; i-- > 0;)
        sched_maybe_finish_sweep(c, c->sweeps[i]);
    return kf_store_commit(&c->txn, err);
}
