/* fuzz_wire — the agent link's envelope layer: kf_wire_dispatch decodes a
 * frame, checks the version and the body, and calls the handler of the body
 * case. Every case has a handler here that does real work with what it was
 * handed (walks every field, re-encodes the message, checks the case and
 * the pointer agree), so a bad pointer from decode or dispatch is an ASan
 * report. Frames are also decoded with kf_wire_unpack on their own, so the
 * refusal paths (other version, no body) are covered. */
#include "fuzz_walk.h"
#include "common/wire.h"

#include <stdlib.h>
#include <string.h>

static volatile uint64_t sink;

struct ctx {
    int calls;
    int last_case;
};

/* The body of the case that is set, found through the descriptor so that a
 * body case added to kfleet.proto is covered without an edit here. */
static const ProtobufCMessage *body_of(const Kfleet__Envelope *env)
{
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field(env->base.descriptor, (unsigned)env->body_case);
    if (!f || f->type != PROTOBUF_C_TYPE_MESSAGE)
        return NULL;
    return *(const ProtobufCMessage *const *)((const char *)env + f->offset);
}

static int on_any(void *vctx, const kf_peer *peer, const Kfleet__Envelope *env)
{
    struct ctx *c = vctx;
    if (env->version != KF_PROTOCOL_VERSION || env->body_case == KFLEET__ENVELOPE__BODY__NOT_SET)
        abort(); /* dispatch promised to refuse these */
    c->calls++;
    c->last_case = (int)env->body_case;
    if (peer && peer->id_len)
        sink ^= ((const unsigned char *)peer->id)[peer->id_len - 1];
    const ProtobufCMessage *body = body_of(env);
    if (!body)
        abort(); /* a dispatched case always carries its message */
    sink ^= kf_fuzz_walk(&env->base);
    sink ^= kf_fuzz_walk(body);
    sink ^= (uint64_t)strlen(kf_wire_body_name(c->last_case));
    kf_fuzz_repack(&env->base);
    return (int)(sink & 1); /* any int must come back as the result */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kf_wire_handler table[KF_WIRE_BODY_MAX];
    for (int i = 0; i < KF_WIRE_BODY_MAX; i++)
        table[i] = on_any;
    /* Half the inputs see a table with holes, like the daemons' real tables
     * (the agent handles no register, the coordinator no welcome). */
    if (size && (data[size - 1] & 1))
        for (int i = 0; i < KF_WIRE_BODY_MAX; i += 2)
            table[i] = NULL;

    static const char peer_id[] = "agent-fuzz";
    kf_peer peer = {.id = peer_id, .id_len = sizeof peer_id - 1};
    struct ctx c = {0, 0};
    kf_err err;
    kf_err_clear(&err);
    int rc = kf_wire_dispatch(table, &c, &peer, data, size, &err);
    if (c.calls > 1)
        abort();
    if (c.calls == 0 && rc != KF_EPROTO)
        abort(); /* refused frames must say so */
    if (rc == KF_EPROTO && (err.code != KF_EPROTO || err.msg[0] == '\0'))
        abort(); /* and say why */

    Kfleet__Envelope *env = kf_wire_unpack(data, size, &err);
    /* Unpack and dispatch share one decode: they may disagree only where
     * the table has a hole. */
    if (!env && c.calls)
        abort();
    if (env && !c.calls && table[env->body_case])
        abort();
    if (env) {
        sink ^= kf_fuzz_walk(&env->base);
        kf_buf b = KF_BUF_INIT;
        kf_wire_pack(env, &b);
        Kfleet__Envelope *again = kf_wire_unpack(b.data, b.len, &err);
        if (!again)
            abort(); /* what we accepted we must be able to send on */
        kf_wire_free(again);
        kf_buf_release(&b);
        kf_wire_free(env);
    }
    return 0;
}
