/* Tests for common/text.c: each mode escapes what its place would act on
 * (terminal controls, Markdown table and HTML syntax) and keeps the rest
 * readable, including valid UTF-8. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/text.h"

#include <string.h>

static char *inert(kf_buf *b, const char *s, kf_text_mode m)
{
    kf_buf_reset(b);
    kf_text_inert(b, s, m);
    return b->data;
}

static void test_line(void **state)
{
    (void)state;
    kf_buf b = KF_BUF_INIT;
    assert_string_equal(inert(&b, "a\x1b[2Kb\x07\r\n\tc\x7f", KF_TEXT_LINE),
                        "a\\x1b[2Kb\\x07\\r\\n\\tc\\x7f");
    /* UTF-8 stays; C1 CSI, a bidi override and an invalid byte do not. */
    assert_string_equal(inert(&b,
                              "µs \xC2\x9B"
                              "31m \xE2\x80\xAE x\xFF",
                              KF_TEXT_LINE),
                        "µs \\u009b31m \\u202e x\\xff");
    /* A sequence cut short is bytes, not a character. */
    assert_string_equal(inert(&b, "\xE2\x80", KF_TEXT_LINE), "\\xe2\\x80");
    assert_string_equal(inert(&b, "| <b> &", KF_TEXT_LINE), "| <b> &");
    kf_buf_release(&b);
}

static void test_block(void **state)
{
    (void)state;
    kf_buf b = KF_BUF_INIT;
    assert_string_equal(inert(&b, "one\n\ttwo\r\x1b]0;t\x07", KF_TEXT_BLOCK),
                        "one\n\ttwo\\r\\x1b]0;t\\x07");
    kf_buf_release(&b);
}

static void test_md(void **state)
{
    (void)state;
    kf_buf b = KF_BUF_INIT;
    assert_string_equal(inert(&b, "a|b <script>x</script> & `c` *d* [e](f)\nnext\x1b", KF_TEXT_MD),
                        "a\\|b &lt;script&gt;x&lt;/script&gt; &amp; \\`c\\` \\*d\\* \\[e\\](f)"
                        "<br>next\\x1b");
    assert_int_equal(kf_text_fence_len("no ticks"), 3);
    assert_int_equal(kf_text_fence_len("a ``` b ```` c"), 5);
    kf_buf_release(&b);
}

static void test_html(void **state)
{
    (void)state;
    kf_buf b = KF_BUF_INIT;
    assert_string_equal(inert(&b, "<a href='x'>\"&\"</a>\n\x1b[1m", KF_TEXT_HTML),
                        "&lt;a href=&#39;x&#39;&gt;&quot;&amp;&quot;&lt;/a&gt;\n\\x1b[1m");
    kf_text_inert(&b, NULL, KF_TEXT_HTML); /* NULL appends nothing */
    kf_text_inert_n(&b, "ab\0c", 4, KF_TEXT_HTML);
    assert_int_equal(memcmp(b.data + b.len - 7, "ab\\x00c", 7), 0);
    kf_buf_release(&b);
}

/* UTF-8 for a JSON string (issue 44): a kernel's error with one byte that
 * is not UTF-8 keeps all its text, the byte shown as "\xff"; nothing else
 * changes, controls included (JSON escapes those itself). */
static void test_utf8(void **state)
{
    (void)state;
    kf_buf b = KF_BUF_INIT;
    const char *s = "bad \xff byte, \xe2\x80 cut, \x1b[1m \xc2\x9b µs";
    kf_text_utf8_n(&b, s, strlen(s));
    assert_string_equal(b.data, "bad \\xff byte, \\xe2\\x80 cut, \x1b[1m \xc2\x9b µs");
    kf_buf_release(&b);
}

/* JSON text as a writer made it: DEL, C1 and the bidi and line controls
 * become \u escapes, which are the same characters to a JSON reader;
 * everything else, valid UTF-8 included, stays. */
static void test_json_escape(void **state)
{
    (void)state;
    kf_buf b = KF_BUF_INIT;
    const char *json = "{\"e\": \"a\x7f \xc2\x80\xc2\x9b\xc2\x9f \xe2\x80\x8e\xe2\x80\x8f "
                       "\xe2\x80\xaa\xe2\x80\xae \xe2\x81\xa6\xe2\x81\xa9 \xe2\x80\xa8 µs "
                       "\xc2\xa0 \xe2\x80\x8d\"}";
    kf_text_json_escape(&b, json, strlen(json));
    assert_string_equal(b.data, "{\"e\": \"a\\u007F \\u0080\\u009B\\u009F \\u200E\\u200F "
                                "\\u202A\\u202E \\u2066\\u2069 \\u2028 µs \xc2\xa0 "
                                "\xe2\x80\x8d\"}");
    kf_buf_release(&b);
}

/* The head of an error or a log: the one helper the scheduler, the
 * report and the runner share. */
static void test_first_lines(void **state)
{
    (void)state;
    char out[32];
    kf_text_first_lines("one\ntwo\nthree\n", 1, out, sizeof out);
    assert_string_equal(out, "one");
    kf_text_first_lines("one\r\ntwo\r\nthree", 2, out, sizeof out);
    assert_string_equal(out, "one\r\ntwo");
    kf_text_first_lines("a\n", 5, out, sizeof out);
    assert_string_equal(out, "a");
    kf_text_first_lines(NULL, 1, out, sizeof out);
    assert_string_equal(out, "");
    /* Cut to fit, never inside a UTF-8 character: "é" is 2 bytes. */
    kf_text_first_lines("abcdefghijklm\xc3\xa9xyz", 1, out, 15);
    assert_string_equal(out, "abcdefghijklm");
    kf_text_first_lines("abcdefghijklmn\xc3\xa9", 1, out, 17);
    assert_string_equal(out, "abcdefghijklmn\xc3\xa9");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line),        cmocka_unit_test(test_block),
        cmocka_unit_test(test_md),          cmocka_unit_test(test_html),
        cmocka_unit_test(test_first_lines), cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_json_escape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
