/* sshconf — the OpenSSH client config reader behind ssh_alias; see
 * sshconf.h.
 *
 * No maintained C library reads OpenSSH's client config (libssh2 has none;
 * libssh's is internal to its session), so a small one lives here. It reads
 * line by line as OpenSSH does, keeping the first value of each option it
 * knows, and never evaluates Match criteria: a Match block it cannot decide
 * is skipped rather than guessed. */
#include "fleet/sshconf.h"
#include "common/xalloc.h"
#include "common/buf.h"
#include "common/limits.h"

#include <ctype.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_INCLUDE_DEPTH 16 /* as OpenSSH */
#define MAX_ARGS 64
#define MAX_MSG 700 /* callers wrap the message in their own */

static const char *const keywords[KF_SSHCONF_NKEYS] = {"hostname",     "port",      "user",
                                                       "identityfile", "proxyjump", "proxycommand"};

typedef struct value {
    char *value;
    char where[PATH_MAX + 16]; /* "FILE:LINE" */
} value;

struct kf_sshconf {
    const char *alias; /* only while reading */
    kf_err *err;       /* only while reading */
    char *home;
    char top_dir[PATH_MAX]; /* relative Include paths resolve here */
    int named;              /* a Host line other than a bare '*' matched */
    value v[KF_SSHCONF_NKEYS];
};

