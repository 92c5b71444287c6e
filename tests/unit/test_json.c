/* Tests for common/json.c (issue 44): a string that is not UTF-8 is kept,
 * its odd bytes escaped, never replaced or dropped; a document written by
 * kf_json_dumps holds no raw DEL, C1 or bidi control, and reads back as
 * the text that went in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/json.h"

#include <stdlib.h>
#include <string.h>

static void test_str(void **state)
{
    (void)state;
    json_t *v = kf_json_str("error at \xff: \xc3\xa9t\xc3\xa9");
    assert_non_null(v);
    assert_string_equal(json_string_value(v), "error at \\xff: \xc3\xa9t\xc3\xa9");
    json_decref(v);
    v = kf_json_str("plain");
    assert_string_equal(json_string_value(v), "plain");
    json_decref(v);
    v = kf_json_str(NULL);
    assert_true(json_is_null(v));
    json_decref(v);
}

static void test_dumps(void **state)
{
    (void)state;
    /* C1 CSI, RLO, an isolate, DEL and ESC: the kernel's error as written. */
    const char *err = "\xc2\x9b"
                      "31m \xe2\x80\xae"
                      "evil \xe2\x81\xa6x\x7f\x1b[2K";
    json_t *o = json_object();
    json_object_set_new(o, "error", kf_json_str(err));
    char *s = kf_json_dumps(o, JSON_COMPACT);
    assert_non_null(s);
    assert_string_equal(s, "{\"error\":\"\\u009B31m \\u202Eevil \\u2066x\\u007F\\u001B[2K\"}");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        assert_true(*p >= 0x20 && *p < 0x7f);
    json_t *back = json_loads(s, 0, NULL);
    assert_non_null(back);
    assert_string_equal(json_string_value(json_object_get(back, "error")), err);
    json_decref(back);
    free(s);
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_str),
        cmocka_unit_test(test_dumps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
