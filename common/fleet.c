/* fleet — reads an inventory file (YAML) into a kf_fleet; the format is in
 * fleet.h, docs/inventory.md is the user reference.
 *
 * How: as in sweep.c, libyaml's document API loads the file into a node tree
 * whose nodes keep their start marks, and the tree is walked top-down with one
 * expected shape per level, never following anything deeper, so aliases cannot
 * make the walk loop and the parser is safe to fuzz. Every mapping is checked
 * against its known keys first (typos and duplicates are errors, not silently
 * ignored settings). The fleet is built privately and handed over only when
 * the whole file is valid.
 *
 * ssh_alias needs a reader for OpenSSH's client config. No maintained C
 * library reads it (libssh2 has none; libssh's is internal to its session),
 * so a small one lives here: Host lines with * and ? patterns and !negation,
 * case-insensitive like OpenSSH's host matching, the first value of each
 * keyword wins, Include (globs, relative to the top config's directory) is
 * followed up to 16 deep, and Match blocks are not evaluated (their options
 * are skipped; only `Match all` applies). Only HostName, Port, User and
 * IdentityFile are used; ProxyJump/ProxyCommand are refused, because the
 * launcher connects directly and would silently reach the wrong machine. */
#include "fleet.h"
#include "buf.h"

#include <ctype.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <yaml.h>

#define MAX_LABELS 64
#define MAX_NAME 64
#define MAX_PATH_VALUE 1024
#define MAX_INCLUDE_DEPTH 16 /* as OpenSSH */
#define MAX_SSH_ARGS 64

static const char *const providers[] = {"runpod", "brev", "shadeform", "ssh", NULL};

typedef struct ctx {
    const char *file;
    const char *text;
    size_t len;
    yaml_document_t *doc;
    kf_err *err;
    const char *ssh_config; /* resolved path; NULL when no HOME to find it */
    const char *home;       /* NULL when unknown */
    const char *base_dir;
} ctx;

/* What `defaults:` sets; pointers into the YAML document. */
typedef struct defaults {
    const char *provider, *user, *identity, *workdir;
    int port;
} defaults;

/* ---- messages ---- */

static int vfail(ctx *c, size_t line, size_t col, const char *fmt, va_list ap)
{
    char what[900];
    vsnprintf(what, sizeof what, fmt, ap);
    return kf_err_set(c->err, KF_EINVAL, "%s:%zu:%zu: %s", c->file, line + 1, col + 1, what);
}

