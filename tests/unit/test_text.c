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
        cmocka_unit_test(test_line), cmocka_unit_test(test_block),       cmocka_unit_test(test_md),
        cmocka_unit_test(test_html), cmocka_unit_test(test_first_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
