/* buf — a growable byte/string buffer (after git's strbuf).
 *
 * `data` is always NUL-terminated (an empty buffer points at a static "")
 * so it can be printed as a string; `len` excludes the NUL. Functions that
 * grow the buffer abort on out-of-memory: a daemon cannot go on without it. */
#ifndef KF_BUF_H
#define KF_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct kf_buf {
    char *data;
    size_t len;
    size_t cap;
} kf_buf;

#define KF_BUF_INIT                                                                                \
    {                                                                                              \
        kf_buf_empty, 0, 0                                                                         \
    }
extern char kf_buf_empty[];

void kf_buf_init(kf_buf *b);
void kf_buf_grow(kf_buf *b, size_t extra);
void kf_buf_add(kf_buf *b, const void *data, size_t len);
void kf_buf_adds(kf_buf *b, const char *s);
void kf_buf_addc(kf_buf *b, char c);
void kf_buf_addf(kf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kf_buf_vaddf(kf_buf *b, const char *fmt, va_list ap);
/* Appends s padded with spaces to `width` display columns (UTF-8 aware). */
/* Appends s as one shell word: as is when it holds only characters no
 * shell treats specially, else in single quotes (a ' inside becomes '\'').
 * For every command line kfleet prints for a person to paste: Z85 keys hold
 * $ { ( ) & * ! > <, which bare would break or redirect the command. */
void kf_buf_add_shell_word(kf_buf *b, const char *s);
/* Appends s in single quotes, always (a ' inside becomes '\''): one
 * argument of a command line run by a POSIX shell, here or over SSH. */
void kf_buf_add_shell_quoted(kf_buf *b, const char *s);
void kf_buf_addpad(kf_buf *b, const char *s, int width, int right_align);
void kf_buf_reset(kf_buf *b);
/* Hands the heap string to the caller (who frees it) and re-inits b. */
char *kf_buf_detach(kf_buf *b);
void kf_buf_release(kf_buf *b);
/* Reads a whole file; returns 0 or KF_EIO with errno preserved. */
int kf_buf_read_file(kf_buf *b, const char *path);
/* Reads a whole file that must be a regular file of at most max bytes: a
 * FIFO, device or directory (which would hang or never end) and a file
 * over the limit are refused without reading them. 0; KF_EINVAL with why
 * ("is a FIFO, not a regular file", "is 5368709120 bytes; at most
 * 1048576") or KF_EIO with the system's reason. */
int kf_buf_read_file_max(kf_buf *b, const char *path, size_t max, char *why, size_t whylen);

#endif
