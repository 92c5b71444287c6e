/* buf — growable buffer; see buf.h. */
#include "common/buf.h"
#include "common/xalloc.h"
#include "common/err.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

char kf_buf_empty[1];

void kf_buf_init(kf_buf *b)
{
    b->data = kf_buf_empty;
    b->len = 0;
    b->cap = 0;
}

void kf_buf_grow(kf_buf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *p = b->cap ? kf_xrealloc(b->data, cap) : kf_xmalloc(cap);
    if (!b->cap)
        p[0] = '\0';
    b->data = p;
    b->cap = cap;
}

void kf_buf_add(kf_buf *b, const void *data, size_t len)
{
    kf_buf_grow(b, len);
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
}

void kf_buf_adds(kf_buf *b, const char *s)
{
    kf_buf_add(b, s, strlen(s));
}

void kf_buf_addc(kf_buf *b, char c)
{
    kf_buf_add(b, &c, 1);
}

void kf_buf_vaddf(kf_buf *b, const char *fmt, va_list ap)
{
    va_list cp;
    va_copy(cp, ap);
    int n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n < 0)
        return;
    kf_buf_grow(b, (size_t)n);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void kf_buf_addf(kf_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kf_buf_vaddf(b, fmt, ap);
    va_end(ap);
}

static int display_width(const char *s)
{
    int w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            w++;
    return w;
}

void kf_buf_addpad(kf_buf *b, const char *s, int width, int right_align)
{
    int pad = width - display_width(s);
    if (right_align)
        for (int i = 0; i < pad; i++)
            kf_buf_addc(b, ' ');
    kf_buf_adds(b, s);
    if (!right_align)
        for (int i = 0; i < pad; i++)
            kf_buf_addc(b, ' ');
}

void kf_buf_reset(kf_buf *b)
{
    b->len = 0;
    if (b->cap)
        b->data[0] = '\0';
}

char *kf_buf_detach(kf_buf *b)
{
    char *p = b->cap ? b->data : kf_xstrdup("");
    kf_buf_init(b);
    return p;
}

void kf_buf_release(kf_buf *b)
{
    if (b->cap)
        free(b->data);
    kf_buf_init(b);
}

int kf_buf_read_file(kf_buf *b, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return KF_EIO;
    char tmp[65536];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0)
        kf_buf_add(b, tmp, n);
    int bad = ferror(f);
    int saved = errno;
    fclose(f);
    errno = saved;
    return bad ? KF_EIO : KF_OK;
}

static const char *file_kind(mode_t m)
{
    return S_ISFIFO(m)   ? "a FIFO"
           : S_ISDIR(m)  ? "a directory"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "not a regular file";
}

int kf_buf_read_file_max(kf_buf *b, const char *path, size_t max, char *why, size_t whylen)
{
    /* O_NONBLOCK: opening a FIFO with no writer must not wait for one. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        snprintf(why, whylen, "%s", strerror(errno));
        return KF_EIO;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(why, whylen, "%s", strerror(errno));
        close(fd);
        return KF_EIO;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "is %s, not a regular file", file_kind(st.st_mode));
        close(fd);
        return KF_EINVAL;
    }
    if ((unsigned long long)st.st_size > max) {
        snprintf(why, whylen, "is %lld bytes; at most %zu", (long long)st.st_size, max);
        close(fd);
        return KF_EINVAL;
    }
    size_t start = b->len, got = 0;
    char tmp[65536];
    for (;;) {
        ssize_t n = read(fd, tmp, sizeof tmp);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(why, whylen, "%s", strerror(errno));
            close(fd);
            b->len = start;
            return KF_EIO;
        }
        if (n == 0)
            break;
        got += (size_t)n;
        if (got > max) { /* it grew while read */
            snprintf(why, whylen, "grew past %zu bytes while read", max);
            close(fd);
            b->len = start;
            if (b->data)
                b->data[start] = '\0';
            return KF_EINVAL;
        }
        kf_buf_add(b, tmp, (size_t)n);
    }
    close(fd);
    return KF_OK;
}

void kf_buf_add_shell_word(kf_buf *b, const char *s)
{
    static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                               "_-./:@%+=,";
    if (*s && strspn(s, safe) == strlen(s))
        kf_buf_adds(b, s);
    else
        kf_buf_add_shell_quoted(b, s);
}

void kf_buf_add_shell_quoted(kf_buf *b, const char *s)
{
    kf_buf_addc(b, '\'');
    for (; *s; s++) {
        if (*s == '\'')
            kf_buf_adds(b, "'\\''");
        else
            kf_buf_addc(b, *s);
    }
    kf_buf_addc(b, '\'');
}
