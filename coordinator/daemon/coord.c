/* coord — the coordinator's loop and sockets; see coord.h.
 *
 * A turn: poll both sockets, drain everything they hold (bounded, so one
 * busy agent cannot starve timers), let the handlers mutate memory and the
 * batch's write transaction, run the periodic checks and the dispatcher,
 * commit, then send. Sending after the commit is what makes an ack mean
 * "durably stored". */
#include "daemon/coord_int.h"
#include "core/seal.h"
#include "common/xalloc.h"
#include "fleet/launches.h"
#include "common/log.h"
#include "fleet/tunnel.h"
#include "common/util.h"
#include "daemon/fdguard.h"

#include <errno.h>
#include <signal.h>
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
    kf_coord *c = kf_xcalloc(1, sizeof *c);
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

    if (!cfg->key_file || !cfg->pub_file || !cfg->allow_file) {
        rc = kf_err_set(err, KF_EINVAL, "the coordinator needs its key and allow-list paths");
        goto fail;
    }
    if ((rc = kf_keys_coordinator(cfg->key_file, cfg->pub_file, &c->keys, err)) ||
        (rc = kf_seal_key(c->store, c->keys.sec, err)) ||
        (rc = kf_allow_load(cfg->allow_file, &c->allow, err)))
        goto fail;
    auth_sort_allow(&c->allow);

    /* Before any socket: libzmq must never see EMFILE (fdguard.h). */
    c->fd_limit = kf_fdguard_arm();
    c->zctx = zmq_ctx_new();
    /* The handler must be bound before any CURVE socket accepts. */
    if ((rc = auth_start_zap(c, err)))
        goto fail;
    c->agents_sock = zmq_socket(c->zctx, ZMQ_ROUTER);
    c->control_sock = zmq_socket(c->zctx, ZMQ_ROUTER);
    int one = 1, zero = 0;
    int64_t maxmsg = KF_MAX_FRAME;
    /* Agents set no routing id: libzmq names each connection, and an agent
     * is bound to the connection it registered on with its key (sched.c).
     * Without handover, a peer that does pick the id of a live connection
     * is not given that connection's traffic. */
    zmq_setsockopt(c->agents_sock, ZMQ_ROUTER_HANDOVER, &zero, sizeof zero);
    /* Sending to a gone agent fails instead of vanishing silently. */
    zmq_setsockopt(c->agents_sock, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
    zmq_setsockopt(c->agents_sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    zmq_setsockopt(c->control_sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    zmq_setsockopt(c->agents_sock, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(c->control_sock, ZMQ_LINGER, &zero, sizeof zero);
    int hwm = 100000;
    zmq_setsockopt(c->agents_sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(c->agents_sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
    /* CURVE on the agent link, loopback included: a port on a pod or a
     * laptop's LAN is reachable by more than the fleet. */
    zmq_setsockopt(c->agents_sock, ZMQ_CURVE_SERVER, &one, sizeof one);
    zmq_setsockopt(c->agents_sock, ZMQ_CURVE_SECRETKEY, c->keys.sec, KF_KEY_Z85 + 1);
    zmq_setsockopt(c->agents_sock, ZMQ_ZAP_DOMAIN, "kfleet", 6);
    /* A connection that has not finished ZMTP and CURVE in 10 s goes: an
     * agent does it in a few round trips, an idle flood holds descriptors. */
    int handshake_ms = 10000;
    zmq_setsockopt(c->agents_sock, ZMQ_HANDSHAKE_IVL, &handshake_ms, sizeof handshake_ms);

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
    /* Launches first: their threads may still ask for tunnels. */
    kf_launches_destroy(&c->launches);
    kf_tunnels_destroy(&c->tunnels);
    kf_store_abort(&c->txn);
    for (size_t i = 0; i < c->nsweeps; i++)
        sched_free_sweep(c->sweeps[i]);
    free(c->sweeps);
    for (size_t i = 0; i < c->nagents; i++)
        sched_free_agent(c->agents[i]);
    free(c->agents);
    free(c->shares);
    sched_priors_free(&c->priors);
    for (size_t i = 0; i < c->ntrusted; i++)
        free(c->trusted[i]);
    free(c->trusted);
    for (size_t i = 0; i < c->nout; i++) {
        free(c->out[i].peer);
        kf_buf_release(&c->out[i].payload);
    }
    free(c->out);
    if (c->agents_sock)
        zmq_close(c->agents_sock);
    if (c->control_sock)
        zmq_close(c->control_sock);
    if (c->zap_sock)
        zmq_close(c->zap_sock);
    if (c->zctx)
        zmq_ctx_term(c->zctx);
    if (c->cfg.endpoint_file)
        unlink(c->cfg.endpoint_file);
    if (c->cfg.control_endpoint && strncmp(c->cfg.control_endpoint, "ipc://", 6) == 0)
        unlink(c->cfg.control_endpoint + 6);
    kf_store_close(&c->store);
    kf_buf_release(&c->scratch);
    kf_allow_free(&c->allow);
    memset(&c->keys, 0, sizeof c->keys);
    free(c);
    *self = NULL;
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
    /* ZAP vetted the key at the handshake; checking it again per frame is
     * what makes a revocation take effect on connections already open. */
    const char *user = zmq_msg_gets(body, "User-Id");
    if (!auth_allowed(c, user)) {
        c->refused_frames++;
        auth_log_refused(c, "auth.frame_refused", user ? user : "(none)",
                         zmq_msg_gets(body, "Peer-Address"));
        return;
    }
    kf_peer p = {zmq_msg_data(peer), zmq_msg_size(peer), user};
    kf_err err;
    kf_err_clear(&err);
    int rc =
        kf_wire_dispatch(kf_sched_handlers, c, &p, zmq_msg_data(body), zmq_msg_size(body), &err);
    if (rc == KF_EPROTO) {
        c->protocol_errors++;
        /* Authenticated, so worth telling: an agent of another version
         * learns why nothing it sends is taken. */
        Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
        Kfleet__Reject rej = KFLEET__REJECT__INIT;
        rej.reason = err.msg;
        rej.frame_bytes = (uint32_t)zmq_msg_size(body);
        rej.coordinator_protocol = KF_PROTOCOL_VERSION;
        env.body_case = KFLEET__ENVELOPE__BODY_REJECT;
        env.reject = &rej;
        kf_wire_send(c->agents_sock, &p, &env, ZMQ_DONTWAIT);
        const kagent *a = sched_agent_by_route(c, p.id, p.id_len);
        kf_warn("agent.bad_frame", "agent=%s key=%s bytes=%zu error=\"%s\" total=%llu",
                a ? a->id : "(unregistered)", user, zmq_msg_size(body), err.msg,
                (unsigned long long)c->protocol_errors);
    }
}

static void send_outgoing(kf_coord *c)
{
    /* Acks first: they release the agents' outboxes. */
    for (size_t i = 0; i < c->nagents; i++) {
        kagent *a = c->agents[i];
        if (!a->nacks)
            continue;
        if (!a->route_len) {
            a->nacks = 0;
            continue;
        }
        Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
        Kfleet__Ack ack = KFLEET__ACK__INIT;
        ack.n_oseq = a->nacks;
        ack.oseq = a->acks;
        env.body_case = KFLEET__ENVELOPE__BODY_ACK;
        env.ack = &ack;
        kf_peer p = {a->route, a->route_len, NULL};
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
            const kagent *a = m->to_control ? NULL : sched_agent_by_route(c, m->peer, m->peer_len);
            kf_debug("send.failed", "to=%s error=\"%s\"",
                     m->to_control ? "cli" : (a ? a->id : "(gone)"), zmq_strerror(errno));
        }
        free(m->peer);
        kf_buf_release(&m->payload);
    }
    c->nout = 0;
}

/* Grows the map before a batch while it is over 3/4 full or has less room
 * than 8 of the largest frames seen, so that a commit never meets
 * MDB_MAP_FULL in normal operation; *budget is how many bytes of agent
 * frames this turn may take (a quarter of the room: LMDB writes whole pages,
 * and a batch's records spread over many). */
static int ensure_room(kf_coord *c, size_t need, size_t *budget, kf_err *err)
{
    size_t used = kf_store_used(c->store), map = kf_store_map_size(c->store);
    while (used * 4 >= map * 3 || map - used < 8 * c->max_frame || (map - used) / 4 < need) {
        int rc = kf_store_grow(c->store, err);
        if (rc)
            return rc;
        map = kf_store_map_size(c->store);
        kf_info("store.grow", "used_mib=%zu map_mib=%zu", used >> 20, map >> 20);
    }
    *budget = (map - used) / 4;
    return KF_OK;
}

/* Commits the turn's transaction. A failure stops the coordinator: memory
 * now runs ahead of the store, and the only safe way on is a restart, which
 * reloads from what was committed. */
static int commit_turn(kf_coord *c, kf_err *err)
{
    int rc = kf_store_commit(&c->txn, err);
    if (rc == KF_OK)
        return KF_OK;
    uint64_t free_b = 0;
    kf_free_bytes(c->cfg.store_dir, &free_b);
    kf_error("store.commit", "error=\"%s\" free_mib=%llu", err->msg,
             (unsigned long long)(free_b >> 20));
    /* LMDB reports a short write on a full disk as an I/O error: the free
     * space says which it was. */
    return kf_err_set(err, rc,
                      "cannot write the store %s: %s (%llu MiB free on its disk); it stops here "
                      "and nothing committed was lost. Free disk space there and start the "
                      "coordinator again",
                      c->cfg.store_dir, err->msg, (unsigned long long)(free_b >> 20));
}

/* Connections fdguard refused, said at once and then at most every 5 s. */
static void log_fd_shed(kf_coord *c, uint64_t now)
{
    uint64_t shed, emfile;
    kf_fdguard_take(&shed, &emfile);
    c->fd_shed += shed;
    c->fd_emfile += emfile;
    if (!(c->fd_shed || c->fd_emfile) || (c->fd_log_mono && now - c->fd_log_mono < 5000000000ull))
        return;
    kf_warn("coordinator.fd_shed",
            "refused=%llu control_emfile=%llu fd_limit=%ld reserve=%ld hint=\"TCP connections "
            "beyond the descriptor limit are closed as they come, keeping a reserve for the "
            "control socket and the store; raise `ulimit -n` if these are agents\"",
            (unsigned long long)c->fd_shed, (unsigned long long)c->fd_emfile, c->fd_limit,
            kf_fdguard_reserve());
    c->fd_shed = c->fd_emfile = 0;
    c->fd_log_mono = now;
}

/* The loop (kf_coord_run) is a turn of small named steps, as Redis's
 * aeMain: poll, let ZAP vet handshakes, drain the agents' frames, drain the
 * control requests, run the periodic checks, dispatch, commit the turn's
 * transaction, send what the turn queued. Each step below is one of them. */

/* What a turn may write to the store before it commits (ensure_room), and
 * what it has written so far, as an estimate from the frames it read. */
typedef struct {
    size_t budget, taken;
} turn_room;

/* What the loop carries from turn to turn. */
typedef struct {
    uint64_t last_check;       /* when the periodic checks last ran */
    unsigned long crash_after; /* test hook: KF_TEST_CRASH_AFTER_COMMITS, 0: off */
    unsigned long commits;
} loop_state;

static int poll_sockets(kf_coord *c, zmq_pollitem_t items[3], kf_err *err)
{
    items[0] = (zmq_pollitem_t){c->agents_sock, 0, ZMQ_POLLIN, 0};
    items[1] = (zmq_pollitem_t){c->control_sock, 0, ZMQ_POLLIN, 0};
    items[2] = (zmq_pollitem_t){c->zap_sock, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(items, 3, 100) < 0 && errno != EINTR)
        return kf_err_set(err, KF_EIO, "poll failed: %s", zmq_strerror(errno));
    return KF_OK;
}

/* ZAP requests: the handshakes CURVE asks the allow list about. */
static void drain_zap(kf_coord *c, const zmq_pollitem_t *zap)
{
    for (int z = 0; z < 64 && (zap->revents & ZMQ_POLLIN); z++) {
        int ev = 0;
        size_t evlen = sizeof ev;
        auth_handle_zap(c);
        if (zmq_getsockopt(c->zap_sock, ZMQ_EVENTS, &ev, &evlen) != 0 || !(ev & ZMQ_POLLIN))
            break;
    }
}

/* At most BATCH_MAX agent frames, within the turn's room. */
static void drain_agents(kf_coord *c, turn_room *room)
{
    int n = 0;
    zmq_msg_t peer, body;
    zmq_msg_init(&peer);
    zmq_msg_init(&body);
    while (n < BATCH_MAX && room->taken < room->budget &&
           recv_routed(c->agents_sock, &peer, &body)) {
        size_t len = zmq_msg_size(&body);
        if (len > c->max_frame)
            c->max_frame = len;
        room->taken += len;
        if (len > 0)
            handle_agent_frame(c, &peer, &body);
        n++;
    }
    if (n < BATCH_MAX && room->taken < room->budget) /* the loop ended on an empty socket */
        c->agents_drained_mono = kf_mono_ns();
    zmq_msg_close(&peer);
    zmq_msg_close(&body);
}

/* At most 64 control requests. A request can write far more than an agent
 * frame (a submit's tasks, then their first assignments): when it may not
 * fit the turn's room, commit what the turn wrote so far and grow the map
 * for it first, so no commit meets a full map. */
static int drain_control(kf_coord *c, turn_room *room, kf_err *err)
{
    int m = 0, rc = KF_OK;
    zmq_msg_t peer, body;
    zmq_msg_init(&peer);
    zmq_msg_init(&body);
    while (m < 64 && recv_routed(c->control_sock, &peer, &body)) {
        size_t len = zmq_msg_size(&body);
        if (len > c->max_frame)
            c->max_frame = len;
        /* Decoded once, for the estimate and the answer. */
        kf_err rerr;
        Kfleet__ControlRequest *req = kf_ctl_unpack_request(zmq_msg_data(&body), len, &rerr);
        size_t need = control_write_estimate(c, req, len);
        if (room->taken + need > room->budget) {
            if ((c->txn && (rc = commit_turn(c, err))) ||
                (rc = ensure_room(c, need, &room->budget, err))) {
                if (req)
                    kfleet__control_request__free_unpacked(req, NULL);
                break;
            }
            room->taken = 0;
        }
        room->taken += need;
        control_answer(c, zmq_msg_data(&peer), zmq_msg_size(&peer), req, len, &rerr);
        if (req)
            kfleet__control_request__free_unpacked(req, NULL);
        m++;
    }
    zmq_msg_close(&peer);
    zmq_msg_close(&body);
    return rc;
}

/* Every 200 ms: refused connections, the allow list, lost agents; then a
 * dispatch, as a lost agent's tasks may go elsewhere. */
static void run_checks(kf_coord *c, loop_state *ls)
{
    uint64_t now = kf_mono_ns();
    if (now - ls->last_check <= 200000000ull)
        return;
    log_fd_shed(c, now);
    auth_refresh_allow(c);
    sched_check_agents(c);
    ls->last_check = now;
    c->dispatch_needed = 1;
}

static void dispatch_if_needed(kf_coord *c)
{
    if (!c->dispatch_needed)
        return;
    c->dispatch_needed = 0;
    sched_dispatch(c);
}

static int commit_step(kf_coord *c, loop_state *ls, kf_err *err)
{
    if (!c->txn)
        return KF_OK;
    int rc = commit_turn(c, err);
    if (rc)
        return rc;
    /* Test hook: die in the one window a random kill rarely hits,
     * committed but nothing sent, so the agents' resend of what is
     * already stored is exercised every time (test_commit_crash). */
    if (ls->crash_after && ++ls->commits == ls->crash_after) {
        kf_warn("coordinator.test_crash", "commits=%lu", ls->commits);
        raise(SIGKILL);
    }
    return KF_OK;
}

/* One turn of the loop; an error ends the loop. */
static int turn(kf_coord *c, loop_state *ls, kf_err *err)
{
    zmq_pollitem_t items[3];
    turn_room room = {0, 0};
    int rc;
    if ((rc = poll_sockets(c, items, err)) || (rc = ensure_room(c, 0, &room.budget, err)))
        return rc;
    drain_zap(c, &items[2]);
    drain_agents(c, &room);
    if ((rc = drain_control(c, &room, err)))
        return rc;
    run_checks(c, ls);
    dispatch_if_needed(c);
    if ((rc = commit_step(c, ls, err)))
        return rc;
    send_outgoing(c);
    return KF_OK;
}

int kf_coord_run(kf_coord *c, volatile sig_atomic_t *stop, kf_err *err)
{
    kf_info("coordinator.start",
            "agents=%s control=%s store=%s heartbeat_timeout_s=%.1f curve_key=%s allowed_keys=%zu "
            "fd_limit=%ld",
            c->agent_endpoint, c->cfg.control_endpoint, c->cfg.store_dir,
            c->cfg.heartbeat_timeout_s, c->keys.pub, c->allow.n, c->fd_limit);
    const char *crash_env = getenv("KF_TEST_CRASH_AFTER_COMMITS");
    loop_state ls = {0, crash_env ? strtoul(crash_env, NULL, 10) : 0, 0};
    int rc = KF_OK;
    c->dispatch_needed = 1;
    while (!rc && !(stop && *stop) && !c->shutdown)
        rc = turn(c, &ls, err);
    kf_store_abort(&c->txn);
    kf_info("coordinator.stop", "reason=%s", rc ? "error" : (c->shutdown ? "shutdown" : "signal"));
    return rc;
}
