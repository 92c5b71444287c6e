/* wire — envelope encode/decode/dispatch; see wire.h. */
#include "common/wire.h"

#include <zmq.h>

/* protobuf-c (1.4.1) accepts an unknown field whose tag is field number 0
 * when the tag is spelled in more than one byte (80 80 80 80 00), keeps it,
 * and writes it back as the single byte 00, which it then refuses to
 * decode. A message carrying one decodes here but its copy (the
 * coordinator's pack/unpack deep copies, the store) does not: refuse it at
 * the door. Found by tests/fuzz/fuzz_control. */
static int has_field_zero(const ProtobufCMessage *m)
{
    if (!m)
        return 0;
    for (unsigned i = 0; i < m->n_unknown_fields; i++)
        if (m->unknown_fields[i].tag == 0)
            return 1;
    const ProtobufCMessageDescriptor *d = m->descriptor;
    const char *base = (const char *)m;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (f->type != PROTOBUF_C_TYPE_MESSAGE)
            continue;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)(base + f->quantifier_offset);
            ProtobufCMessage *const *arr = *(ProtobufCMessage *const *const *)(base + f->offset);
            for (size_t k = 0; k < n; k++)
                if (has_field_zero(arr[k]))
                    return 1;
            continue;
        }
        if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
            *(const uint32_t *)(base + f->quantifier_offset) != f->id)
            continue;
        if (has_field_zero(*(ProtobufCMessage *const *)(base + f->offset)))
            return 1;
    }
    return 0;
}

/* Packs m (its version set by the caller) into out, NUL-terminated. */
static void pack_msg(const ProtobufCMessage *m, kf_buf *out)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    kf_buf_reset(out);
    kf_buf_grow(out, n);
    protobuf_c_message_pack(m, (uint8_t *)out->data);
    out->len = n;
    out->data[n] = '\0';
}

/* Decodes len bytes as a message of descriptor d, refusing one that does
 * not decode or carries a field 0 (has_field_zero): NULL then, err says
 * "WHAT of LEN bytes does not decode". */
static ProtobufCMessage *unpack_msg(const ProtobufCMessageDescriptor *d, const void *data,
                                    size_t len, const char *what, kf_err *err)
{
    ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, len, data);
    if (!m || has_field_zero(m)) {
        kf_err_set(err, KF_EPROTO, "%s of %zu bytes does not decode", what, len);
        if (m)
            protobuf_c_message_free_unpacked(m, NULL);
        return NULL;
    }
    return m;
}

void kf_wire_pack(Kfleet__Envelope *env, kf_buf *out)
{
    env->version = KF_PROTOCOL_VERSION;
    pack_msg(&env->base, out);
}

Kfleet__Envelope *kf_wire_unpack(const void *data, size_t len, kf_err *err)
{
    Kfleet__Envelope *env = (Kfleet__Envelope *)unpack_msg(&kfleet__envelope__descriptor, data, len,
                                                           "envelope frame", err);
    if (!env)
        return NULL;
    if (env->version != KF_PROTOCOL_VERSION) {
        kf_err_set(err, KF_EPROTO, "protocol version %u, this side speaks %u", env->version,
                   KF_PROTOCOL_VERSION);
        kfleet__envelope__free_unpacked(env, NULL);
        return NULL;
    }
    if (env->body_case == KFLEET__ENVELOPE__BODY__NOT_SET ||
        (int)env->body_case >= KF_WIRE_BODY_MAX) {
        kf_err_set(err, KF_EPROTO, "envelope carries no known message");
        kfleet__envelope__free_unpacked(env, NULL);
        return NULL;
    }
    return env;
}

void kf_wire_free(Kfleet__Envelope *env)
{
    if (env)
        kfleet__envelope__free_unpacked(env, NULL);
}

