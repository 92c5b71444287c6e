/* turn — what one turn of the coordinator's loop accumulates for after its
 * commit: the batch's write transaction, begun on first use, and the
 * messages (replies, assignments, acks) that may only leave once it is
 * committed. The scheduler and the control handlers write through these;
 * the loop (coord.c) commits and sends. Kept apart from the loop so the
 * handlers depend on the turn, not back on the loop. */
#include "daemon/coord_int.h"
#include "common/xalloc.h"
#include "common/log.h"

#include <stdlib.h>
#include <string.h>

void coord_queue(kf_coord *c, int to_control, const void *peer, size_t peer_len,
                 const kf_buf *payload)
{
    if (c->nout == c->capout) {
        c->capout = c->capout ? c->capout * 2 : 64;
        c->out = kf_xrealloc(c->out, c->capout * sizeof *c->out);
    }
    koutmsg *m = &c->out[c->nout++];
    m->to_control = to_control;
    m->peer = kf_xmalloc(peer_len ? peer_len : 1);
    memcpy(m->peer, peer, peer_len);
    m->peer_len = peer_len;
    kf_buf_init(&m->payload);
    kf_buf_add(&m->payload, payload->data, payload->len);
}

void coord_queue_env(kf_coord *c, const kagent *a, Kfleet__Envelope *env)
{
    if (a->route_len)
        coord_queue_route(c, a->route, a->route_len, env);
}

void coord_queue_route(kf_coord *c, const void *route, size_t route_len, Kfleet__Envelope *env)
{
    kf_wire_pack(env, &c->scratch);
    coord_queue(c, 0, route, route_len, &c->scratch);
}

void coord_ack_later(kagent *a, uint64_t oseq)
{
    if (a->nacks == a->capacks) {
        a->capacks = a->capacks ? a->capacks * 2 : 64;
        a->acks = kf_xrealloc(a->acks, a->capacks * sizeof *a->acks);
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
