/* keys — Curve key files and the agent allow list; see keys.h. Keys are
 * made by libzmq's zmq_curve_keypair (libsodium underneath). */
#include "common/keys.h"
#include "common/xalloc.h"
#include "common/buf.h"
#include "common/util.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

static const char z85_chars[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                ".-:+=^!/*?&<>()[]{}@%$#";

int kf_key_valid(const char *s)
{
    if (!s || strlen(s) != KF_KEY_Z85)
        return 0;
    for (const char *p = s; *p; p++)
        if (!strchr(z85_chars, *p))
            return 0;
    return 1;
}

/* The line at *p (without its newline) into out; advances *p. */
static void next_line(const char **p, char *out, size_t len)
{
    size_t n = strcspn(*p, "\r\n");
    snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), *p);
    *p += n;
    *p += strspn(*p, "\r\n");
}

int kf_keys_load(const char *path, int create, kf_keypair *kp, kf_err *err)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno != ENOENT)
            return kf_err_set(err, KF_EIO, "cannot read key file %s: %s", path, strerror(errno));
        if (!create)
            return kf_err_set(err, KF_ENOTFOUND, "no key file %s", path);
        if (zmq_curve_keypair(kp->pub, kp->sec) != 0)
            return kf_err_set(err, KF_EIO,
                              "cannot make a Curve key pair: %s (libzmq built "
                              "without CURVE?)",
                              zmq_strerror(errno));
        char text[2 * KF_KEY_Z85 + 3];
        int n = snprintf(text, sizeof text, "%s\n%s\n", kp->pub, kp->sec);
        return kf_write_file(path, text, (size_t)n, 0600, err);
    }
    if (st.st_mode & 077)
        return kf_err_set(err, KF_EINVAL,
                          "key file %s is readable by others (mode %03o); chmod 600 it, or remove "
                          "it and make a new key",
                          path, (unsigned)(st.st_mode & 0777));
    kf_buf b = KF_BUF_INIT;
    if (kf_buf_read_file(&b, path) != KF_OK) {
        kf_buf_release(&b);
        return kf_err_set(err, KF_EIO, "cannot read key file %s: %s", path, strerror(errno));
    }
    const char *p = b.data ? b.data : "";
    char pub[64], sec[64];
    next_line(&p, pub, sizeof pub);
    next_line(&p, sec, sizeof sec);
    kf_buf_release(&b);
    if (!kf_key_valid(pub) || !kf_key_valid(sec))
        return kf_err_set(err, KF_EINVAL,
                          "%s is not a key file (two lines: the Z85 public and secret keys, 40 "
                          "characters each); remove it to make a new key",
                          path);
    snprintf(kp->pub, sizeof kp->pub, "%s", pub);
    snprintf(kp->sec, sizeof kp->sec, "%s", sec);
    return KF_OK;
}

int kf_keys_read_public(const char *path, char pub[KF_KEY_Z85 + 1], kf_err *err)
{
    kf_buf b = KF_BUF_INIT;
    if (kf_buf_read_file(&b, path) != KF_OK) {
        kf_buf_release(&b);
        return kf_err_set(err, KF_ENOTFOUND, "cannot read %s: %s", path, strerror(errno));
    }
    const char *p = b.data ? b.data : "";
    char line[64];
    next_line(&p, line, sizeof line);
    kf_buf_release(&b);
    if (!kf_key_valid(line))
        return kf_err_set(err, KF_EINVAL, "%s:1: not a Z85 public key (40 characters)", path);
    snprintf(pub, KF_KEY_Z85 + 1, "%s", line);
    return KF_OK;
}

int kf_keys_coordinator(const char *key_path, const char *pub_path, kf_keypair *kp, kf_err *err)
{
    int rc = kf_keys_load(key_path, 1, kp, err);
    if (rc)
        return rc;
    char have[KF_KEY_Z85 + 1];
    kf_err ignored;
    if (kf_keys_read_public(pub_path, have, &ignored) == KF_OK && strcmp(have, kp->pub) == 0)
        return KF_OK;
    char line[KF_KEY_Z85 + 2];
    int n = snprintf(line, sizeof line, "%s\n", kp->pub);
    return kf_write_file(pub_path, line, (size_t)n, 0644, err);
}

