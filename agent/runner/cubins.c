/* cubins — see cubins.h. */
#include "runner/cubins.h"

#include "common/buf.h"
#include "common/util.h"
#include "common/xalloc.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC "KFCUBINS 1\n"
#define FILE_MAX ((size_t)16 << 20)

struct kf_cubins {
    kf_buf file;
    size_t n;
    char keys[KF_CUBINS_MAX][KF_CUBINS_KEY_MAX];
    const unsigned char *img[KF_CUBINS_MAX];
    size_t len[KF_CUBINS_MAX];
};

void kf_cubins_path(char *out, size_t len, const char *workdir)
{
    snprintf(out, len, "%s/harness-cubins", workdir);
}

void kf_cubins_key(char out[KF_CUBINS_KEY_MAX], const char *module, int major, int minor,
                   int driver, const char *ptx)
{
    unsigned char d[16];
    char hex[2 * sizeof d + 1];
    crypto_generichash(d, sizeof d, (const unsigned char *)ptx, strlen(ptx), NULL, 0);
    sodium_bin2hex(hex, sizeof hex, d, sizeof d);
    snprintf(out, KF_CUBINS_KEY_MAX, "%.40s-sm%d%d-drv%d-%s", module, major, minor, driver, hex);
}

/* The entries of c->file: 0, or -1 when it is not such a file. */
static int parse(kf_cubins *c)
{
    const char *p = c->file.data, *end = p + c->file.len;
    size_t m = strlen(MAGIC);
    if (c->file.len < m || memcmp(p, MAGIC, m) != 0)
        return -1;
    for (p += m; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        char line[KF_CUBINS_KEY_MAX + 32], key[KF_CUBINS_KEY_MAX];
        unsigned long long len;
        if (!nl || (size_t)(nl - p) >= sizeof line || c->n == KF_CUBINS_MAX)
            return -1;
        memcpy(line, p, (size_t)(nl - p));
        line[nl - p] = '\0';
        char fmt[32];
        snprintf(fmt, sizeof fmt, "%%%ds %%llu", KF_CUBINS_KEY_MAX - 1);
        if (sscanf(line, fmt, key, &len) != 2 || len == 0 || len > (size_t)(end - nl - 1))
            return -1;
        snprintf(c->keys[c->n], sizeof c->keys[0], "%s", key);
        c->img[c->n] = (const unsigned char *)nl + 1;
        c->len[c->n++] = (size_t)len;
        p = nl + 1 + len;
    }
    return c->n ? 0 : -1;
}

kf_cubins *kf_cubins_read(const char *path, kf_err *err)
{
    kf_cubins *c = kf_xcalloc(1, sizeof *c);
    kf_buf_init(&c->file);
    char why[160] = "";
    int rc = kf_buf_read_file_max(&c->file, path, FILE_MAX, why, sizeof why);
    if (rc != KF_OK || parse(c) != 0) {
        kf_err_set(err, KF_EINVAL, "%s: %s", path,
                   rc == KF_EINVAL ? why
                   : rc != KF_OK   ? "cannot be read"
                                   : "not a file of the harness's compiled modules");
        kf_cubins_free(&c);
        return NULL;
    }
    return c;
}

void kf_cubins_free(kf_cubins **self)
{
    if (!*self)
        return;
    kf_buf_release(&(*self)->file);
    free(*self);
    *self = NULL;
}

const void *kf_cubins_find(const kf_cubins *c, const char *key, size_t *len)
{
    for (size_t i = 0; c && i < c->n; i++)
        if (strcmp(c->keys[i], key) == 0) {
            *len = c->len[i];
            return c->img[i];
        }
    return NULL;
}

void *kf_cubins_named(const void *img, size_t len, const char *suffix)
{
    size_t k = strlen(KF_CUBINS_PLACEHOLDER);
    if (strlen(suffix) != k)
        return NULL;
    unsigned char *out = kf_xmalloc(len ? len : 1);
    memcpy(out, img, len);
    for (size_t i = 0; i + k <= len;) {
        unsigned char *at = memmem(out + i, len - i, KF_CUBINS_PLACEHOLDER, k);
        if (!at)
            break;
        memcpy(at, suffix, k);
        i = (size_t)(at - out) + k;
    }
    return out;
}

int kf_cubins_write(const char *path, const char *const *keys, const void *const *imgs,
                    const size_t *lens, size_t n, kf_err *err)
{
    if (n == 0 || n > KF_CUBINS_MAX)
        return kf_err_set(err, KF_EINVAL, "%zu compiled modules; 1 to %d", n, KF_CUBINS_MAX);
    kf_buf b = KF_BUF_INIT;
    kf_buf_add(&b, MAGIC, strlen(MAGIC));
    for (size_t i = 0; i < n; i++) {
        char line[KF_CUBINS_KEY_MAX + 32];
        int w = snprintf(line, sizeof line, "%s %zu\n", keys[i], lens[i]);
        if (strlen(keys[i]) >= KF_CUBINS_KEY_MAX || strpbrk(keys[i], " \n") || lens[i] == 0) {
            kf_buf_release(&b);
            return kf_err_set(err, KF_EINVAL, "a compiled module's key or image is malformed");
        }
        kf_buf_add(&b, line, (size_t)w);
        kf_buf_add(&b, imgs[i], lens[i]);
    }
    int rc = kf_write_file(path, b.data, b.len, 0644, err);
    kf_buf_release(&b);
    return rc;
}
