/* wire — the envelope layer: the only place messages are encoded, decoded,
 * version-checked and dispatched.
 *
 * Every agent-link message is one Kfleet__Envelope in one frame (ROUTER
 * sockets prefix the peer identity frame). kf_wire_dispatch decodes a frame,
 * refuses other protocol versions and empty bodies, and calls the handler the
 * table holds for the body case; a body with no handler is an error too. */
#ifndef KF_WIRE_H
#define KF_WIRE_H

#include "common/buf.h"
#include "common/err.h"
#include "proto/control.pb-c.h"
#include "proto/kfleet.pb-c.h"

#include <stddef.h>
#include <stdint.h>

#define KF_PROTOCOL_VERSION 1
/* Frames above this are dropped by ZeroMQ itself (ZMQ_MAXMSGSIZE). */
#define KF_MAX_FRAME (16 * 1024 * 1024)
/* The u32 little-endian length in front of each frame on a runner's pipes
 * (agent/runner/harness.h): tasks in, envelopes out. */
static inline void kf_frame_len_put(uint8_t *p, uint32_t n)
{
    p[0] = (uint8_t)n;
    p[1] = (uint8_t)(n >> 8);
    p[2] = (uint8_t)(n >> 16);
    p[3] = (uint8_t)(n >> 24);
}

static inline uint32_t kf_frame_len_get(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The largest artifact agents share (BuildInfo.artifact, TaskSpec.artifact):
 * with its sources it fits a frame. A larger one each agent builds itself. */
#define KF_MAX_SHARED_ARTIFACT (8 * 1024 * 1024)
/* Highest oneof field number of Envelope.body, plus one. */
#define KF_WIRE_BODY_MAX 32

typedef struct kf_peer {
    const void *id; /* ROUTER identity, NULL on a DEALER */
    size_t id_len;
    const char *user; /* the Z85 Curve key it authenticated with; NULL on a DEALER */
} kf_peer;

/* A handler owns nothing: env is freed after it returns. */
typedef int (*kf_wire_handler)(void *ctx, const kf_peer *peer, const Kfleet__Envelope *env);

/* Encodes env (stamping the protocol version) into out, replacing its content. */
void kf_wire_pack(Kfleet__Envelope *env, kf_buf *out);

/* Decodes one frame; the caller frees the result with kf_wire_free.
 * NULL with KF_EPROTO in err for garbage, another version or no body. */
Kfleet__Envelope *kf_wire_unpack(const void *data, size_t len, kf_err *err);
void kf_wire_free(Kfleet__Envelope *env);

/* Decodes and dispatches one frame through table[body case]. Returns the
 * handler's result, or KF_EPROTO (err filled) when the frame is refused. */
int kf_wire_dispatch(const kf_wire_handler table[KF_WIRE_BODY_MAX], void *ctx, const kf_peer *peer,
                     const void *data, size_t len, kf_err *err);

/* Sends env on a ZeroMQ socket; with peer->id set, as [id][payload]
 * (ROUTER). flags are zmq_send flags (ZMQ_DONTWAIT). Returns 0 or KF_EIO. */
int kf_wire_send(void *sock, const kf_peer *peer, Kfleet__Envelope *env, int flags);

/* Name of a body case for logs ("register", "heartbeat", ...). */
const char *kf_wire_body_name(int body_case);

/* Encodes/decodes a control request or reply (CLI <-> coordinator). */
void kf_ctl_pack_request(Kfleet__ControlRequest *req, kf_buf *out);
void kf_ctl_pack_reply(Kfleet__ControlReply *rep, kf_buf *out);
Kfleet__ControlRequest *kf_ctl_unpack_request(const void *data, size_t len, kf_err *err);
Kfleet__ControlReply *kf_ctl_unpack_reply(const void *data, size_t len, kf_err *err);

#endif