static int fail(kf_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(kf_err *err, const char *fmt, ...)
{
    char msg[MAX_MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return kf_err_set(err, KF_EINVAL, "%s", msg);
}

/* OpenSSH's wildcard match: '*' any run, '?' one character; hostnames
 * compare case-insensitively. Iterative, so a hostile pattern stays linear
 * in backtracking per star. */
static int wild_match(const char *p, const char *s)
{
    const char *star = NULL, *resume = NULL;
    while (*s) {
        if (*p == '*') {
            star = p++;
            resume = s;
        } else if (*p == '?' || (*p && tolower((unsigned char)*p) == tolower((unsigned char)*s))) {
            p++, s++;
        } else if (star) {
            p = star + 1;
            s = ++resume;
        } else {
            return 0;
        }
    }
    while (*p == '*')
        p++;
    return *p == '\0';
}

/* Splits a config line into arguments: whitespace separates, double quotes
 * group, and the first argument may end in '=' or be joined to its value by
 * one ("Port=22"). Modifies line. Returns the count, or -1 on an open quote. */
static int split_line(char *line, char **argv, int max)
{
    int n = 0;
    char *p = line;
    while (*p && n < max) {
        while (*p == ' ' || *p == '\t' || (n == 1 && *p == '='))
            p++;
        if (!*p)
            break;
        if (*p == '"') {
            char *end = strchr(p + 1, '"');
            if (!end)
                return -1;
            *end = '\0';
            argv[n++] = p + 1;
            p = end + 1;
            continue;
        }
        argv[n++] = p;
        p += strcspn(p, n == 1 ? " \t=" : " \t");
        if (*p)
            *p++ = '\0';
    }
    return n;
}

/* Whether the options after this Host line apply to the alias. */
static int host_line(kf_sshconf *sc, char **argv, int argc)
{
    int hit = 0, named = 0;
    for (int i = 1; i < argc; i++) {
        int neg = argv[i][0] == '!';
        if (!wild_match(argv[i] + neg, sc->alias))
            continue;
        if (neg)
            return 0; /* a negated match rules the whole line out */
        hit = 1;
        named |= strcmp(argv[i], "*") != 0;
    }
    sc->named |= hit && named;
    return hit;
}

static int read_file(kf_sshconf *sc, const char *path, int depth, int active);

static int include(kf_sshconf *sc, const char *where, char **argv, int argc, int depth)
{
    if (depth >= MAX_INCLUDE_DEPTH)
        return fail(sc->err, "%s: Include nested more than %d deep; look for an Include loop",
                    where, MAX_INCLUDE_DEPTH);
    for (int i = 1; i < argc; i++) {
        char pat[PATH_MAX];
        if (argv[i][0] == '~' && sc->home)
            snprintf(pat, sizeof pat, "%s%s", sc->home, argv[i] + 1);
        else if (argv[i][0] != '/')
            snprintf(pat, sizeof pat, "%s/%s", sc->top_dir, argv[i]);
        else
            snprintf(pat, sizeof pat, "%s", argv[i]);
        glob_t g;
        int grc = glob(pat, 0, NULL, &g);
        if (grc == GLOB_NOMATCH)
            continue; /* as OpenSSH: an Include that matches nothing is fine */
        if (grc != 0)
            return fail(sc->err, "%s: cannot expand Include %.200s", where, argv[i]);
        int rc = KF_OK;
        for (size_t j = 0; rc == KF_OK && j < g.gl_pathc; j++)
            rc = read_file(sc, g.gl_pathv[j], depth + 1, 1);
        globfree(&g);
        if (rc)
            return rc;
    }
    return KF_OK;
}

/* Reads one config file; `active` is whether the options before its first
 * Host line apply. */
static int read_file(kf_sshconf *sc, const char *path, int depth, int active)
{
    kf_buf b = KF_BUF_INIT;
    char why[160];
    if (kf_buf_read_file_max(&b, path, KF_MAX_SSH_CONFIG, why, sizeof why) != KF_OK) {
        kf_buf_release(&b);
        return fail(sc->err,
                    "cannot read the ssh config %.300s: %s (a regular file of at most 1 MiB); "
                    "create it, or point KFLEET_SSH_CONFIG at the right file",
                    path, why);
    }
    int rc = KF_OK, lineno = 0;
    char *next = b.data, *end = b.data + b.len;
    while (next < end && rc == KF_OK) {
        char *line = next, *nl = memchr(line, '\n', (size_t)(end - line));
        if (nl)
            *nl = '\0';
        next = nl ? nl + 1 : end;
        lineno++;
        line[strcspn(line, "\r")] = '\0';
        char *argv[MAX_ARGS];
        char where[PATH_MAX + 16];
        snprintf(where, sizeof where, "%.*s:%d", PATH_MAX - 1, path, lineno);
        char *p = line + strspn(line, " \t");
        if (*p == '\0' || *p == '#')
            continue;
        int argc = split_line(p, argv, MAX_ARGS);
        if (argc < 0) {
            rc = fail(sc->err, "%s: a quote is not closed; close it", where);
            break;
        }
        if (argc == 0)
            continue;
        if (strcasecmp(argv[0], "host") == 0) {
            active = host_line(sc, argv, argc);
            continue;
        }
        if (strcasecmp(argv[0], "match") == 0) {
            /* Match criteria (exec, user, ...) are not evaluated: only
             * `Match all` is known to apply. */
            active = argc == 2 && strcasecmp(argv[1], "all") == 0;
            continue;
        }
        if (!active)
            continue;
        if (strcasecmp(argv[0], "include") == 0) {
            rc = include(sc, where, argv, argc, depth);
            continue;
        }
        for (int k = 0; k < KF_SSHCONF_NKEYS; k++) {
            if (strcasecmp(argv[0], keywords[k]) != 0 || sc->v[k].value)
                continue;
            if (argc < 2) {
                rc = fail(sc->err, "%s: %s has no value; give one or remove the line", where,
                          argv[0]);
                break;
            }
            sc->v[k].value = kf_xstrdup(argv[1]);
            snprintf(sc->v[k].where, sizeof sc->v[k].where, "%s", where);
        }
    }
    kf_buf_release(&b);
    return rc;
}

int kf_sshconf_read(const char *path, const char *alias, const char *home, kf_sshconf **out,
                    kf_err *err)
{
    kf_sshconf *sc = kf_xcalloc(1, sizeof *sc);
    if (home)
        sc->home = kf_xstrdup(home);
    const char *slash = strrchr(path, '/');
    if (slash)
        snprintf(sc->top_dir, sizeof sc->top_dir, "%.*s", (int)(slash - path), path);
    else
        snprintf(sc->top_dir, sizeof sc->top_dir, ".");
    sc->alias = alias;
    sc->err = err;
    int rc = read_file(sc, path, 0, 1);
    sc->alias = NULL;
    sc->err = NULL;
    if (rc) {
        kf_sshconf_destroy(&sc);
        return rc;
    }
    *out = sc;
    return KF_OK;
}

int kf_sshconf_matched(const kf_sshconf *self)
{
    return self->named;
}

const char *kf_sshconf_value(const kf_sshconf *self, int key)
{
    return key >= 0 && key < KF_SSHCONF_NKEYS ? self->v[key].value : NULL;
}

const char *kf_sshconf_where(const kf_sshconf *self, int key)
{
    return key >= 0 && key < KF_SSHCONF_NKEYS ? self->v[key].where : "";
}

int kf_sshconf_expand(const kf_sshconf *self, int key, const char *host, const char *user,
                      char **out, kf_err *err)
{
    const value *v = &self->v[key];
    kf_buf b = KF_BUF_INIT;
    const char *s = v->value;
    if (s[0] == '~' && (s[1] == '/' || s[1] == '\0') && self->home) {
        kf_buf_adds(&b, self->home);
        s++;
    }
    for (; *s; s++) {
        if (*s != '%') {
            kf_buf_addc(&b, *s);
            continue;
        }
        char t = s[1];
        const char *sub = t == '%'   ? "%"
                          : t == 'd' ? self->home
                          : t == 'h' ? host
                          : t == 'r' ? user
                                     : NULL;
        if (!sub) {
            kf_buf_release(&b);
            return fail(err,
                        "%s: the token %%%c in '%.100s' is not supported by kfleet (only %%%%, "
                        "%%d, %%h and %%r); write the value out or set it in the inventory",
                        v->where, t ? t : ' ', v->value);
        }
        kf_buf_adds(&b, sub);
        s++;
    }
    *out = kf_buf_detach(&b);
    return KF_OK;
}

void kf_sshconf_destroy(kf_sshconf **self)
{
    if (!self || !*self)
        return;
    for (int i = 0; i < KF_SSHCONF_NKEYS; i++)
        free((*self)->v[i].value);
    free((*self)->home);
    free(*self);
    *self = NULL;
}