static int fail(ctx *c, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(ctx *c, const yaml_node_t *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(c, n->start_mark.line, n->start_mark.column, fmt, ap);
    va_end(ap);
    return rc;
}

static int fail_at(ctx *c, size_t line, size_t col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail_at(ctx *c, size_t line, size_t col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(c, line, col, fmt, ap);
    va_end(ap);
    return rc;
}

static int oom(ctx *c)
{
    return kf_err_set(c->err, KF_ENOMEM, "out of memory");
}

/* ---- the node tree (as in sweep.c) ---- */

static yaml_node_t *node(ctx *c, int index)
{
    return yaml_document_get_node(c->doc, index);
}

static size_t seq_len(const yaml_node_t *n)
{
    return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
}

static yaml_node_t *seq_item(ctx *c, const yaml_node_t *n, size_t i)
{
    return node(c, n->data.sequence.items.start[i]);
}

static size_t map_len(const yaml_node_t *n)
{
    return (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
}

static yaml_node_t *map_key(ctx *c, const yaml_node_t *n, size_t i)
{
    return node(c, n->data.mapping.pairs.start[i].key);
}

static yaml_node_t *map_value(ctx *c, const yaml_node_t *n, size_t i)
{
    return node(c, n->data.mapping.pairs.start[i].value);
}

static const char *text(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

static const char *kind(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_SCALAR_NODE:
        return n->data.scalar.length ? "a single value" : "empty";
    case YAML_SEQUENCE_NODE:
        return "a list";
    case YAML_MAPPING_NODE:
        return "a mapping";
    default:
        return "nothing";
    }
}

static int scalar(ctx *c, const yaml_node_t *n, const char *what, const char **out)
{
    if (n->type != YAML_SCALAR_NODE)
        return fail(c, n, "%s must be a single value, not %s; write it as one value", what,
                    kind(n));
    if (strlen(text(n)) != n->data.scalar.length)
        return fail(c, n, "%s contains a NUL character; remove it", what);
    *out = text(n);
    return KF_OK;
}

static int nonempty_scalar(ctx *c, const yaml_node_t *n, const char *what, const char **out)
{
    int rc = scalar(c, n, what, out);
    if (rc == KF_OK && **out == '\0')
        return fail(c, n, "%s is empty; give it a value or remove the key", what);
    return rc;
}

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[33];
    if (la > 32 || lb > 32)
        return SIZE_MAX;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* The nearest of `known` to s within two edits, or NULL. */
static const char *nearest(const char *s, const char *const *known)
{
    size_t bestd = 3;
    const char *best = NULL;
    for (size_t j = 0; known[j]; j++) {
        size_t d = edit_distance(s, known[j]);
        if (d < bestd && d < strlen(s))
            bestd = d, best = known[j];
    }
    return best;
}

static void join(const char *const *known, char *out, size_t n)
{
    size_t off = 0;
    out[0] = '\0';
    for (size_t j = 0; known[j] && off < n; j++)
        off += (size_t)snprintf(out + off, n - off, "%s%s", j ? ", " : "", known[j]);
}

/* Every key of `map` is a scalar from `known` and appears once. */
static int check_keys(ctx *c, const yaml_node_t *map, const char *where, const char *const *known)
{
    size_t n = map_len(map);
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *k = map_key(c, map, i);
        const char *s = NULL;
        int rc = scalar(c, k, "a key", &s);
        if (rc)
            return rc;
        size_t j = 0;
        while (known[j] && strcmp(known[j], s) != 0)
            j++;
        if (!known[j]) {
            char list[512];
            join(known, list, sizeof list);
            const char *best = nearest(s, known);
            if (best)
                return fail(c, k, "unknown key '%.80s' %s; did you mean '%s'? (known keys: %s)", s,
                            where, best, list);
            return fail(c, k, "unknown key '%.80s' %s; use one of the known keys: %s", s, where,
                        list);
        }
        for (j = 0; j < i; j++) {
            yaml_node_t *prev = map_key(c, map, j);
            if (strcmp(text(prev), s) == 0)
                return fail(c, k, "key '%s' appears twice %s (first at %zu:%zu); keep one", s,
                            where, prev->start_mark.line + 1, prev->start_mark.column + 1);
        }
    }
    return KF_OK;
}

static yaml_node_t *map_get(ctx *c, const yaml_node_t *map, const char *key)
{
    for (size_t i = 0; i < map_len(map); i++)
        if (strcmp(text(map_key(c, map, i)), key) == 0)
            return map_value(c, map, i);
    return NULL;
}

/* ---- values ---- */

static int has_control(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 1;
    return 0;
}

/* Only characters from `extra` besides letters and digits, no leading '-'
 * (nothing that reads as an option on a command line) and at most max. */
static int word_ok(const char *s, const char *extra, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max || s[0] == '-')
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr(extra, *s))
            return 0;
    return 1;
}

static int port_value(const char *s)
{
    if (!*s || strlen(s) > 5)
        return -1;
    int v = 0;
    for (; *s; s++) {
        if (!isdigit((unsigned char)*s))
            return -1;
        v = v * 10 + (*s - '0');
    }
    return v >= 1 && v <= 65535 ? v : -1;
}

static int get_port(ctx *c, const yaml_node_t *n, int *out)
{
    const char *s;
    int rc = nonempty_scalar(c, n, "port", &s);
    if (rc)
        return rc;
    int v = port_value(s);
    if (v < 0)
        return fail(c, n,
                    "port must be a number from 1 to 65535, not '%.40s'; use the node's SSH port "
                    "(on RunPod: the public port mapped to 22)",
                    s);
    *out = v;
    return KF_OK;
}

static int get_provider(ctx *c, const yaml_node_t *n, const char **out)
{
    int rc = nonempty_scalar(c, n, "provider", out);
    if (rc)
        return rc;
    for (size_t i = 0; providers[i]; i++)
        if (strcmp(providers[i], *out) == 0)
            return KF_OK;
    const char *best = nearest(*out, providers);
    return fail(c, n, "unknown provider '%.40s'%s%s%s; use runpod, brev, shadeform or ssh", *out,
                best ? " (did you mean '" : "", best ? best : "", best ? "'?)" : "");
}

static int get_user(ctx *c, const yaml_node_t *n, const char **out)
{
    int rc = nonempty_scalar(c, n, "user", out);
    if (rc == KF_OK && !word_ok(*out, "._@-", 64))
        return fail(c, n,
                    "user '%.40s' is not a login name; use letters, digits, '.', '_', '@' or "
                    "'-', not starting with '-'",
                    *out);
    return rc;
}

/* A workdir is absolute or "~/..."; never "/" or "~" alone, since
 * `teardown --purge` removes it. */
