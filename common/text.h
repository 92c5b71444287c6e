/* text — makes text that a kernel or an agent controls inert for the place it
 * is shown.
 *
 * An error message, a traceback, a kernel's name or description and an
 * agent's hostname come from code nobody reviewed. Printed as they are, an
 * ESC sequence in them can erase the line above and print a green PASS, a
 * BEL rings, a CR overwrites, and in a Markdown report a `|` cuts a table row
 * while a `<script>` becomes part of the page. Every output (the terminal
 * report, `kfleet run`'s progress, the logs, Markdown, HTML) passes such text
 * through the one function below, in the mode of its place. */
#ifndef KF_TEXT_H
#define KF_TEXT_H

#include "common/buf.h"

#include <stddef.h>

typedef enum kf_text_mode {
    /* One line (a log line, a table cell, a progress line): every control
     * character is escaped, newline and tab too ("\n", "\t", "\x1b"). */
    KF_TEXT_LINE,
    /* A block of lines shown as lines: newline and tab stay, every other
     * control character is escaped. */
    KF_TEXT_BLOCK,
    /* Markdown text and table cells: control characters as in LINE, a
     * newline becomes <br>, & < > become entities, and the characters
     * Markdown and GitHub tables give a meaning (` | * _ [ ] \ ~ #) are
     * backslash-escaped, so the text shows as written and cannot end a cell,
     * open a link or add HTML. */
    KF_TEXT_MD,
    /* HTML text and attribute values: & < > " ' as entities, control
     * characters escaped as in BLOCK (newline and tab stay). */
    KF_TEXT_HTML,
} kf_text_mode;

/* Appends the n bytes at s to out, made inert for `mode`. What is escaped
 * besides ASCII controls and DEL, in every mode: bytes that are not valid
 * UTF-8 ("\xff"), the C1 controls U+0080-U+009F (some terminals take U+009B
 * as CSI) and the Unicode controls that reorder or break lines
 * (U+200E-U+200F, U+2028-U+202E, U+2066-U+2069), written "\u202e". The
 * escapes are readable text, so a person still sees what the kernel
 * printed. */
void kf_text_inert_n(kf_buf *out, const char *s, size_t n, kf_text_mode mode);
/* The same for a NUL-terminated s (NULL: nothing). */
void kf_text_inert(kf_buf *out, const char *s, kf_text_mode mode);
/* kf_text_inert(out, s, KF_TEXT_HTML), and the same for a formatted
 * string of up to 1023 bytes: the HTML report's cells, attributes and
 * charts, escaped beside the buffer they go to (git's
 * strbuf_addstr_xml_quoted). */
void kf_text_html(kf_buf *out, const char *s);
void kf_text_htmlf(kf_buf *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends the n bytes at s to out as valid UTF-8, the text kept as
 * written: each byte that is not part of a valid UTF-8 character becomes
 * the text "\xff", and nothing else changes (controls included). For a
 * place that needs UTF-8 but shows the text as it was (a JSON string:
 * kf_json_str), where the old way was to drop the whole text. */
void kf_text_utf8_n(kf_buf *out, const char *s, size_t n);
/* Appends JSON text (n bytes of valid UTF-8, as a JSON writer made it) to
 * out with DEL, the C1 controls and the Unicode controls named above
 * written as JSON escapes ("\u007F", "\u009B", "\u202E": upper case, as
 * jansson writes C0). JSON holds such characters only inside strings,
 * where the escape is the same character: a program reads the text as
 * the kernel wrote it, while a terminal, an editor or a browser showing
 * the file is not steered by it. */
void kf_text_json_escape(kf_buf *out, const char *json, size_t n);
/* The number of backticks (at least 3) of a Markdown code fence that the
 * text s cannot close: one more than its longest run of backticks. Lines
 * inside the fence are shown literally, so they need only KF_TEXT_LINE. */
size_t kf_text_fence_len(const char *s);
/* The first `lines` lines of s (NULL: "") into out, len >= 1 bytes: each
 * line with the '\n' that ends it but the last one, whose "\n" or "\r\n"
 * is left out; cut to len - 1 bytes, never inside a UTF-8 character. The
 * one way kfleet takes the head of an error or a log for a message. */
void kf_text_first_lines(const char *s, int lines, char *out, size_t len);

#endif