int kf_keys_resolve_public(const char *arg, char pub[KF_KEY_Z85 + 1], kf_err *err)
{
    /* A file first: Z85 has '/' and '.' among its letters, so a path of
     * exactly 40 characters ("/tmp/kfh-h100/state/keys/coordinator.pub") is
     * also a well-formed key. Taken as one, it was the wrong server key: the
     * agent's every handshake failed (event 2048, EPIPE) and the first
     * `kfleet run` on the H100 waited for 7 minutes (issue 11). */
    struct stat st;
    if (stat(arg, &st) == 0)
        return kf_keys_read_public(arg, pub, err);
    if (kf_key_valid(arg)) {
        snprintf(pub, KF_KEY_Z85 + 1, "%s", arg);
        return KF_OK;
    }
    int rc = kf_keys_read_public(arg, pub, err);
    if (rc == KF_ENOTFOUND)
        return kf_err_set(err, KF_EINVAL,
                          "'%s' is neither a Z85 key (40 characters) nor a readable key file; "
                          "pass the coordinator's public key (`kfleet init` prints it)",
                          arg);
    return rc;
}

void kf_allow_free(kf_allow *a)
{
    free(a->e);
    a->e = NULL;
    a->n = 0;
}

/* The file's bytes into b (empty when there is none) and their digest. */
static int read_list(const char *path, kf_buf *b, unsigned char digest[16], kf_err *err)
{
    memset(digest, 0, 16);
    if (kf_buf_read_file(b, path) != KF_OK) {
        if (errno == ENOENT)
            return KF_OK;
        return kf_err_set(err, KF_EIO, "cannot read %s: %s", path, strerror(errno));
    }
    crypto_generichash(digest, 16, (const unsigned char *)(b->data ? b->data : ""), b->len, NULL,
                       0);
    return KF_OK;
}

static int parse_list(const char *path, const kf_buf *b, kf_allow *a, kf_err *err)
{
    int rc = KF_OK, lineno = 0;
    for (const char *p = b->data ? b->data : ""; *p && rc == KF_OK;) {
        char line[512], pub[64], name[128];
        next_line(&p, line, sizeof line);
        lineno++;
        if (!line[0] || line[0] == '#')
            continue;
        if (sscanf(line, "%63s %127s", pub, name) != 2 || !kf_key_valid(pub)) {
            rc = kf_err_set(err, KF_EINVAL,
                            "%s:%d:1: want \"PUBLIC_KEY NAME\" (a 40-character Z85 key and a "
                            "name); fix or remove the line",
                            path, lineno);
            break;
        }
        a->e = kf_xrealloc(a->e, (a->n + 1) * sizeof *a->e);
        snprintf(a->e[a->n].pub, sizeof a->e[a->n].pub, "%s", pub);
        snprintf(a->e[a->n].name, sizeof a->e[a->n].name, "%s", name);
        a->n++;
    }
    if (rc != KF_OK)
        kf_allow_free(a);
    return rc;
}

int kf_allow_load(const char *path, kf_allow *a, kf_err *err)
{
    kf_allow_free(a);
    kf_buf b = KF_BUF_INIT;
    int rc = read_list(path, &b, a->digest, err);
    if (rc == KF_OK)
        rc = parse_list(path, &b, a, err);
    kf_buf_release(&b);
    return rc;
}

int kf_allow_refresh(const char *path, kf_allow *a, int *changed, kf_err *err)
{
    *changed = 0;
    kf_buf b = KF_BUF_INIT;
    unsigned char digest[16];
    int rc = read_list(path, &b, digest, err);
    if (rc == KF_OK && memcmp(digest, a->digest, sizeof digest) != 0) {
        /* A list that does not parse leaves the one in use as it was (said
         * once: its digest is remembered), rather than locking out every
         * agent over one bad line. */
        kf_allow fresh = {0};
        memcpy(a->digest, digest, sizeof digest);
        rc = parse_list(path, &b, &fresh, err);
        if (rc == KF_OK) {
            *changed = 1;
            kf_allow_free(a);
            a->e = fresh.e;
            a->n = fresh.n;
        }
    }
    kf_buf_release(&b);
    return rc;
}

const char *kf_allow_find(const kf_allow *a, const char *pub)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->e[i].pub, pub) == 0)
            return a->e[i].name;
    return NULL;
}