static const char *workdir_problem(const char *s)
{
    if (strlen(s) > MAX_PATH_VALUE)
        return "is too long";
    if (has_control(s))
        return "contains a control character";
    if (s[0] == '~' && s[1] != '/' && s[1] != '\0')
        return "uses ~user, which is not expanded; write ~/dir or an absolute path";
    if (s[0] != '/' && s[0] != '~')
        return "is relative; write an absolute path or ~/dir";
    size_t n = strspn(s + 1, "/");
    if ((s[0] == '/' || s[0] == '~') && s[1 + n] == '\0')
        return "is a home or root directory, which teardown --purge would remove; name a "
               "directory of its own, like ~/kfleet";
    return NULL;
}

static int get_workdir(ctx *c, const yaml_node_t *n, const char **out)
{
    int rc = nonempty_scalar(c, n, "workdir", out);
    if (rc)
        return rc;
    const char *why = workdir_problem(*out);
    if (why)
        return fail(c, n, "workdir '%.80s' %s", *out, why);
    return KF_OK;
}

static int get_identity(ctx *c, const yaml_node_t *n, const char **out)
{
    int rc = nonempty_scalar(c, n, "identity", out);
    if (rc)
        return rc;
    if (strlen(*out) > MAX_PATH_VALUE || has_control(*out))
        return fail(c, n, "identity '%.80s' is not a usable file path; give the key file's path",
                    *out);
    if ((*out)[0] == '~' && (*out)[1] != '/' && (*out)[1] != '\0')
        return fail(c, n, "identity '%.80s' uses ~user, which is not expanded; write ~/path", *out);
    if ((*out)[0] == '~' && !c->home)
        return fail(c, n, "identity '%.80s' starts with ~ but HOME is not set; write the full path",
                    *out);
    return KF_OK;
}

/* A local path from the inventory: "~" → home, relative → base_dir. */
static char *local_path(ctx *c, const char *s)
{
    char *out = NULL;
    int n;
    if (s[0] == '~')
        n = asprintf(&out, "%s%s", c->home, s + 1);
    else if (s[0] != '/' && c->base_dir)
        n = asprintf(&out, "%s/%s", c->base_dir, s);
    else
        n = (out = strdup(s)) ? 0 : -1;
    return n < 0 ? NULL : out;
}

/* ---- ~/.ssh/config ---- */

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

typedef struct ssh_val {
    char *value;
    char where[PATH_MAX + 16]; /* "FILE:LINE" */
} ssh_val;

enum { SV_HOSTNAME, SV_PORT, SV_USER, SV_IDENTITY, SV_PROXYJUMP, SV_PROXYCOMMAND, SV_N };
static const char *const ssh_keywords[SV_N] = {"hostname",     "port",      "user",
                                               "identityfile", "proxyjump", "proxycommand"};

typedef struct ssh_lookup {
    const char *alias;
    const char *home;
    char top_dir[PATH_MAX]; /* relative Include paths resolve here */
    int named;              /* a Host line other than a bare '*' matched */
    ssh_val v[SV_N];
    char msg[700];
} ssh_lookup;

static void ssh_lookup_free(ssh_lookup *lk)
{
    for (int i = 0; i < SV_N; i++)
        free(lk->v[i].value);
}

