/* sched_agents — the scheduler's handlers of what agents send (the table
 * kf_sched_handlers that kf_wire_dispatch walks): registration with the
 * identity rules (an id is bound to the key it first registered with, one
 * process holds it at a time), heartbeats, progress, samples and results,
 * each accepted into an attempt only from the agent that holds or held it,
 * while its sweep is open (docs/protocol.md). */
#include "core/problem.h"
#include "daemon/sched_int.h"
#include "common/text.h"
#include "common/log.h"
#include "common/util.h"
#include "common/xalloc.h"
#include "common/taskkind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        a->stopped = 0;
        if (a->info) {
            a->info->lost = 0;
            a->info->stopped = 0;
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
 * waits while the first keeps its heartbeat. Else the refusal names the
 * conflict. */
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
        /* Another process with the same id and key. The one holding the id
         * is alive while it keeps its heartbeat; silent for 3 intervals, it
         * is taken for the dead process this one restarts (a killed agent
         * comes back at once): it is lost now, not at the heartbeat
         * timeout, so its attempts move on without waiting. */
        double live_s = 3 * c->cfg.heartbeat_interval_s;
        if (live_s < 2.0)
            live_s = 2.0;
        if ((double)ago / 1e9 > live_s) {
            char lost[300];
            snprintf(lost, sizeof lost,
                     "agent %s lost: replaced by a new process (host %s pid %u) after %.1f s of "
                     "silence",
                     a->id, info->hostname ? info->hostname : "?", info->pid, (double)ago / 1e9);
            kf_info("agent.replaced", "agent=%s old_pid=%u pid=%u silent_s=%.1f", a->id,
                    a->info->pid, info->pid, (double)ago / 1e9);
            sched_agent_lost(c, a, lost);
            return 1;
        }
        snprintf(why, sizeof why,
                 "agent %s is already connected (host %s pid %u, heard from %.1f s ago); a second "
                 "agent may not take its name: start this one with its own --name. Retrying until "
                 "that agent is silent",
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
    char tc[65];
    sched_toolchain(info, tc);
    if (strcmp(tc, a->toolchain) != 0) {
        /* A new nvcc, compiler, Python or torch: what it built before is
         * not what its cache will be asked for now. */
        sched_share_abandon(c, a, NULL);
        if (a->toolchain[0] && a->nbuilds)
            kf_info("agent.toolchain",
                    "agent=%s why=\"its toolchain changed: %zu builds "
                    "forgotten\"",
                    a->id, a->nbuilds);
        for (size_t b = 0; b < a->nbuilds; b++)
            free(a->builds[b].error);
        a->nbuilds = 0;
        snprintf(a->toolchain, sizeof a->toolchain, "%s", tc);
    }
    sched_share_load_trust(c); /* the operator may have edited it since */
    a->info->registered_at_ns = kf_now_ns();
    a->info->last_seen_ns = a->info->registered_at_ns;
    a->info->lost = 0;
    a->info->stopped = 0;
    a->registered = 1;
    a->lost = 0;
    a->baseline_recheck = 1; /* back: the baseline where its candidates ran */
    a->stopped = 0;
    a->revoked = 0; /* its key passed the allow list on this very frame */
    memcpy(a->route, peer->id, peer->id_len);
    a->route_len = peer->id_len;
    /* The key the id is bound to, and the one a revocation looks for. */
    snprintf(a->key, sizeof a->key, "%s", peer->user ? peer->user : "");
    sched_set_str(&a->info->key, a->key);
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
    int ai = sched_agent_index(c, a);
    const Kfleet__Heartbeat *hb = env->heartbeat;
    for (size_t i = 0; i < hb->n_active; i++) {
        const Kfleet__AttemptRef *ref = hb->active[i];
        ktask *t = sched_task(c, ref->task_id, NULL);
        if (t && t->agent == ai && t->rec->attempts == ref->attempt) {
            if (!t->confirmed && t->slot_gpu < 0) {
                /* Confirmed after a coordinator restart: the slot is taken. */
                ksweep *sw = sched_sweep(c, kf_task_sweep(ref->task_id));
                sched_take_slot(a, t, sched_needs_gpu(sw, t));
            }
            t->confirmed = 1;
        } else if (!t || kf_state_terminal(t->rec->state) || t->agent != ai ||
                   t->rec->attempts != ref->attempt) {
            /* The agent works on an attempt that is no longer its: stop it.
             * (Its result, if one comes, is kept as superseded.) */
            sched_send_cancel(c, a, ref->task_id, ref->attempt);
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
    if (t && t->agent == sched_agent_index(c, a) && t->rec->attempts == p->attempt &&
        p->state == KFLEET__TASK_STATE__RUNNING && t->rec->state == KFLEET__TASK_STATE__ASSIGNED) {
        t->confirmed = 1;
        sched_set_state(sw, t, KFLEET__TASK_STATE__RUNNING);
        sched_put_task(c, t);
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
        kf_debug("frame.dropped", "what=%s agent=%s task=0x%llx attempt=%u why=\"%s\"", what, a->id,
                 (unsigned long long)task_id, attempt, why);
    else if (a->refused <= 10 || (a->refused & (a->refused - 1)) == 0)
        kf_warn("frame.refused",
                "what=%s agent=%s key=%s task=0x%llx attempt=%u why=\"%s\" refused_total=%llu",
                what, a->id, a->key, (unsigned long long)task_id, attempt, why,
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
        if ((rc = kf_store_put_samples(txn, sb->task_id, sb->attempt,
                                       (const Kfleet__Sample *const *)sb->samples, sb->n_samples,
                                       NULL)))
            return rc;
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
    int ai = sched_agent_index(c, a);
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
                if (r->build)
                    r->build->artifact.len = 0; /* nobody asked for it */
                rc = kf_store_put_late(txn, r, &dup);
                if (!dup)
                    kf_info("result.late", "task=0x%llx attempt=%u agent=%s",
                            (unsigned long long)r->task_id, r->attempt, a->id);
            }
        }
        r->agent_id = saved_agent;
        if (rc == KF_OK && env->oseq)
            coord_ack_later(a, env->oseq);
        return rc;
    }
    /* An agent ends an attempt succeeded, failed, timed out or cancelled;
     * skipped is the coordinator's word, and anything else a bad frame. */
    if (!kf_state_terminal(r->state) || r->state == KFLEET__TASK_STATE__SKIPPED)
        r->state = KFLEET__TASK_STATE__FAILED;
    /* The node failed the attempt, not the kernel (docs/sweep-format.md):
     * the attempt ends failed with the agent's reason and the task is tried
     * again while attempts remain. A build pinned to its agent is not. */
    if (r->infra && r->state != KFLEET__TASK_STATE__SUCCEEDED &&
        !(t->kind->builds && t->pin >= 0)) {
        char why[300];
        kf_text_first_lines(r->error, 1, why, sizeof why);
        r->agent_id = saved_agent;
        /* Its cached artifact was not what the build made (and is gone):
         * the agent builds the kernel again before the next try. */
        if (r->artifact_stale && !t->kind->builds) {
            kf_warn("task.artifact_stale", "task=0x%llx agent=%s error=\"%s\"",
                    (unsigned long long)r->task_id, a->id, why);
            sched_invalidate_build(c, a, sw->rec->kernels[t->rec->kernel_index]->hash);
        }
        sched_requeue_as(c, sw, t, KFLEET__TASK_STATE__FAILED, why);
        if (env->oseq)
            coord_ack_later(a, env->oseq);
        return KF_OK;
    }
    if (t->kind->builds)
        sched_share_result(c, a, sw->rec->kernels[t->rec->kernel_index]->hash, r);
    if (t->kind->references && r->state == KFLEET__TASK_STATE__SUCCEEDED) {
        /* A problem's references: into the store once, out of the Result. */
        size_t stored = 0;
        rc = kf_problem_store_result(txn, sw->rec->kernels[t->rec->kernel_index]->hash,
                                     t->rec->params, t->rec->n_params, a->id, kf_now_ns(), r,
                                     &stored);
        if (rc && rc != KF_ENOTFOUND) {
            r->agent_id = saved_agent;
            return rc;
        }
        kf_info("reference.stored", "task=0x%llx stored=%zu of=%zu", (unsigned long long)r->task_id,
                stored, r->n_references);
        rc = KF_OK;
    }
    r->superseded = 0;
    int dup = 0;
    rc = kf_store_put_result(txn, r, &dup);
    r->agent_id = saved_agent;
    if (rc)
        return rc;
    if (dup)
        sw->ran_here = 0; /* the stored result is another: memory cannot say */
    else
        t->elapsed_s = r->elapsed_s;
    sched_end_attempt(c, t, r->state, NULL);
    sched_release_slot(c, t);
    t->agent = -1;
    char line[300];
    kf_text_first_lines(r->error, 1, line, sizeof line);
    sched_set_str(&t->rec->error, line);
    sched_set_state(sw, t, r->state);
    sched_put_task(c, t);
    sched_order_ended(sw, t, r->elapsed_s);
    sched_gate_done(c, sw, t);
    if (t->kind->builds) {
        const char *hash = sw->rec->kernels[t->rec->kernel_index]->hash;
        int st = r->state == KFLEET__TASK_STATE__SUCCEEDED ? KFLEET__TASK_STATE__SUCCEEDED
                                                           : KFLEET__TASK_STATE__FAILED;
        int ok = r->build && st == KFLEET__TASK_STATE__SUCCEEDED;
        sched_set_build(c, a, hash, st, t->rec->task_id, r->error,
                        ok ? r->build->artifact_hash : NULL, ok ? r->build->built_by : NULL);
    }
    kf_debug("task.result", "task=0x%llx attempt=%u agent=%s state=%d",
             (unsigned long long)r->task_id, r->attempt, a->id, r->state);
    if (env->oseq)
        coord_ack_later(a, env->oseq);
    sched_maybe_finish_sweep(c, sw);
    c->dispatch_needed = 1;
    return KF_OK;
}

/* An agent on its way out: gone now, as stopped (what it held is requeued
 * at once instead of after the heartbeat timeout). */
static int on_goodbye(void *ctx, const kf_peer *peer, const Kfleet__Envelope *env)
{
    kf_coord *c = ctx;
    kagent *a = known_agent(c, peer);
    if (!a || a->lost)
        return KF_OK;
    char why[320];
    snprintf(why, sizeof why, "agent %s stopped (%.200s)", a->id,
             env->goodbye->reason && *env->goodbye->reason ? env->goodbye->reason
                                                           : "it said goodbye");
    a->stopped = 1;
    sched_agent_lost(c, a, why);
    c->dispatch_needed = 1;
    return KF_OK;
}

const kf_wire_handler kf_sched_handlers[KF_WIRE_BODY_MAX] = {
    [KFLEET__ENVELOPE__BODY_GOODBYE] = on_goodbye,
    [KFLEET__ENVELOPE__BODY_REGISTER] = on_register,
    [KFLEET__ENVELOPE__BODY_HEARTBEAT] = on_heartbeat,
    [KFLEET__ENVELOPE__BODY_PROGRESS] = on_progress,
    [KFLEET__ENVELOPE__BODY_SAMPLES] = on_samples,
    [KFLEET__ENVELOPE__BODY_RESULT] = on_result,
};