int kf_wire_dispatch(const kf_wire_handler table[KF_WIRE_BODY_MAX], void *ctx, const kf_peer *peer,
                     const void *data, size_t len, kf_err *err)
{
    Kfleet__Envelope *env = kf_wire_unpack(data, len, err);
    if (!env)
        return KF_EPROTO;
    int bc = (int)env->body_case;
    int rc;
    if (!table[bc])
        rc = kf_err_set(err, KF_EPROTO, "unexpected message '%s' here", kf_wire_body_name(bc));
    else
        rc = table[bc](ctx, peer, env);
    kf_wire_free(env);
    return rc;
}

int kf_wire_send(void *sock, const kf_peer *peer, Kfleet__Envelope *env, int flags)
{
    kf_buf b = KF_BUF_INIT;
    kf_wire_pack(env, &b);
    int rc = KF_OK;
    if (peer && peer->id) {
        if (zmq_send(sock, peer->id, peer->id_len, ZMQ_SNDMORE | flags) < 0)
            rc = KF_EIO;
    }
    if (rc == KF_OK && zmq_send(sock, b.data, b.len, flags) < 0)
        rc = KF_EIO;
    kf_buf_release(&b);
    return rc;
}

const char *kf_wire_body_name(int bc)
{
    switch (bc) {
    case KFLEET__ENVELOPE__BODY_REGISTER:
        return "register";
    case KFLEET__ENVELOPE__BODY_WELCOME:
        return "welcome";
    case KFLEET__ENVELOPE__BODY_HEARTBEAT:
        return "heartbeat";
    case KFLEET__ENVELOPE__BODY_ASSIGN:
        return "assign";
    case KFLEET__ENVELOPE__BODY_PROGRESS:
        return "progress";
    case KFLEET__ENVELOPE__BODY_SAMPLES:
        return "samples";
    case KFLEET__ENVELOPE__BODY_RESULT:
        return "result";
    case KFLEET__ENVELOPE__BODY_ACK:
        return "ack";
    case KFLEET__ENVELOPE__BODY_CANCEL:
        return "cancel";
    case KFLEET__ENVELOPE__BODY_REJECT:
        return "reject";
    case KFLEET__ENVELOPE__BODY_GOODBYE:
        return "goodbye";
    default:
        return "unknown";
    }
}

void kf_ctl_pack_request(Kfleet__ControlRequest *req, kf_buf *out)
{
    req->version = KF_PROTOCOL_VERSION;
    pack_msg(&req->base, out);
}

void kf_ctl_pack_reply(Kfleet__ControlReply *rep, kf_buf *out)
{
    rep->version = KF_PROTOCOL_VERSION;
    pack_msg(&rep->base, out);
}

Kfleet__ControlRequest *kf_ctl_unpack_request(const void *data, size_t len, kf_err *err)
{
    Kfleet__ControlRequest *r = (Kfleet__ControlRequest *)unpack_msg(
        &kfleet__control_request__descriptor, data, len, "control request", err);
    if (!r)
        return NULL;
    if (r->version != KF_PROTOCOL_VERSION ||
        r->body_case == KFLEET__CONTROL_REQUEST__BODY__NOT_SET) {
        kf_err_set(err, KF_EPROTO, "control request of version %u (want %u) or empty", r->version,
                   KF_PROTOCOL_VERSION);
        kfleet__control_request__free_unpacked(r, NULL);
        return NULL;
    }
    return r;
}

Kfleet__ControlReply *kf_ctl_unpack_reply(const void *data, size_t len, kf_err *err)
{
    Kfleet__ControlReply *r = (Kfleet__ControlReply *)unpack_msg(&kfleet__control_reply__descriptor,
                                                                 data, len, "control reply", err);
    if (!r)
        return NULL;
    if (r->version != KF_PROTOCOL_VERSION) {
        kf_err_set(err, KF_EPROTO, "coordinator speaks protocol %u, this kfleet speaks %u",
                   r->version, KF_PROTOCOL_VERSION);
        kfleet__control_reply__free_unpacked(r, NULL);
        return NULL;
    }
    return r;
}
