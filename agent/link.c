/* link — the agent's side of the coordinator link: what it sends is kept
 * in the outbox (its own LMDB) before it is sent and resent until acked;
 * registration every second until welcomed; heartbeats listing the
 * attempts it runs or holds results for; the DEALER's monitor, which says
 * when a handshake is refused (the key to accept), when the coordinator is
 * lost and when it is back. */
#include "agent/agent_int.h"
#include "common/log.h"
#include "common/util.h"
#include "common/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

struct resend_ctx {
    kf_agent *a;
    uint64_t now, due;
};

static void pending_add(kf_agent *a, uint64_t oseq, uint64_t task, uint32_t attempt, int is_result,
                        uint64_t sent)
{
    if (a->npending == a->cappending) {
        a->cappending = a->cappending ? a->cappending * 2 : 64;
        a->pending = kf_xrealloc(a->pending, a->cappending * sizeof *a->pending);
    }
    a->pending[a->npending++] = (kpending){oseq, task, attempt, is_result, sent};
}

int link_load_pending_cb(void *ctx, uint64_t oseq, const void *data, size_t len)
{
    kf_agent *a = ctx;
    Kfleet__Envelope *env = kf_wire_unpack(data, len, NULL);
    if (!env)
        return 0;
    if (env->body_case == KFLEET__ENVELOPE__BODY_RESULT)
        pending_add(a, oseq, env->result->task_id, env->result->attempt, 1, 0);
    else if (env->body_case == KFLEET__ENVELOPE__BODY_SAMPLES)
        pending_add(a, oseq, env->samples->task_id, env->samples->attempt, 0, 0);
    else
        pending_add(a, oseq, 0, 0, 0, 0);
    kf_wire_free(env);
    return 0;
}

/* Stamps an oseq into env, stores it in the outbox, and sends it when
 * registered. Storing comes first: a message is never sent that a crash
 * could lose. */
void link_emit(kf_agent *a, Kfleet__Envelope *env, uint64_t task, uint32_t attempt, int is_result)
{
    kf_err err;
    env->oseq = kf_outbox_next(a->outbox);
    kf_wire_pack(env, &a->scratch);
    int stored =
        kf_outbox_put(a->outbox, env->oseq, a->scratch.data, a->scratch.len, &err) == KF_OK;
    if (!stored)
        kf_error("outbox.put", "task=0x%llx error=\"%s\"", (unsigned long long)task, err.msg);
    uint64_t sent = 0;
    if (a->welcomed && zmq_send(a->sock, a->scratch.data, a->scratch.len, ZMQ_DONTWAIT) >= 0)
        sent = kf_mono_ns();
    if (stored)
        pending_add(a, env->oseq, task, attempt, is_result, sent);
}

static int resend_cb(void *ctx, uint64_t oseq, const void *data, size_t len)
{
    struct resend_ctx *r = ctx;
    for (size_t i = 0; i < r->a->npending; i++) {
        kpending *p = &r->a->pending[i];
        if (p->oseq != oseq)
            continue;
        if (p->sent_mono && r->now - p->sent_mono < r->due)
            return 0;
        if (zmq_send(r->a->sock, data, len, ZMQ_DONTWAIT) < 0)
            return 1; /* HWM reached: try again next turn */
        p->sent_mono = r->now;
        return 0;
    }
    return 0;
}

void link_resend_due(kf_agent *a)
{
    if (!a->welcomed || a->npending == 0)
        return;
    uint64_t now = kf_mono_ns();
    int any = 0;
    for (size_t i = 0; i < a->npending && !any; i++)
        if (!a->pending[i].sent_mono ||
            now - a->pending[i].sent_mono >= (uint64_t)(a->cfg.resend_s * 1e9))
            any = 1;
    if (!any)
        return;
    struct resend_ctx r = {a, now, (uint64_t)(a->cfg.resend_s * 1e9)};
    kf_outbox_foreach(a->outbox, resend_cb, &r);
}

void link_send_direct(kf_agent *a, Kfleet__Envelope *env)
{
    kf_wire_send(a->sock, NULL, env, ZMQ_DONTWAIT);
}

void link_send_goodbye(kf_agent *a, const char *reason)
{
    Kfleet__Goodbye bye = KFLEET__GOODBYE__INIT;
    bye.reason = (char *)reason;
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    env.body_case = KFLEET__ENVELOPE__BODY_GOODBYE;
    env.goodbye = &bye;
    link_send_direct(a, &env);
}

void link_send_register(kf_agent *a)
{
    uint64_t free_b = 0;
    if (kf_free_bytes(a->workdir, &free_b) == KF_OK)
        a->info->workdir_free_bytes = free_b;
    Kfleet__Register reg = KFLEET__REGISTER__INIT;
    reg.info = a->info;
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    env.body_case = KFLEET__ENVELOPE__BODY_REGISTER;
    env.register_ = &reg;
    link_send_direct(a, &env);
    a->last_register_mono = kf_mono_ns();
}

