/* Tests for common/wire.c: the envelope layer refuses garbage, other
 * versions and empty bodies, and dispatches by body through the table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/wire.h"

#include <string.h>

static int seen_case, seen_calls;

static int on_any(void *ctx, const kf_peer *peer, const Kfleet__Envelope *env)
{
    (void)ctx;
    (void)peer;
    seen_case = (int)env->body_case;
    seen_calls++;
    return 0;
}

static void pack_heartbeat(kf_buf *b, uint32_t version)
{
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    Kfleet__Heartbeat hb = KFLEET__HEARTBEAT__INIT;
    hb.free_cpu_slots = 3;
    env.body_case = KFLEET__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    kf_wire_pack(&env, b);
    if (version != KF_PROTOCOL_VERSION) {
        /* Re-encode with another version, bypassing the stamp. */
        env.version = version;
        size_t n = kfleet__envelope__get_packed_size(&env);
        kf_buf_reset(b);
        kf_buf_grow(b, n);
        kfleet__envelope__pack(&env, (uint8_t *)b->data);
        b->len = n;
    }
}

static void test_roundtrip_dispatch(void **state)
{
    (void)state;
    kf_wire_handler table[KF_WIRE_BODY_MAX] = {0};
    table[KFLEET__ENVELOPE__BODY_HEARTBEAT] = on_any;
    kf_buf b = KF_BUF_INIT;
    pack_heartbeat(&b, KF_PROTOCOL_VERSION);
    kf_err err;
    seen_calls = 0;
    assert_int_equal(kf_wire_dispatch(table, NULL, NULL, b.data, b.len, &err), 0);
    assert_int_equal(seen_calls, 1);
    assert_int_equal(seen_case, KFLEET__ENVELOPE__BODY_HEARTBEAT);
    Kfleet__Envelope *env = kf_wire_unpack(b.data, b.len, &err);
    assert_non_null(env);
    assert_int_equal(env->heartbeat->free_cpu_slots, 3);
    kf_wire_free(env);
    kf_buf_release(&b);
}

static void test_refuses_other_version(void **state)
{
    (void)state;
    kf_wire_handler table[KF_WIRE_BODY_MAX] = {0};
    table[KFLEET__ENVELOPE__BODY_HEARTBEAT] = on_any;
    kf_buf b = KF_BUF_INIT;
    pack_heartbeat(&b, 99);
    kf_err err;
    seen_calls = 0;
    assert_int_equal(kf_wire_dispatch(table, NULL, NULL, b.data, b.len, &err), KF_EPROTO);
    assert_int_equal(seen_calls, 0);
    assert_non_null(strstr(err.msg, "version 99"));
    kf_buf_release(&b);
}

static void test_refuses_garbage_and_empty(void **state)
{
    (void)state;
    kf_wire_handler table[KF_WIRE_BODY_MAX] = {0};
    kf_err err;
    const char junk[] = "\xff\xff\xff\xff\xff\xff\x01";
    assert_int_equal(kf_wire_dispatch(table, NULL, NULL, junk, sizeof junk, &err), KF_EPROTO);
    /* A valid envelope with no body. */
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    kf_buf b = KF_BUF_INIT;
    kf_wire_pack(&env, &b);
    assert_int_equal(kf_wire_dispatch(table, NULL, NULL, b.data, b.len, &err), KF_EPROTO);
    assert_non_null(strstr(err.msg, "no known message"));
    kf_buf_release(&b);
}

static void test_unhandled_body_is_error(void **state)
{
    (void)state;
    kf_wire_handler table[KF_WIRE_BODY_MAX] = {0};
    kf_buf b = KF_BUF_INIT;
    pack_heartbeat(&b, KF_PROTOCOL_VERSION);
    kf_err err;
    assert_int_equal(kf_wire_dispatch(table, NULL, NULL, b.data, b.len, &err), KF_EPROTO);
    assert_non_null(strstr(err.msg, "heartbeat"));
    kf_buf_release(&b);
}

static void test_control_roundtrip(void **state)
{
    (void)state;
    Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
    req.body_case = KFLEET__CONTROL_REQUEST__BODY_PROGRESS;
    req.progress = 42;
    kf_buf b = KF_BUF_INIT;
    kf_ctl_pack_request(&req, &b);
    kf_err err;
    Kfleet__ControlRequest *got = kf_ctl_unpack_request(b.data, b.len, &err);
    assert_non_null(got);
    assert_int_equal(got->progress, 42);
    kfleet__control_request__free_unpacked(got, NULL);
    Kfleet__ControlRequest empty = KFLEET__CONTROL_REQUEST__INIT;
    kf_ctl_pack_request(&empty, &b);
    assert_null(kf_ctl_unpack_request(b.data, b.len, &err));
    kf_buf_release(&b);
}

/* Field number 0 spelled in five bytes: protobuf-c decodes it as an unknown
 * field but cannot decode its own re-encoding, so the coordinator's deep
 * copy (pack + unpack) of such a message would abort. Found by fuzz_control
 * (tests/fuzz/corpus/control/regress-field-zero). */
static void test_refuses_field_number_zero(void **state)
{
    (void)state;
    kf_wire_handler table[KF_WIRE_BODY_MAX] = {0};
    table[KFLEET__ENVELOPE__BODY_REGISTER] = on_any;
    kf_err err;
    /* Envelope{version 1, register{info{agent_id "a0", <field 0> = 1}}} */
    const unsigned char nested[] = {0x08, 0x01, 0x52, 0x0c, 0x0a, 0x0a, 0x0a, 0x02,
                                    'a',  '0',  0x80, 0x80, 0x80, 0x80, 0x00, 0x01};
    seen_calls = 0;
    assert_int_equal(kf_wire_dispatch(table, NULL, NULL, nested, sizeof nested, &err), KF_EPROTO);
    assert_int_equal(seen_calls, 0);
    /* The same without the bad field is a register. */
    unsigned char good[sizeof nested - 6];
    memcpy(good, nested, sizeof good);
    good[3] = 0x06;
    good[5] = 0x04;
    assert_int_equal(kf_wire_dispatch(table, NULL, NULL, good, sizeof good, &err), 0);
    assert_int_equal(seen_calls, 1);

    Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
    req.body_case = KFLEET__CONTROL_REQUEST__BODY_STATUS;
    req.status = 1;
    kf_buf b = KF_BUF_INIT;
    kf_ctl_pack_request(&req, &b);
    kf_buf_add(&b, "\x80\x80\x80\x80\x00\x01", 6);
    assert_null(kf_ctl_unpack_request(b.data, b.len, &err));
    assert_int_equal(err.code, KF_EPROTO);
    Kfleet__ControlReply rep = KFLEET__CONTROL_REPLY__INIT;
    kf_ctl_pack_reply(&rep, &b);
    kf_buf_add(&b, "\x80\x80\x80\x80\x00\x01", 6);
    assert_null(kf_ctl_unpack_reply(b.data, b.len, &err));
    kf_buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_dispatch),
        cmocka_unit_test(test_refuses_other_version),
        cmocka_unit_test(test_refuses_garbage_and_empty),
        cmocka_unit_test(test_unhandled_body_is_error),
        cmocka_unit_test(test_control_roundtrip),
        cmocka_unit_test(test_refuses_field_number_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