static int ssh_fail(ssh_lookup *lk, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int ssh_fail(ssh_lookup *lk, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(lk->msg, sizeof lk->msg, fmt, ap);
    va_end(ap);
    return KF_EINVAL;
}

/* Splits a config line into arguments: whitespace separates, double quotes
 * group, and the first argument may end in '=' or be joined to its value by
 * one ("Port=22"). Modifies line. Returns the count, or -1 on an open quote. */
static int ssh_split(char *line, char **argv, int max)
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

static int ssh_host_line(ssh_lookup *lk, char **argv, int argc)
{
    int hit = 0, named = 0;
    for (int i = 1; i < argc; i++) {
        int neg = argv[i][0] == '!';
        if (!wild_match(argv[i] + neg, lk->alias))
            continue;
        if (neg)
            return 0; /* a negated match rules the whole line out */
        hit = 1;
        named |= strcmp(argv[i], "*") != 0;
    }
    lk->named |= hit && named;
    return hit;
}

static int ssh_read(ssh_lookup *lk, const char *path, int depth, int active);

static int ssh_include(ssh_lookup *lk, const char *where, char **argv, int argc, int depth)
{
    if (depth >= MAX_INCLUDE_DEPTH)
        return ssh_fail(lk, "%s: Include nested more than %d deep; look for an Include loop", where,
                        MAX_INCLUDE_DEPTH);
    for (int i = 1; i < argc; i++) {
        char pat[PATH_MAX];
        if (argv[i][0] == '~' && lk->home)
            snprintf(pat, sizeof pat, "%s%s", lk->home, argv[i] + 1);
        else if (argv[i][0] != '/')
            snprintf(pat, sizeof pat, "%s/%s", lk->top_dir, argv[i]);
        else
            snprintf(pat, sizeof pat, "%s", argv[i]);
        glob_t g;
        int grc = glob(pat, 0, NULL, &g);
        if (grc == GLOB_NOMATCH)
            continue; /* as OpenSSH: an Include that matches nothing is fine */
        if (grc != 0)
            return ssh_fail(lk, "%s: cannot expand Include %.200s", where, argv[i]);
        int rc = KF_OK;
        for (size_t j = 0; rc == KF_OK && j < g.gl_pathc; j++)
            rc = ssh_read(lk, g.gl_pathv[j], depth + 1, 1);
        globfree(&g);
        if (rc)
            return rc;
    }
    return KF_OK;
}

/* Reads one config file; `active` is whether the options before its first
 * Host line apply. */
static int ssh_read(ssh_lookup *lk, const char *path, int depth, int active)
{
    kf_buf b = KF_BUF_INIT;
    if (kf_buf_read_file(&b, path) != KF_OK) {
        int e = errno;
        kf_buf_release(&b);
        return ssh_fail(lk,
                        "cannot read the ssh config %.300s: %s; create it, or point "
                        "KFLEET_SSH_CONFIG at the right file",
                        path, strerror(e));
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
        char *argv[MAX_SSH_ARGS];
        char where[PATH_MAX + 16];
        snprintf(where, sizeof where, "%.*s:%d", PATH_MAX - 1, path, lineno);
        char *p = line + strspn(line, " \t");
        if (*p == '\0' || *p == '#')
            continue;
        int argc = ssh_split(p, argv, MAX_SSH_ARGS);
        if (argc < 0) {
            rc = ssh_fail(lk, "%s: a quote is not closed; close it", where);
            break;
        }
        if (argc == 0)
            continue;
        if (strcasecmp(argv[0], "host") == 0) {
            active = ssh_host_line(lk, argv, argc);
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
            rc = ssh_include(lk, where, argv, argc, depth);
            continue;
        }
        for (int k = 0; k < SV_N; k++) {
            if (strcasecmp(argv[0], ssh_keywords[k]) != 0 || lk->v[k].value)
                continue;
            if (argc < 2) {
                rc = ssh_fail(lk, "%s: %s has no value; give one or remove the line", where,
                              argv[0]);
                break;
            }
            if (!(lk->v[k].value = strdup(argv[1]))) {
                rc = KF_ENOMEM;
                break;
            }
            snprintf(lk->v[k].where, sizeof lk->v[k].where, "%s", where);
        }
    }
    kf_buf_release(&b);
    return rc;
}

/* Expands ~ and the %-tokens kfleet knows (%% %d %h %r) in an ssh config
 * value; h is the host name, r the user (NULL where not allowed). */
static int ssh_expand(ssh_lookup *lk, const ssh_val *v, const char *h, const char *r, char **out)
{
    kf_buf b = KF_BUF_INIT;
    const char *s = v->value;
    if (s[0] == '~' && (s[1] == '/' || s[1] == '\0') && lk->home) {
        kf_buf_adds(&b, lk->home);
        s++;
    }
    for (; *s; s++) {
        if (*s != '%') {
            kf_buf_addc(&b, *s);
            continue;
        }
        char t = s[1];
        const char *sub = t == '%' ? "%" : t == 'd' ? lk->home : t == 'h' ? h : t == 'r' ? r : NULL;
        if (!sub) {
            kf_buf_release(&b);
            return ssh_fail(lk,
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

/* ---- hosts ---- */

typedef struct host_fields {
    const char *name, *provider, *host, *user, *identity, *workdir, *alias;
    int port;
    const yaml_node_t *labels, *alias_node, *entry;
} host_fields;

static int parse_labels(ctx *c, const yaml_node_t *n, kf_fleet_host *h)
{
    if (n->type != YAML_SEQUENCE_NODE)
        return fail(c, n, "labels must be a list of words, like labels: [h100, spot], not %s",
                    kind(n));
    size_t cnt = seq_len(n);
    if (cnt > MAX_LABELS)
        return fail(c, n, "%zu labels is too many (the limit is %d); keep fewer", cnt, MAX_LABELS);
    if (cnt && !(h->labels = calloc(cnt, sizeof *h->labels)))
        return oom(c);
    for (size_t i = 0; i < cnt; i++) {
        yaml_node_t *it = seq_item(c, n, i);
        const char *s;
        int rc = nonempty_scalar(c, it, "a label", &s);
        if (rc)
            return rc;
        if (!word_ok(s, "._:=/-", MAX_NAME))
            return fail(c, it,
                        "label '%.40s' has characters kfleet does not allow; use letters, "
                        "digits and . _ : = / - (at most %d, not starting with '-')",
                        s, MAX_NAME);
        for (size_t j = 0; j < i; j++)
            if (strcmp(h->labels[j], s) == 0)
                return fail(c, it, "label '%.40s' is listed twice; keep one", s);
        if (!(h->labels[i] = strdup(s)))
            return oom(c);
        h->nlabels = i + 1;
    }
    return KF_OK;
}

/* Fills the alias's values into what the entry left unset. */
static int apply_alias(ctx *c, host_fields *f, kf_fleet_host *h, const defaults *d)
{
    ssh_lookup *lk = calloc(1, sizeof *lk);
    if (!lk)
        return oom(c);
    int rc;
    char *expanded = NULL;
    lk->alias = f->alias;
    lk->home = c->home;
    if (!c->ssh_config) {
        rc = fail(c, f->alias_node,
                  "ssh_alias needs an ssh config, but HOME is not set; set KFLEET_SSH_CONFIG "
                  "to the file");
        goto out;
    }
    const char *slash = strrchr(c->ssh_config, '/');
    if (slash)
        snprintf(lk->top_dir, sizeof lk->top_dir, "%.*s", (int)(slash - c->ssh_config),
                 c->ssh_config);
    else
        snprintf(lk->top_dir, sizeof lk->top_dir, ".");
    rc = ssh_read(lk, c->ssh_config, 0, 1);
    if (rc == KF_ENOMEM)
        goto out_oom;
    if (rc) {
        rc = fail(c, f->alias_node, "ssh_alias '%.64s': %s", f->alias, lk->msg);
        goto out;
    }
    if (!lk->named) {
        rc = fail(c, f->alias_node,
                  "ssh_alias '%.64s' matches no Host in %.300s; add a 'Host %.64s' block there, "
                  "or give host: instead",
                  f->alias, c->ssh_config, f->alias);
        goto out;
    }
    for (int k = SV_PROXYJUMP; k <= SV_PROXYCOMMAND; k++)
        if (lk->v[k].value && strcasecmp(lk->v[k].value, "none") != 0) {
            rc = fail(c, f->alias_node,
                      "ssh_alias '%.64s' uses %s (%s), which kfleet's SSH client does not "
                      "follow; give the node's direct host and port in the inventory instead",
                      f->alias, k == SV_PROXYJUMP ? "ProxyJump" : "ProxyCommand", lk->v[k].where);
            goto out;
        }
    if (!f->host) {
        if (lk->v[SV_HOSTNAME].value) {
            rc = ssh_expand(lk, &lk->v[SV_HOSTNAME], f->alias, NULL, &expanded);
            if (rc == KF_ENOMEM)
                goto out_oom;
            if (rc) {
                rc = fail(c, f->alias_node, "ssh_alias '%.64s': %s", f->alias, lk->msg);
                goto out;
            }
            if (!word_ok(expanded, ".:_%-", 253)) {
                rc = fail(c, f->alias_node,
                          "ssh_alias '%.64s': HostName '%.100s' (%s) is not a host name or "
                          "address; fix it there",
                          f->alias, expanded, lk->v[SV_HOSTNAME].where);
                goto out;
            }
            h->host = expanded;
            expanded = NULL;
        } else if (!(h->host = strdup(f->alias))) {
            goto out_oom;
        }
    }
    if (!f->port && lk->v[SV_PORT].value && (f->port = port_value(lk->v[SV_PORT].value)) < 0) {
        rc = fail(c, f->alias_node,
                  "ssh_alias '%.64s': Port '%.40s' (%s) is not a number from 1 to 65535; fix it "
                  "there",
                  f->alias, lk->v[SV_PORT].value, lk->v[SV_PORT].where);
        goto out;
    }
    if (!f->user && lk->v[SV_USER].value) {
        if (!word_ok(lk->v[SV_USER].value, "._@-", 64)) {
            rc = fail(c, f->alias_node,
                      "ssh_alias '%.64s': User '%.40s' (%s) is not a login name; fix it there",
                      f->alias, lk->v[SV_USER].value, lk->v[SV_USER].where);
            goto out;
        }
        if (!(h->user = strdup(lk->v[SV_USER].value)))
            goto out_oom;
    }
    if (!f->identity && lk->v[SV_IDENTITY].value) {
        const char *user = f->user ? f->user : h->user ? h->user : d->user ? d->user : "root";
        const char *hn = f->host ? f->host : h->host;
        rc = ssh_expand(lk, &lk->v[SV_IDENTITY], hn, user, &h->identity);
        if (rc == KF_ENOMEM)
            goto out_oom;
        if (rc) {
            rc = fail(c, f->alias_node, "ssh_alias '%.64s': %s", f->alias, lk->msg);
            goto out;
        }
    }
    rc = KF_OK;
    goto out;
out_oom:
    rc = oom(c);
out:
    free(expanded);
    ssh_lookup_free(lk);
    free(lk);
    return rc;
}

static int dup_or_oom(ctx *c, char **dst, const char *src)
{
    if (*dst || !src)
        return KF_OK;
    return (*dst = strdup(src)) ? KF_OK : oom(c);
}

static int parse_host(ctx *c, const yaml_node_t *n, const defaults *d, kf_fleet_host *h)
{
    static const char *const keys[] = {"name",     "provider", "host",   "port",      "user",
                                       "identity", "workdir",  "labels", "ssh_alias", NULL};
    host_fields f = {0};
    yaml_node_t *v;
    int rc;
    h->line = (int)n->start_mark.line + 1;
    h->col = (int)n->start_mark.column + 1;
    if (n->type != YAML_MAPPING_NODE)
        return fail(c, n,
                    "a host must be a mapping with host: (or ssh_alias:) and other keys, not %s; "
                    "see docs/inventory.md",
                    kind(n));
    if ((rc = check_keys(c, n, "in a host", keys)))
        return rc;
    if ((v = map_get(c, n, "name"))) {
        if ((rc = nonempty_scalar(c, v, "name", &f.name)))
            return rc;
        if (!word_ok(f.name, "._-", MAX_NAME) || f.name[0] == '.')
            return fail(c, v,
                        "name '%.80s' is not a valid host name for kfleet; use letters, digits, "
                        "'.', '_' and '-' (at most %d, not starting with '-' or '.')",
                        f.name, MAX_NAME);
    }
    if ((v = map_get(c, n, "provider")) && (rc = get_provider(c, v, &f.provider)))
        return rc;
    if ((v = map_get(c, n, "host"))) {
        if ((rc = nonempty_scalar(c, v, "host", &f.host)))
            return rc;
        if (!word_ok(f.host, ".:_%-", 253))
            return fail(c, v,
                        "host '%.80s' is not a host name or IP address; give the node's address, "
                        "like 203.0.113.7 or gpu1.example.com",
                        f.host);
    }
    if ((v = map_get(c, n, "port")) && (rc = get_port(c, v, &f.port)))
        return rc;
    if ((v = map_get(c, n, "user")) && (rc = get_user(c, v, &f.user)))
        return rc;
    if ((v = map_get(c, n, "identity")) && (rc = get_identity(c, v, &f.identity)))
        return rc;
    if ((v = map_get(c, n, "workdir")) && (rc = get_workdir(c, v, &f.workdir)))
        return rc;
    if ((v = map_get(c, n, "labels")) && (rc = parse_labels(c, v, h)))
        return rc;
    if ((v = map_get(c, n, "ssh_alias"))) {
        if ((rc = nonempty_scalar(c, v, "ssh_alias", &f.alias)))
            return rc;
        if (!word_ok(f.alias, "._-", 253))
            return fail(c, v,
                        "ssh_alias '%.80s' is not a Host name; use the name you type after ssh "
                        "(no spaces or wildcards)",
                        f.alias);
        f.alias_node = v;
        if (!(h->ssh_alias = strdup(f.alias)))
            return oom(c);
        if ((rc = apply_alias(c, &f, h, d)))
            return rc;
    }
    if (!f.host && !h->host)
        return fail(c, n,
                    "this host has neither host: nor ssh_alias:; add the node's address "
                    "(host: 203.0.113.7) or an ssh_alias: from ~/.ssh/config");
    if ((rc = dup_or_oom(c, &h->host, f.host)))
        return rc;
    h->port = f.port ? f.port : d->port ? d->port : 22;
    if ((rc = dup_or_oom(c, &h->user, f.user ? f.user : d->user ? d->user : "root")))
        return rc;
    const char *ident = f.identity ? f.identity : h->identity ? NULL : d->identity;
    if (ident && !(h->identity = local_path(c, ident)))
        return oom(c);
    if ((rc = dup_or_oom(c, &h->provider,
                         f.provider    ? f.provider
                         : d->provider ? d->provider
                                       : "ssh")))
        return rc;
    const char *wd = f.workdir                            ? f.workdir
                     : d->workdir                         ? d->workdir
                     : strcmp(h->provider, "runpod") == 0 ? "/workspace/kfleet"
                                                          : "~/kfleet";
    if ((rc = dup_or_oom(c, &h->workdir, wd)))
        return rc;
    return dup_or_oom(c, &h->name, f.name ? f.name : f.alias ? f.alias : h->host);
}

static void host_free(kf_fleet_host *h)
{
    free(h->name);
    free(h->provider);
    free(h->host);
    free(h->user);
    free(h->identity);
    free(h->workdir);
    free(h->ssh_alias);
    for (size_t i = 0; i < h->nlabels; i++)
        free(h->labels[i]);
    free(h->labels);
}

static int parse_defaults(ctx *c, const yaml_node_t *n, defaults *d)
{
    static const char *const keys[] = {"provider", "user", "identity", "port", "workdir", NULL};
    yaml_node_t *v;
    int rc;
    if (n->type != YAML_MAPPING_NODE)
        return fail(c, n, "defaults must be a mapping, like defaults: {user: ubuntu}, not %s",
                    kind(n));
    if ((rc = check_keys(c, n, "in defaults", keys)))
        return rc;
    if ((v = map_get(c, n, "provider")) && (rc = get_provider(c, v, &d->provider)))
        return rc;
    if ((v = map_get(c, n, "user")) && (rc = get_user(c, v, &d->user)))
        return rc;
    if ((v = map_get(c, n, "identity")) && (rc = get_identity(c, v, &d->identity)))
        return rc;
    if ((v = map_get(c, n, "port")) && (rc = get_port(c, v, &d->port)))
        return rc;
    if ((v = map_get(c, n, "workdir")) && (rc = get_workdir(c, v, &d->workdir)))
        return rc;
    return KF_OK;
}

static int parse_root(ctx *c, const yaml_node_t *root, kf_fleet *f)
{
    static const char *const keys[] = {"hosts", "defaults", NULL};
    defaults d = {0};
    yaml_node_t *v;
    int rc;
    if (root->type != YAML_MAPPING_NODE)
        return fail(c, root,
                    "the top level must be a mapping with hosts:, not %s; see docs/inventory.md",
                    kind(root));
    if ((rc = check_keys(c, root, "at the top level", keys)))
        return rc;
    if ((v = map_get(c, root, "defaults")) && (rc = parse_defaults(c, v, &d)))
        return rc;
    yaml_node_t *hn = map_get(c, root, "hosts");
    if (!hn)
        return fail(c, root, "missing hosts:; add the list of nodes, like hosts: [{host: gpu1}]");
    if (hn->type != YAML_SEQUENCE_NODE)
        return fail(c, hn, "hosts must be a list of host entries, not %s", kind(hn));
    size_t n = seq_len(hn);
    if (n == 0)
        return fail(c, hn, "hosts is empty; list at least one node");
    if (n > KF_FLEET_MAX_HOSTS)
        return fail(c, hn, "%zu hosts is too many (the limit is %d); split the inventory", n,
                    KF_FLEET_MAX_HOSTS);
    if (!(f->hosts = calloc(n, sizeof *f->hosts)))
        return oom(c);
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *it = seq_item(c, hn, i);
        f->nhosts = i + 1; /* so a half-filled host is freed too */
        if ((rc = parse_host(c, it, &d, &f->hosts[i])))
            return rc;
        for (size_t j = 0; j < i; j++)
            if (strcmp(f->hosts[j].name, f->hosts[i].name) == 0)
                return fail(c, it,
                            "host name '%s' is already used by the host at %d:%d; names must be "
                            "unique, add name: to tell them apart",
                            f->hosts[i].name, f->hosts[j].line, f->hosts[j].col);
    }
    return KF_OK;
}

/* ---- loading ---- */

static void offset_mark(const char *txt, size_t len, size_t off, size_t *line, size_t *col)
{
    *line = *col = 0;
    for (size_t i = 0; i < off && i < len; i++) {
        if (txt[i] == '\n')
            *line += 1, *col = 0;
        else if (((unsigned char)txt[i] & 0xC0) != 0x80)
            *col += 1;
    }
}

static int syntax_error(ctx *c, const yaml_parser_t *p)
{
    if (p->error == YAML_MEMORY_ERROR)
        return oom(c);
    size_t line = p->problem_mark.line, col = p->problem_mark.column;
    if (p->error == YAML_READER_ERROR) {
        offset_mark(c->text, c->len, p->problem_offset, &line, &col);
        return fail_at(c, line, col, "the file is not valid UTF-8 text (%s); save it as UTF-8",
                       p->problem ? p->problem : "unreadable");
    }
    const char *hint = p->error == YAML_COMPOSER_ERROR
                           ? "define each anchor (&name) before an alias (*name) uses it"
                           : "check the indentation, colons and quotes here";
    if (p->context)
        return fail_at(c, line, col, "YAML syntax error: %s %s that starts at %zu:%zu; %s",
                       p->problem ? p->problem : "", p->context, p->context_mark.line + 1,
                       p->context_mark.column + 1, hint);
    return fail_at(c, line, col, "YAML syntax error: %s; %s",
                   p->problem ? p->problem : "unknown problem", hint);
}

static int load(ctx *c, kf_fleet *f)
{
    yaml_parser_t p;
    yaml_document_t doc, extra;
    int rc, have_doc = 0;
    const char *nul = memchr(c->text, '\0', c->len);
    if (nul) {
        size_t line, col;
        offset_mark(c->text, c->len, (size_t)(nul - c->text), &line, &col);
        return fail_at(c, line, col, "the file contains a NUL byte; an inventory is UTF-8 text");
    }
    if (!yaml_parser_initialize(&p))
        return oom(c);
    yaml_parser_set_input_string(&p, (const unsigned char *)c->text, c->len);
    if (!yaml_parser_load(&p, &doc)) {
        rc = syntax_error(c, &p);
        goto out;
    }
    have_doc = 1;
    c->doc = &doc;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) {
        rc =
            fail_at(c, 0, 0, "the file is empty; an inventory needs hosts:, see docs/inventory.md");
        goto out;
    }
    if (!yaml_parser_load(&p, &extra)) {
        rc = syntax_error(c, &p);
        goto out;
    }
    yaml_node_t *second = yaml_document_get_root_node(&extra);
    rc = second ? fail(c, second,
                       "a second YAML document starts here; an inventory holds one, remove the "
                       "'---' and what follows")
                : KF_OK;
    yaml_document_delete(&extra);
    if (rc == KF_OK)
        rc = parse_root(c, root, f);
out:
    if (have_doc)
        yaml_document_delete(&doc);
    yaml_parser_delete(&p);
    return rc;
}

static const char *home_dir(const kf_fleet_opts *opts)
{
    if (opts && opts->home)
        return opts->home;
    const char *h = getenv("HOME");
    if (h && *h)
        return h;
    struct passwd *pw = getpwuid(getuid());
    return pw && pw->pw_dir && *pw->pw_dir ? pw->pw_dir : NULL;
}

int kf_fleet_parse_opts(const char *path, const char *text, size_t len, const kf_fleet_opts *opts,
                        kf_fleet **out, kf_err *err)
{
    char cfg[PATH_MAX];
    ctx c = {path ? path : "<string>",    text, len, NULL, err, NULL, home_dir(opts),
             opts ? opts->base_dir : NULL};
    const char *env = getenv("KFLEET_SSH_CONFIG");
    if (opts && opts->ssh_config)
        c.ssh_config = opts->ssh_config;
    else if (env && *env)
        c.ssh_config = env;
    else if (c.home) {
        snprintf(cfg, sizeof cfg, "%s/.ssh/config", c.home);
        c.ssh_config = cfg;
    }
    kf_fleet *f = calloc(1, sizeof *f);
    if (!f)
        return oom(&c);
    int rc = load(&c, f);
    if (rc) {
        kf_fleet_destroy(&f);
        return rc;
    }
    *out = f;
    return KF_OK;
}

int kf_fleet_parse(const char *path, const char *text, size_t len, kf_fleet **out, kf_err *err)
{
    return kf_fleet_parse_opts(path, text, len, NULL, out, err);
}

int kf_fleet_load_opts(const char *path, const kf_fleet_opts *opts, kf_fleet **out, kf_err *err)
{
    kf_buf b = KF_BUF_INIT;
    if (kf_buf_read_file(&b, path) != KF_OK) {
        int e = errno;
        kf_buf_release(&b);
        return kf_err_set(err, KF_EIO, "%s: cannot read the inventory: %s; check the path", path,
                          strerror(e));
    }
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    kf_fleet_opts o = opts ? *opts : (kf_fleet_opts){0};
    o.base_dir = dir;
    int rc = kf_fleet_parse_opts(path, b.data, b.len, &o, out, err);
    kf_buf_release(&b);
    return rc;
}

int kf_fleet_load(const char *path, kf_fleet **out, kf_err *err)
{
    return kf_fleet_load_opts(path, NULL, out, err);
}

const kf_fleet_host *kf_fleet_find(const kf_fleet *f, const char *name)
{
    for (size_t i = 0; f && name && i < f->nhosts; i++)
        if (f->hosts[i].name && strcmp(f->hosts[i].name, name) == 0)
            return &f->hosts[i];
    return NULL;
}

void kf_fleet_destroy(kf_fleet **f)
{
    if (!f || !*f)
        return;
    for (size_t i = 0; i < (*f)->nhosts; i++)
        host_free(&(*f)->hosts[i]);
    free((*f)->hosts);
    free(*f);
    *f = NULL;
}