/* One attempt the heartbeat says is active, at refs[*n]. */
static void add_active(Kfleet__AttemptRef *refs, Kfleet__AttemptRef **ptrs, size_t *n,
                       uint64_t task_id, uint32_t attempt)
{
    kfleet__attempt_ref__init(&refs[*n]);
    refs[*n].task_id = task_id;
    refs[*n].attempt = attempt;
    ptrs[*n] = &refs[*n];
    ++*n;
}

void link_send_heartbeat(kf_agent *a)
{
    Kfleet__AttemptRef refs[MAX_RUNNERS + 256];
    Kfleet__AttemptRef *ptrs[MAX_RUNNERS + 256];
    size_t n = 0;
    for (size_t i = 0; i < a->nrunners && n < MAX_RUNNERS; i++)
        add_active(refs, ptrs, &n, a->runners[i]->task_id, a->runners[i]->attempt);
    for (size_t i = 0; i < a->npending && n < MAX_RUNNERS + 256; i++)
        if (a->pending[i].is_result)
            add_active(refs, ptrs, &n, a->pending[i].task_id, a->pending[i].attempt);
    Kfleet__Heartbeat hb = KFLEET__HEARTBEAT__INIT;
    hb.n_active = n;
    hb.active = ptrs;
    hb.free_cpu_slots = a->info->cpu_slots - a->cpu_used;
    uint32_t gfree = 0;
    for (uint32_t g = 0; g < a->info->gpu_slots && g < 64; g++)
        gfree += !a->gpu_busy[g];
    hb.free_gpu_slots = gfree;
    uint64_t fb = 0;
    kf_free_bytes(a->workdir, &fb);
    hb.workdir_free_bytes = fb;
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    env.body_case = KFLEET__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    link_send_direct(a, &env);
    a->last_hb_mono = kf_mono_ns();
}

/* Monitor events: [u16 event][u32 value] then the endpoint. A refused
 * handshake is logged with our public key, which is what the operator needs
 * to accept it (at most every 10 s: the DEALER retries every 2 s). */
void link_drain_monitor(kf_agent *a)
{
    for (;;) {
        zmq_msg_t ev, ep;
        zmq_msg_init(&ev);
        if (zmq_msg_recv(&ev, a->monitor, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&ev);
            return;
        }
        zmq_msg_init(&ep);
        if (zmq_msg_more(&ev))
            zmq_msg_recv(&ep, a->monitor, 0);
        uint16_t event = 0;
        uint32_t value = 0;
        if (zmq_msg_size(&ev) >= 6) {
            memcpy(&event, zmq_msg_data(&ev), 2);
            memcpy(&value, (const char *)zmq_msg_data(&ev) + 2, 4);
        }
        uint64_t now = kf_mono_ns();
        /* libzmq ends a session whose handshake was refused (a protocol
         * error) and never retries it; an operator may accept the key any
         * moment, so the agent connects again itself. */
        if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH ||
            event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL)
            a->reconnect_mono = now + 2000000000ull;
        if (event == ZMQ_EVENT_DISCONNECTED) {
            /* The coordinator stopped (kfleet stop), died, or the link broke:
             * said once, with what waits to be sent; the DEALER redials. */
            if (a->link_up)
                a->said_lost = 1;
            if (a->link_up)
                kf_warn("agent.coordinator_lost",
                        "coordinator=%s outbox=%zu running=%zu hint=\"the connection closed; "
                        "reconnecting every 2 s, results are kept until acked\"",
                        a->cfg.coordinator, a->npending, a->nrunners);
            a->link_up = 0;
            if (!a->link_down_mono)
                a->link_down_mono = now;
        } else if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
            if (a->last_auth_log_mono)
                kf_info("agent.auth_ok", "coordinator=%s", a->cfg.coordinator);
            if (a->link_down_mono && a->said_lost)
                kf_info("agent.coordinator_back", "coordinator=%s after_s=%.1f", a->cfg.coordinator,
                        (double)(now - a->link_down_mono) / 1e9);
            a->said_lost = 0;
            a->last_auth_log_mono = 0;
            a->link_up = 1;
            a->link_down_mono = 0;
            a->waiting_log_mono = 0;
        } else if (event &&
                   (!a->last_auth_log_mono || now - a->last_auth_log_mono > 10000000000ull)) {
            a->last_auth_log_mono = now;
            if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
                kf_error(
                    "agent.auth_refused",
                    "coordinator=%s status=%u key=%s hint=\"the coordinator does not accept "
                    "this agent's key: run `kfleet agent-key add '%s' NAME` on the coordinator\"",
                    a->cfg.coordinator, value, a->cfg.public_key, a->cfg.public_key);
            else
                kf_error("agent.handshake_failed",
                         "coordinator=%s event=%u errno=%u hint=\"is --server-key the "
                         "coordinator's public key (`kfleet init` prints it)?\"",
                         a->cfg.coordinator, event, value);
        }
        zmq_msg_close(&ev);
        zmq_msg_close(&ep);
    }
}
