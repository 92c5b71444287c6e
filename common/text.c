/* text — inert text for every output; see text.h.
 *
 * One pass over the bytes, decoding UTF-8 so that multi-byte controls
 * (C1, bidirectional overrides) are found and invalid bytes are shown as
 * escapes rather than handed to a terminal that may read them as C1. */
#include "common/text.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (at most n bytes) and its code
 * point; 0 when it is not valid (overlong, surrogate, cut short). */
static size_t utf8_at(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF)
        len = 2, v = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, v = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, v = c & 0x07, min = 0x10000;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        v = v << 6 | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return len;
}

static int unicode_control(uint32_t cp)
{
    return (cp >= 0x80 && cp <= 0x9F) || (cp >= 0x200E && cp <= 0x200F) ||
           (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

static void add_ascii_control(kf_buf *out, unsigned char c)
{
    switch (c) {
    case '\n':
        kf_buf_adds(out, "\\n");
        break;
    case '\t':
        kf_buf_adds(out, "\\t");
        break;
    case '\r':
        kf_buf_adds(out, "\\r");
        break;
    default:
        kf_buf_addf(out, "\\x%02x", c);
    }
}

void kf_text_inert_n(kf_buf *out, const char *s, size_t n, kf_text_mode mode)
{
    const unsigned char *p = (const unsigned char *)s;
    int plain = mode != KF_TEXT_MD && mode != KF_TEXT_HTML;
    for (size_t i = 0; i < n;) {
        if (plain && p[i] >= 0x20 && p[i] < 0x7F) {
            /* A run of printable ASCII is inert as it is, and is most of
             * a log line: added whole (a byte at a time, each log line of
             * the coordinator cost about 10,000 instructions). */
            size_t j = i + 1;
            while (j < n && p[j] >= 0x20 && p[j] < 0x7F)
                j++;
            kf_buf_add(out, p + i, j - i);
            i = j;
            continue;
        }
        uint32_t cp;
        size_t len = utf8_at(p + i, n - i, &cp);
        if (len == 0) {
            kf_buf_addf(out, "\\x%02x", p[i]);
            i++;
            continue;
        }
        if (len > 1) {
            if (unicode_control(cp))
                kf_buf_addf(out, "\\u%04x", (unsigned)cp);
            else
                kf_buf_add(out, p + i, len);
            i += len;
            continue;
        }
        unsigned char c = p[i++];
        if (c < 0x20 || c == 0x7F) {
            int keep = (c == '\n' || c == '\t') && (mode == KF_TEXT_BLOCK || mode == KF_TEXT_HTML);
            if (keep)
                kf_buf_addc(out, (char)c);
            else if (c == '\n' && mode == KF_TEXT_MD)
                kf_buf_adds(out, "<br>");
            else
                add_ascii_control(out, c);
            continue;
        }
        if (mode == KF_TEXT_MD || mode == KF_TEXT_HTML) {
            const char *ent = c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : NULL;
            if (!ent && mode == KF_TEXT_HTML)
                ent = c == '"' ? "&quot;" : c == '\'' ? "&#39;" : NULL;
            if (ent) {
                kf_buf_adds(out, ent);
                continue;
            }
            if (mode == KF_TEXT_MD && strchr("`|*_[]\\~#", c))
                kf_buf_addc(out, '\\');
        }
        kf_buf_addc(out, (char)c);
    }
}

void kf_text_utf8_n(kf_buf *out, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t len = utf8_at(p + i, n - i, &cp);
        if (len == 0) {
            kf_buf_addf(out, "\\x%02x", p[i++]);
            continue;
        }
        kf_buf_add(out, p + i, len);
        i += len;
    }
}

void kf_text_json_escape(kf_buf *out, const char *json, size_t n)
{
    const unsigned char *p = (const unsigned char *)json;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t len = utf8_at(p + i, n - i, &cp);
        if (len && (cp == 0x7F || unicode_control(cp)))
            kf_buf_addf(out, "\\u%04X", (unsigned)cp); /* upper case, as jansson writes C0 */
        else /* a byte that is not UTF-8 did not come from a JSON writer: kept */
            kf_buf_add(out, p + i, len ? len : 1);
        i += len ? len : 1;
    }
}

void kf_text_inert(kf_buf *out, const char *s, kf_text_mode mode)
{
    if (s)
        kf_text_inert_n(out, s, strlen(s), mode);
}

size_t kf_text_fence_len(const char *s)
{
    size_t best = 0, run = 0;
    for (; s && *s; s++) {
        run = *s == '`' ? run + 1 : 0;
        best = run > best ? run : best;
    }
    return best + 1 > 3 ? best + 1 : 3;
}

void kf_text_first_lines(const char *s, int lines, char *out, size_t len)
{
    s = s ? s : "";
    size_t n = 0;
    for (int k = 0; k < lines && s[n]; k++) {
        if (k && !s[++n]) { /* the '\n' ending the text ends no line */
            n--;
            break;
        }
        n += strcspn(s + n, "\n");
    }
    if (n > 0 && s[n] == '\n' && s[n - 1] == '\r')
        n--;
    if (n >= len) {
        n = len - 1;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    memcpy(out, s, n);
    out[n] = '\0';
}

void kf_text_html(kf_buf *out, const char *s)
{
    kf_text_inert(out, s, KF_TEXT_HTML);
}

void kf_text_htmlf(kf_buf *out, const char *fmt, ...)
{
    char s[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s, sizeof s, fmt, ap);
    va_end(ap);
    kf_text_inert(out, s, KF_TEXT_HTML);
}
