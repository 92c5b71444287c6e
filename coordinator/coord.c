/* coord — the coordinator's loop and sockets; see coord.h.
 *
 * A turn: poll both sockets, drain everything they hold (bounded, so one
 * busy agent cannot starve timers), let the handlers mutate memory and the
 * batch's write transaction, run the periodic checks and the dispatcher,
 * commit, then send. Sending after the commit is what makes an ack mean
 * "durably stored". */
#include "coord_int.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define BATCH_MAX 4096

static int bind_or_fail(void *sock, const char *ep, const char *what, kf_err *err)
{
    if (zmq_bind(sock, ep) != 0)
        return kf_err_set(err, KF_EIO, "cannot bind the %s socket to %s: %s%s", what, ep,
                          zmq_strerror(errno),
                          errno == EADDRINUSE ? " (another coordinator? pass another --bind "
                                                "or --home)"
                                              : "");
    return KF_OK;
}

int kf_coord_new(const kf_coord_config *cfg, kf_coord **out, kf_err *err)
{
    kf_coord *c = calloc(1, sizeof *c);
    if (!c)
        return kf_err_set(err, KF_ENOMEM, "out of memory");
    c->cfg = *cfg;
    if (c->cfg.heartbeat_interval_s <= 0)
        c->cfg.heartbeat_interval_s = 1.0;
    if (c->cfg.heartbeat_timeout_s <= 0)
        c->cfg.heartbeat_timeout_s = 10.0;
    if (c->cfg.assign_grace_s <= 0)
        c->cfg.assign_grace_s = 5.0;
    c->started_ns = kf_now_ns();
    kf_buf_init(&c->scratch);
    int rc = kf_store_open(cfg->store_dir, 0, &c->store, err);
    if (rc)
        goto fail;

    c->zctx = zmq_ctx_new();
    c->agents_sock = zmq_socket(c->zctx, ZMQ_ROUTER);
    c->control_sock = zmq_socket(c->zctx, ZMQ_ROUTER);
    int one = 1, zero = 0;
    int64_t maxmsg = KF_MAX_FRAME;
    /* An agent that reconnects under its id takes over the old connection. */
    zmq_setsockopt(c->agents_sock, ZMQ_ROUTER_HANDOVER, &one, sizeof one);
    /* Sending to a gone agent fails instead of vanishing silently. */
    zmq_setsockopt(c->agents_sock, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
    zmq_setsockopt(c->agents_sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    zmq_setsockopt(c->control_sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    zmq_setsockopt(c->agents_sock, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(c->control_sock, ZMQ_LINGER, &zero, sizeof zero);
    int hwm = 100000;
    zmq_setsockopt(c->agents_sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(c->agents_sock, ZMQ_RCVHWM, &hwm, sizeof hwm);

    if ((rc = bind_or_fail(c->agents_sock, cfg->agent_bind, "agent", err)))
        goto fail;
    size_t len = sizeof c->agent_endpoint;
    zmq_getsockopt(c->agents_sock, ZMQ_LAST_ENDPOINT, c->agent_endpoint, &len);
    /* A stale control socket of a coordinator that died: the lock file
     * (taken by the caller) says nobody owns it, so it can go. */
    if (strncmp(cfg->control_endpoint, "ipc://", 6) == 0)
        unlink(cfg->control_endpoint + 6);
    if ((rc = bind_or_fail(c->control_sock, cfg->control_endpoint, "control", err)))
        goto fail;
    if (cfg->endpoint_file) {
        char line[300];
        int n = snprintf(line, sizeof line, "%s\n", c->agent_endpoint);
        if ((rc = kf_write_file(cfg->endpoint_file, line, (size_t)n, 0600, err)))
            goto fail;
    }
    if ((rc = sched_load(c, err)))
        goto fail;
    *out = c;
    return KF_OK;
fail:
    kf_coord_destroy(&c);
    return rc;
}

const char *kf_coord_agent_endpoint(const kf_coord *self)
{
    return self->agent_endpoint;
}

void kf_coord_destroy(kf_coord **self)
{
    kf_coord *c = *self;
    if (!c)
        return;
    kf_store_abort(&c->txn);
    for (size_t i = 0; i < c->nsweeps; i++)
        sched_free_sweep(c->sweeps[i]);
    free(c->sweeps);
    for (size_t i = 0; i < c->nagents; i++)
        sched_free_agent(c->agents[i]);
    free(c->agents);
    for (size_t i = 0; i < c->nout; i++) {
        free(c->out[i].peer);
        kf_buf_release(&c->out[i].payload);
    }
    free(c->out);
    if (c->agents_sock)
        zmq_close(c->agents_sock);
    if (c->control_sock)
        zmq_close(c->control_sock);
    if (c->zctx)
        zmq_ctx_term(c->zctx);
    if (c->cfg.endpoint_file)
        unlink(c->cfg.endpoint_file);
    if (c->cfg.control_endpoint && strncmp(c->cfg.control_endpoint, "ipc://", 6) == 0)
        unlink(c->cfg.control_endpoint + 6);
    kf_store_close(&c->store);
    kf_buf_release(&c->scratch);
    free(c);
    *self = NULL;
}

void coord_queue(kf_coord *c, int to_control, const void *peer, size_t peer_len,
                 const kf_buf *payload)
{
    if (c->nout == c->capout) {
        c->capout = c->capout ? c->capout * 2 : 64;
        c->out = realloc(c->out, c->capout * sizeof *c->out);
        if (!c->out)
            abort();
    }
    koutmsg *m = &c->out[c->nout++];
    m->to_control = to_control;
    m->peer = malloc(peer_len ? peer_len : 1);
    if (!m->peer)
        abort();
    memcpy(m->peer, peer, peer_len);
    m->peer_len = peer_len;
    kf_buf_init(&m->payload);
    kf_buf_add(&m->payload, payload->data, payload->len);
}

void coord_queue_env(kf_coord *c, const char *agent_id, Kfleet__Envelope *env)
{
    kf_wire_pack(env, &c->scratch);
    coord_queue(c, 0, agent_id, strlen(agent_id), &c->scratch);
}

void coord_ack_later(kagent *a, uint64_t oseq)
{
    if (a->nacks == a->capacks) {
        a->capacks = a->capacks ? a->capacks * 2 : 64;
        a->acks = realloc(a->acks, a->capacks * sizeof *a->acks);
        if (!a->acks)
            abort();
    }
    a->acks[a->nacks++] = oseq;
}

int coord_txn(kf_coord *c, kf_txn **out)
{
    if (!c->txn) {
        kf_err err;
        int rc = kf_store_begin(c->store, 0, &c->txn, &err);
        if (rc) {
            kf_error("store.begin", "error=\"%s\"", err.msg);
            return rc;
        }
    }
    *out = c->txn;
    return KF_OK;
}

/* Receives one multipart message [peer][payload] without blocking.
 * Returns 1 when one was read, 0 when none waits. */
static int recv_routed(void *sock, zmq_msg_t *peer, zmq_msg_t *body)
{
    if (zmq_msg_recv(peer, sock, ZMQ_DONTWAIT) < 0)
        return 0;
    int more = zmq_msg_more(peer);
    if (!more) {
        /* A lone frame cannot carry a routed message: ignore it. */
        zmq_msg_close(body);
        zmq_msg_init(body);
        return 1;
    }
    zmq_msg_recv(body, sock, 0);
    /* Drain any extra frames a confused peer sent. */
    while (zmq_msg_more(body)) {
        zmq_msg_t extra;
        zmq_msg_init(&extra);
        zmq_msg_recv(&extra, sock, 0);
        zmq_msg_close(&extra);
    }
    return 1;
}

static void handle_agent_frame(kf_coord *c, zmq_msg_t *peer, zmq_msg_t *body)
{
    kf_peer p = {zmq_msg_data(peer), zmq_msg_size(peer)};
    kf_err err;
    kf_err_clear(&err);
    int rc =
        kf_wire_dispatch(kf_sched_handlers, c, &p, zmq_msg_data(body), zmq_msg_size(body), &err);
    if (rc == KF_EPROTO) {
        c->protocol_errors++;
        kf_warn("agent.bad_frame", "peer=%.*s bytes=%zu error=\"%s\" total=%llu",
                (int)(p.id_len > 64 ? 64 : p.id_len), (const char *)p.id, zmq_msg_size(body),
                err.msg, (unsigned long long)c->protocol_errors);
    }
}

static void send_outgoing(kf_coord *c)
{
    /* Acks first: they release the agents' outboxes. */
    for (size_t i = 0; i < c->nagents; i++) {
        kagent *a = c->agents[i];
        if (!a->nacks)
            continue;
        Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
        Kfleet__Ack ack = KFLEET__ACK__INIT;
        ack.n_oseq = a->nacks;
        ack.oseq = a->acks;
        env.body_case = KFLEET__ENVELOPE__BODY_ACK;
        env.ack = &ack;
        kf_peer p = {a->id, strlen(a->id)};
        if (kf_wire_send(c->agents_sock, &p, &env, ZMQ_DONTWAIT) != KF_OK)
            kf_debug("agent.ack_unsent", "agent=%s error=\"%s\"", a->id, zmq_strerror(errno));
        a->nacks = 0;
    }
    for (size_t i = 0; i < c->nout; i++) {
        koutmsg *m = &c->out[i];
        void *sock = m->to_control ? c->control_sock : c->agents_sock;
        if (zmq_send(sock, m->peer, m->peer_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
            zmq_send(sock, m->payload.data, m->payload.len, ZMQ_DONTWAIT) < 0) {
            /* The agent is gone (ROUTER_MANDATORY): its assignments will be
             * requeued by the grace check, nothing else to do here. */
            kf_debug("send.failed", "to=%.*s control=%d error=\"%s\"", (int)m->peer_len,
                     m->to_control ? "cli" : m->peer, m->to_control, zmq_strerror(errno));
        }
        free(m->peer);
        kf_buf_release(&m->payload);
    }
    c->nout = 0;
}

/* Grows the map before a batch when it is over 3/4 full, so that a commit
 * never meets MDB_MAP_FULL in normal operation. */
static int ensure_room(kf_coord *c, kf_err *err)
{
    size_t used = kf_store_used(c->store), map = kf_store_map_size(c->store);
    if (used * 4 < map * 3)
        return KF_OK;
    int rc = kf_store_grow(c->store, err);
    if (rc == KF_OK)
        kf_info("store.grow", "used_mib=%zu map_mib=%zu", used >> 20,
                kf_store_map_size(c->store) >> 20);
    return rc;
}

int kf_coord_run(kf_coord *c, volatile sig_atomic_t *stop, kf_err *err)
{
    kf_info("coordinator.start", "agents=%s control=%s store=%s heartbeat_timeout_s=%.1f",
            c->agent_endpoint, c->cfg.control_endpoint, c->cfg.store_dir,
            c->cfg.heartbeat_timeout_s);
    uint64_t last_check = 0;
    int rc = KF_OK;
    c->dispatch_needed = 1;
    while (!(stop && *stop) && !c->shutdown) {
        zmq_pollitem_t items[2] = {{c->agents_sock, 0, ZMQ_POLLIN, 0},
                                   {c->control_sock, 0, ZMQ_POLLIN, 0}};
        if (zmq_poll(items, 2, 100) < 0 && errno != EINTR) {
            rc = kf_err_set(err, KF_EIO, "poll failed: %s", zmq_strerror(errno));
            break;
        }
        if ((rc = ensure_room(c, err)))
            break;
        int n = 0;
        zmq_msg_t peer, body;
        zmq_msg_init(&peer);
        zmq_msg_init(&body);
        while (n < BATCH_MAX && recv_routed(c->agents_sock, &peer, &body)) {
            if (zmq_msg_size(&body) > 0)
                handle_agent_frame(c, &peer, &body);
            n++;
        }
        int m = 0;
        while (m < 64 && recv_routed(c->control_sock, &peer, &body)) {
            control_handle(c, zmq_msg_data(&peer), zmq_msg_size(&peer), zmq_msg_data(&body),
                           zmq_msg_size(&body));
            m++;
        }
        zmq_msg_close(&peer);
        zmq_msg_close(&body);

        uint64_t now = kf_mono_ns();
        if (now - last_check > 200000000ull) {
            sched_check_agents(c);
            last_check = now;
            c->dispatch_needed = 1;
        }
        if (c->dispatch_needed) {
            c->dispatch_needed = 0;
            sched_dispatch(c);
        }
        if (c->txn) {
            if ((rc = kf_store_commit(&c->txn, err))) {
                /* Memory now runs ahead of the store; the only safe way on is
                 * a restart, which reloads from what was committed. */
                kf_error("store.commit", "error=\"%s\"", err->msg);
                kf_err_set(err, rc,
                           "store commit failed (%s); nothing committed was lost. Free disk "
                           "space under %s and start the coordinator again",
                           err->msg, c->cfg.store_dir);
                break;
            }
        }
        send_outgoing(c);
    }
    kf_store_abort(&c->txn);
    kf_info("coordinator.stop", "reason=%s", rc ? "error" : (c->shutdown ? "shutdown" : "signal"));
    return rc;
}