static int save(const char *path, const kf_allow *a, kf_err *err)
{
    kf_buf b = KF_BUF_INIT;
    kf_buf_adds(&b, "# agents the kfleet coordinator accepts: PUBLIC_KEY NAME "
                    "(kfleet agent-key add|list|revoke)\n");
    for (size_t i = 0; i < a->n; i++)
        kf_buf_addf(&b, "%s %s\n", a->e[i].pub, a->e[i].name);
    int rc = kf_write_file(path, b.data, b.len, 0600, err);
    kf_buf_release(&b);
    return rc;
}

static int allow_add(const char *path, const char *pub, const char *name, kf_err *err)
{
    if (!kf_key_valid(pub))
        return kf_err_set(err, KF_EINVAL,
                          "'%.60s' is not a Z85 public key (40 characters, as `kfleet-agent "
                          "--show-key` prints)",
                          pub);
    if (!name[0] || strlen(name) >= sizeof((kf_allow_entry *)0)->name || strpbrk(name, " \t\r\n#"))
        return kf_err_set(err, KF_EINVAL,
                          "agent key name '%.60s' must be 1-127 characters without blanks or #",
                          name);
    kf_allow a = {0};
    int rc = kf_allow_load(path, &a, err);
    for (size_t i = 0; rc == KF_OK && i < a.n; i++)
        if (strcmp(a.e[i].name, name) == 0 && strcmp(a.e[i].pub, pub) != 0)
            rc = kf_err_set(err, KF_EEXIST,
                            "the name %s is taken by key %s; revoke it first or pick another", name,
                            a.e[i].pub);
    size_t i = 0;
    while (rc == KF_OK && i < a.n && strcmp(a.e[i].pub, pub) != 0)
        i++;
    if (rc == KF_OK && i == a.n) {
        a.e = kf_xrealloc(a.e, (a.n + 1) * sizeof *a.e);
        a.n++;
    }
    if (rc == KF_OK) {
        snprintf(a.e[i].pub, sizeof a.e[i].pub, "%s", pub);
        snprintf(a.e[i].name, sizeof a.e[i].name, "%s", name);
        rc = save(path, &a, err);
    }
    kf_allow_free(&a);
    return rc;
}

static int allow_remove(const char *path, const char *which, size_t *removed, kf_err *err)
{
    kf_allow a = {0};
    *removed = 0;
    int rc = kf_allow_load(path, &a, err);
    size_t k = 0;
    for (size_t i = 0; rc == KF_OK && i < a.n; i++) {
        if (strcmp(a.e[i].name, which) == 0 || strcmp(a.e[i].pub, which) == 0)
            (*removed)++;
        else
            a.e[k++] = a.e[i];
    }
    a.n = k;
    if (rc == KF_OK && *removed)
        rc = save(path, &a, err);
    kf_allow_free(&a);
    return rc;
}

/* Writers serialize on PATH.lock: local agents starting together all enroll
 * at once, and a read-modify-write without it loses all but one. */
static int lock_list(const char *path, int *fd, kf_err *err)
{
    char lp[4096];
    snprintf(lp, sizeof lp, "%s.lock", path);
    *fd = open(lp, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (*fd < 0)
        return kf_err_set(err, KF_EIO, "cannot open %s: %s", lp, strerror(errno));
    while (flock(*fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            int rc = kf_err_set(err, KF_EIO, "cannot lock %s: %s", lp, strerror(errno));
            close(*fd);
            return rc;
        }
    }
    return KF_OK;
}

int kf_allow_add(const char *path, const char *pub, const char *name, kf_err *err)
{
    int fd, rc = lock_list(path, &fd, err);
    if (rc)
        return rc;
    rc = allow_add(path, pub, name, err);
    close(fd);
    return rc;
}

int kf_allow_remove(const char *path, const char *which, size_t *removed, kf_err *err)
{
    int fd, rc = lock_list(path, &fd, err);
    if (rc)
        return rc;
    rc = allow_remove(path, which, removed, err);
    close(fd);
    return rc;
}

int kf_allow_enroll(const char *path, const char *pub, const char *name, kf_err *err)
{
    int fd, rc = lock_list(path, &fd, err);
    if (rc)
        return rc;
    rc = allow_add(path, pub, name, err);
    if (rc == KF_EEXIST) {
        size_t removed = 0;
        if ((rc = allow_remove(path, name, &removed, err)) == KF_OK)
            rc = allow_add(path, pub, name, err);
    }
    close(fd);
    return rc;
}
