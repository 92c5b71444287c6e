/* fleet — reads an inventory file (YAML) into a kf_fleet; the format is in
 * fleet.h, docs/inventory.md is the user reference.
 *
 * How: as in sweep.c, yamldoc loads the file into libyaml's node tree, whose
 * nodes keep their start marks, and the tree is walked top-down with one
 * expected shape per level, never following anything deeper, so aliases
 * cannot make the walk loop and the parser is safe to fuzz. Every mapping is
 * checked against its known keys first (typos and duplicates are errors, not
 * silently ignored settings). The fleet is built privately and handed over
 * only when the whole file is valid.
 *
 * ssh_alias reads OpenSSH's client config through sshconf. Only HostName,
 * Port, User and IdentityFile are used; ProxyJump/ProxyCommand are refused,
 * because the launcher connects directly and would silently reach the wrong
 * machine. */
#include "fleet/fleet.h"
#include "common/limits.h"
#include "common/xalloc.h"
#include "common/buf.h"
#include "common/util.h"
#include "fleet/provider.h"
#include "fleet/sshconf.h"
#include "core/yamldoc.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <yaml.h>

#define MAX_LABELS 64
#define MAX_NAME 64
#define MAX_PATH_VALUE 1024

typedef struct ctx {
    kf_yaml y;
    const char *ssh_config; /* resolved path; NULL when no HOME to find it */
    const char *home;       /* NULL when unknown */
    const char *base_dir;
} ctx;

/* What `defaults:` sets; pointers into the YAML document. */
typedef struct defaults {
    const char *provider, *user, *identity, *workdir;
    int port;
} defaults;

/* ---- values ---- */

static int has_control(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 1;
    return 0;
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
    int rc = kf_yaml_nonempty_scalar(&c->y, n, "port", &s);
    if (rc)
        return rc;
    int v = port_value(s);
    if (v < 0)
        return kf_yaml_fail(
            &c->y, n,
            "port must be a number from 1 to 65535, not '%.40s'; use the node's SSH port "
            "(on a rented pod: the public port mapped to 22)",
            s);
    *out = v;
    return KF_OK;
}

/* price: one GPU-hour of the node, a number above 0 (any currency; the
 * report multiplies it, it does not convert it). */
static int get_price(ctx *c, const yaml_node_t *n, double *out)
{
    const char *s;
    int rc = kf_yaml_nonempty_scalar(&c->y, n, "price", &s);
    if (rc)
        return rc;
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v > 0) || !isfinite(v))
        return kf_yaml_fail(&c->y, n,
                            "price must be what one GPU-hour of the node costs, a number above 0 "
                            "like 2.49, not '%.40s'",
                            s);
    *out = v;
    return KF_OK;
}

/* "a, b, c or d": the table's names, for the error that lists them. */
static void name_list(kf_buf *b)
{
    const char *const *names = kf_provider_names();
    for (size_t i = 0; names[i]; i++)
        kf_buf_addf(b, "%s%s", i == 0 ? "" : names[i + 1] ? ", " : " or ", names[i]);
}

static int get_provider(ctx *c, const yaml_node_t *n, const char **out)
{
    int rc = kf_yaml_nonempty_scalar(&c->y, n, "provider", out);
    if (rc)
        return rc;
    const kf_provider *p = kf_provider_find(*out);
    if (p && !p->internal)
        return KF_OK;
    const char *best = kf_yaml_nearest(*out, kf_provider_names());
    kf_buf all = KF_BUF_INIT;
    name_list(&all);
    rc =
        kf_yaml_fail(&c->y, n, "unknown provider '%.40s'%s%s%s; use %s", *out,
                     best ? " (did you mean '" : "", best ? best : "", best ? "'?)" : "", all.data);
    kf_buf_release(&all);
    return rc;
}

static int get_user(ctx *c, const yaml_node_t *n, const char **out)
{
    int rc = kf_yaml_nonempty_scalar(&c->y, n, "user", out);
    if (rc == KF_OK && !kf_word_ok(*out, "._@-", 64))
        return kf_yaml_fail(
            &c->y, n,
            "user '%.40s' is not a login name; use letters, digits, '.', '_', '@' or "
            "'-', not starting with '-'",
            *out);
    return rc;
}

/* Normalises a path lexically, in place: repeated slashes and "." go, a
 * ".." takes the component before it ("/tmp/../" is "/"). A ".." that would
 * climb above "/" stays at "/"; above "~" it is kept, for the check to
 * refuse. The node's shell sees no symlinks here: that is the remote
 * `teardown --purge`'s own care. */
static void norm_path(char *s)
{
    int abs = s[0] == '/', home = s[0] == '~' && (s[1] == '/' || !s[1]);
    char copy[MAX_PATH_VALUE + 1];
    if (strlen(s) > MAX_PATH_VALUE)
        return;
    snprintf(copy, sizeof copy, "%s", s + (abs ? 1 : home ? (s[1] ? 2 : 1) : 0));
    const char *comp[MAX_PATH_VALUE / 2 + 1];
    size_t n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
        if (strcmp(tok, ".") == 0)
            continue;
        if (strcmp(tok, "..") == 0) {
            if (n > 0 && strcmp(comp[n - 1], "..") != 0)
                n--;
            else if (!abs)
                comp[n++] = tok; /* above "~" or a relative start: kept, refused */
            continue;            /* above "/": stays "/" */
        }
        comp[n++] = tok;
    }
    char out[MAX_PATH_VALUE + 1];
    size_t w = (size_t)snprintf(out, sizeof out, "%s", abs ? "/" : home ? "~" : "");
    for (size_t k = 0; k < n && w < sizeof out; k++)
        w += (size_t)snprintf(out + w, sizeof out - w, "%s%s", (w > 1 || home) ? "/" : "", comp[k]);
    snprintf(s, strlen(s) + 1, "%s", out); /* never longer than the input */
}

/* A workdir is absolute or "~/..."; never "/" or "~" alone once
 * normalised ("/tmp/../" is "/"), nor above "~", since `teardown --purge`
 * removes it. */
static const char *workdir_problem(const char *raw)
{
    char s[MAX_PATH_VALUE + 1];
    if (strlen(raw) > MAX_PATH_VALUE)
        return "is too long";
    snprintf(s, sizeof s, "%s", raw);
    norm_path(s);
    if (strlen(s) > MAX_PATH_VALUE)
        return "is too long";
    if (has_control(s))
        return "contains a control character";
    if (s[0] == '~' && s[1] != '/' && s[1] != '\0')
        return "uses ~user, which is not expanded; write ~/dir or an absolute path";
    if (s[0] != '/' && s[0] != '~')
        return "is relative; write an absolute path or ~/dir";
    if (strcmp(s, "/") == 0 || strcmp(s, "~") == 0)
        return "is a home or root directory (once its . and .. are resolved), which teardown "
               "--purge would remove; name a directory of its own, like ~/kfleet";
    if (strncmp(s, "~/..", 4) == 0 && (s[4] == '/' || !s[4]))
        return "climbs above the home with '..'; name a directory of its own, like ~/kfleet";
    return NULL;
}

static int get_workdir(ctx *c, const yaml_node_t *n, const char **out)
{
    int rc = kf_yaml_nonempty_scalar(&c->y, n, "workdir", out);
    if (rc)
        return rc;
    const char *why = workdir_problem(*out);
    if (why)
        return kf_yaml_fail(&c->y, n, "workdir '%.80s' %s", *out, why);
    return KF_OK;
}

static int get_identity(ctx *c, const yaml_node_t *n, const char **out)
{
    int rc = kf_yaml_nonempty_scalar(&c->y, n, "identity", out);
    if (rc)
        return rc;
    if (strlen(*out) > MAX_PATH_VALUE || has_control(*out))
        return kf_yaml_fail(
            &c->y, n, "identity '%.80s' is not a usable file path; give the key file's path", *out);
    if ((*out)[0] == '~' && (*out)[1] != '/' && (*out)[1] != '\0')
        return kf_yaml_fail(
            &c->y, n, "identity '%.80s' uses ~user, which is not expanded; write ~/path", *out);
    if ((*out)[0] == '~' && !c->home)
        return kf_yaml_fail(
            &c->y, n, "identity '%.80s' starts with ~ but HOME is not set; write the full path",
            *out);
    return KF_OK;
}

/* A local path from the inventory: "~" → home, relative → base_dir. */
static char *local_path(ctx *c, const char *s)
{
    kf_buf out = KF_BUF_INIT;
    if (s[0] == '~')
        kf_buf_addf(&out, "%s%s", c->home, s + 1);
    else if (s[0] != '/' && c->base_dir)
        kf_buf_addf(&out, "%s/%s", c->base_dir, s);
    else
        kf_buf_adds(&out, s);
    return kf_buf_detach(&out);
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
        return kf_yaml_fail(&c->y, n,
                            "labels must be a list of words, like labels: [h100, spot], not %s",
                            kf_yaml_kind(n));
    size_t cnt = kf_yaml_seq_len(n);
    if (cnt > MAX_LABELS)
        return kf_yaml_fail(&c->y, n, "%zu labels is too many (the limit is %d); keep fewer", cnt,
                            MAX_LABELS);
    if (cnt)
        h->labels = kf_xcalloc(cnt, sizeof *h->labels);
    for (size_t i = 0; i < cnt; i++) {
        yaml_node_t *it = kf_yaml_seq_item(&c->y, n, i);
        const char *s;
        int rc = kf_yaml_nonempty_scalar(&c->y, it, "a label", &s);
        if (rc)
            return rc;
        if (!kf_word_ok(s, "._:=/-", MAX_NAME))
            return kf_yaml_fail(&c->y, it,
                                "label '%.40s' has characters kfleet does not allow; use letters, "
                                "digits and . _ : = / - (at most %d, not starting with '-')",
                                s, MAX_NAME);
        for (size_t j = 0; j < i; j++)
            if (strcmp(h->labels[j], s) == 0)
                return kf_yaml_fail(&c->y, it, "label '%.40s' is listed twice; keep one", s);
        h->labels[i] = kf_xstrdup(s);
        h->nlabels = i + 1;
    }
    return KF_OK;
}

/* An error of the ssh config reader, placed at the ssh_alias. */
static int alias_error(ctx *c, const host_fields *f, int rc, const kf_err *e)
{
    (void)rc;
    return kf_yaml_fail(&c->y, f->alias_node, "ssh_alias '%.64s': %s", f->alias, e->msg);
}

/* Fills the alias's values into what the entry left unset. */
static int apply_alias(ctx *c, host_fields *f, kf_fleet_host *h, const defaults *d)
{
    if (!c->ssh_config)
        return kf_yaml_fail(&c->y, f->alias_node,
                            "ssh_alias needs an ssh config, but HOME is not set; set "
                            "KFLEET_SSH_CONFIG to the file");
    kf_sshconf *sc = NULL;
    kf_err e = {0};
    char *expanded = NULL;
    int rc = kf_sshconf_read(c->ssh_config, f->alias, c->home, &sc, &e);
    if (rc) {
        rc = alias_error(c, f, rc, &e);
        goto out;
    }
    if (!kf_sshconf_matched(sc)) {
        rc = kf_yaml_fail(&c->y, f->alias_node,
                          "ssh_alias '%.64s' matches no Host in %.300s; add a 'Host %.64s' block "
                          "there, or give host: instead",
                          f->alias, c->ssh_config, f->alias);
        goto out;
    }
    for (int k = KF_SSHCONF_PROXYJUMP; k <= KF_SSHCONF_PROXYCOMMAND; k++) {
        const char *proxy = kf_sshconf_value(sc, k);
        if (proxy && strcasecmp(proxy, "none") != 0) {
            rc = kf_yaml_fail(&c->y, f->alias_node,
                              "ssh_alias '%.64s' uses %s (%s), which kfleet's SSH client does not "
                              "follow; give the node's direct host and port in the inventory "
                              "instead",
                              f->alias, k == KF_SSHCONF_PROXYJUMP ? "ProxyJump" : "ProxyCommand",
                              kf_sshconf_where(sc, k));
            goto out;
        }
    }
    if (!f->host) {
        if (kf_sshconf_value(sc, KF_SSHCONF_HOSTNAME)) {
            rc = kf_sshconf_expand(sc, KF_SSHCONF_HOSTNAME, f->alias, NULL, &expanded, &e);
            if (rc) {
                rc = alias_error(c, f, rc, &e);
                goto out;
            }
            if (!kf_word_ok(expanded, ".:_%-", 253)) {
                rc = kf_yaml_fail(&c->y, f->alias_node,
                                  "ssh_alias '%.64s': HostName '%.100s' (%s) is not a host name "
                                  "or address; fix it there",
                                  f->alias, expanded, kf_sshconf_where(sc, KF_SSHCONF_HOSTNAME));
                goto out;
            }
            h->host = expanded;
            expanded = NULL;
        } else {
            h->host = kf_xstrdup(f->alias);
        }
    }
    const char *port = kf_sshconf_value(sc, KF_SSHCONF_PORT);
    if (!f->port && port && (f->port = port_value(port)) < 0) {
        rc = kf_yaml_fail(&c->y, f->alias_node,
                          "ssh_alias '%.64s': Port '%.40s' (%s) is not a number from 1 to 65535; "
                          "fix it there",
                          f->alias, port, kf_sshconf_where(sc, KF_SSHCONF_PORT));
        goto out;
    }
    const char *user = kf_sshconf_value(sc, KF_SSHCONF_USER);
    if (!f->user && user) {
        if (!kf_word_ok(user, "._@-", 64)) {
            rc = kf_yaml_fail(&c->y, f->alias_node,
                              "ssh_alias '%.64s': User '%.40s' (%s) is not a login name; fix it "
                              "there",
                              f->alias, user, kf_sshconf_where(sc, KF_SSHCONF_USER));
            goto out;
        }
        h->user = kf_xstrdup(user);
    }
    if (!f->identity && kf_sshconf_value(sc, KF_SSHCONF_IDENTITYFILE)) {
        const char *r = f->user ? f->user : h->user ? h->user : d->user ? d->user : "root";
        const char *hn = f->host ? f->host : h->host;
        rc = kf_sshconf_expand(sc, KF_SSHCONF_IDENTITYFILE, hn, r, &h->identity, &e);
        if (rc) {
            rc = alias_error(c, f, rc, &e);
            goto out;
        }
    }
    rc = KF_OK;
out:
    free(expanded);
    kf_sshconf_destroy(&sc);
    return rc;
}

static int dup_or_oom(ctx *c, char **dst, const char *src)
{
    if (*dst || !src)
        return KF_OK;
    *dst = kf_xstrdup(src);
    return KF_OK;
}

/* The keys of a host entry: the common ones and each provider's block. */
static int check_host_keys(ctx *c, const yaml_node_t *n)
{
    static const char *const common[] = {"name",     "provider", "host",   "port",      "user",
                                         "identity", "workdir",  "labels", "ssh_alias", "price"};
    const char *keys[sizeof common / sizeof common[0] + 33];
    size_t k = 0;
    for (; k < sizeof common / sizeof common[0]; k++)
        keys[k] = common[k];
    const kf_provider *p;
    for (size_t i = 0; (p = kf_provider_at(i)) && k < sizeof keys / sizeof keys[0] - 1; i++)
        if (p->block_key)
            keys[k++] = p->block_key;
    keys[k] = NULL;
    return kf_yaml_check_keys(&c->y, n, "in a host", keys);
}

/* The provider's own block: parsed by its row; another provider's is an
 * error. */
static int parse_block(ctx *c, const yaml_node_t *n, kf_fleet_host *h)
{
    const kf_provider *p;
    for (size_t i = 0; (p = kf_provider_at(i)); i++) {
        yaml_node_t *b = p->block_key ? kf_yaml_map_get(&c->y, n, p->block_key) : NULL;
        if (b && p != h->prov)
            return kf_yaml_fail(&c->y, b,
                                "%s: is for %s; add provider: %s to this host, or remove the "
                                "%s: block",
                                p->block_key, p->what, p->name, p->block_key);
    }
    if (!h->prov->block_key)
        return KF_OK;
    return h->prov->parse(&c->y, kf_yaml_map_get(&c->y, n, h->prov->block_key), &h->block);
}

static int parse_host(ctx *c, const yaml_node_t *n, const defaults *d, kf_fleet_host *h)
{
    host_fields f = {0};
    yaml_node_t *v;
    int rc;
    h->line = (int)n->start_mark.line + 1;
    h->col = (int)n->start_mark.column + 1;
    if (n->type != YAML_MAPPING_NODE)
        return kf_yaml_fail(
            &c->y, n,
            "a host must be a mapping with host: (or ssh_alias:) and other keys, not %s; "
            "see docs/inventory.md",
            kf_yaml_kind(n));
    if ((rc = check_host_keys(c, n)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "name"))) {
        if ((rc = kf_yaml_nonempty_scalar(&c->y, v, "name", &f.name)))
            return rc;
        if (!kf_word_ok(f.name, "._-", MAX_NAME) || f.name[0] == '.')
            return kf_yaml_fail(
                &c->y, v,
                "name '%.80s' is not a valid host name for kfleet; use letters, digits, "
                "'.', '_' and '-' (at most %d, not starting with '-' or '.')",
                f.name, MAX_NAME);
    }
    if ((v = kf_yaml_map_get(&c->y, n, "provider")) && (rc = get_provider(c, v, &f.provider)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "host"))) {
        if ((rc = kf_yaml_nonempty_scalar(&c->y, v, "host", &f.host)))
            return rc;
        if (!kf_word_ok(f.host, ".:_%-", 253))
            return kf_yaml_fail(
                &c->y, v,
                "host '%.80s' is not a host name or IP address; give the node's address, "
                "like 203.0.113.7 or gpu1.example.com",
                f.host);
    }
    if ((v = kf_yaml_map_get(&c->y, n, "port")) && (rc = get_port(c, v, &f.port)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "user")) && (rc = get_user(c, v, &f.user)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "identity")) && (rc = get_identity(c, v, &f.identity)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "workdir")) && (rc = get_workdir(c, v, &f.workdir)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "labels")) && (rc = parse_labels(c, v, h)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "price")) && (rc = get_price(c, v, &h->price)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "ssh_alias"))) {
        if ((rc = kf_yaml_nonempty_scalar(&c->y, v, "ssh_alias", &f.alias)))
            return rc;
        if (!kf_word_ok(f.alias, "._-", 253))
            return kf_yaml_fail(
                &c->y, v,
                "ssh_alias '%.80s' is not a Host name; use the name you type after ssh "
                "(no spaces or wildcards)",
                f.alias);
        f.alias_node = v;
        h->ssh_alias = kf_xstrdup(f.alias);
        if ((rc = apply_alias(c, &f, h, d)))
            return rc;
    }
    if (!f.host && !h->host)
        return kf_yaml_fail(&c->y, n,
                            "this host has neither host: nor ssh_alias:; add the node's address "
                            "(host: 203.0.113.7) or an ssh_alias: from ~/.ssh/config");
    if ((rc = dup_or_oom(c, &h->host, f.host)))
        return rc;
    h->port = f.port ? f.port : d->port ? d->port : 22;
    if ((rc = dup_or_oom(c, &h->user, f.user ? f.user : d->user ? d->user : "root")))
        return rc;
    const char *ident = f.identity ? f.identity : h->identity ? NULL : d->identity;
    if (ident)
        h->identity = local_path(c, ident);
    if ((rc = dup_or_oom(c, &h->provider,
                         f.provider    ? f.provider
                         : d->provider ? d->provider
                                       : "ssh")))
        return rc;
    h->prov = kf_provider_find(h->provider);
    if (!h->prov) /* a `defaults:` provider, checked when it was read */
        return kf_yaml_fail(&c->y, n, "unknown provider '%.40s'", h->provider);
    const char *wd = f.workdir                  ? f.workdir
                     : d->workdir               ? d->workdir
                     : h->prov->default_workdir ? h->prov->default_workdir
                                                : "~/kfleet";
    if ((rc = dup_or_oom(c, &h->workdir, wd)))
        return rc;
    norm_path(h->workdir); /* the directory teardown --purge removes, as checked */
    if ((rc = parse_block(c, n, h)))
        return rc;
    return dup_or_oom(c, &h->name, f.name ? f.name : f.alias ? f.alias : h->host);
}

static int parse_defaults(ctx *c, const yaml_node_t *n, defaults *d)
{
    static const char *const keys[] = {"provider", "user", "identity", "port", "workdir", NULL};
    yaml_node_t *v;
    int rc;
    if (n->type != YAML_MAPPING_NODE)
        return kf_yaml_fail(&c->y, n,
                            "defaults must be a mapping, like defaults: {user: ubuntu}, not %s",
                            kf_yaml_kind(n));
    if ((rc = kf_yaml_check_keys(&c->y, n, "in defaults", keys)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "provider")) && (rc = get_provider(c, v, &d->provider)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "user")) && (rc = get_user(c, v, &d->user)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "identity")) && (rc = get_identity(c, v, &d->identity)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "port")) && (rc = get_port(c, v, &d->port)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "workdir")) && (rc = get_workdir(c, v, &d->workdir)))
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
        return kf_yaml_fail(
            &c->y, root,
            "the top level must be a mapping with hosts:, not %s; see docs/inventory.md",
            kf_yaml_kind(root));
    if ((rc = kf_yaml_check_keys(&c->y, root, "at the top level", keys)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, root, "defaults")) && (rc = parse_defaults(c, v, &d)))
        return rc;
    yaml_node_t *hn = kf_yaml_map_get(&c->y, root, "hosts");
    if (!hn)
        return kf_yaml_fail(&c->y, root,
                            "missing hosts:; add the list of nodes, like hosts: [{host: gpu1}]");
    if (hn->type != YAML_SEQUENCE_NODE)
        return kf_yaml_fail(&c->y, hn, "hosts must be a list of host entries, not %s",
                            kf_yaml_kind(hn));
    size_t n = kf_yaml_seq_len(hn);
    if (n == 0)
        return kf_yaml_fail(&c->y, hn, "hosts is empty; list at least one node");
    if (n > KF_FLEET_MAX_HOSTS)
        return kf_yaml_fail(&c->y, hn,
                            "%zu hosts is too many (the limit is %d); split the inventory", n,
                            KF_FLEET_MAX_HOSTS);
    f->hosts = kf_xcalloc(n, sizeof *f->hosts);
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *it = kf_yaml_seq_item(&c->y, hn, i);
        f->nhosts = i + 1; /* so a half-filled host is freed too */
        if ((rc = parse_host(c, it, &d, &f->hosts[i])))
            return rc;
        for (size_t j = 0; j < i; j++)
            if (strcmp(f->hosts[j].name, f->hosts[i].name) == 0)
                return kf_yaml_fail(
                    &c->y, it,
                    "host name '%s' is already used by the host at %d:%d; names must be "
                    "unique, add name: to tell them apart",
                    f->hosts[i].name, f->hosts[j].line, f->hosts[j].col);
    }
    return KF_OK;
}

/* ---- loading ---- */

static int load(ctx *c, kf_fleet *f)
{
    yaml_document_t doc;
    yaml_node_t *root;
    int rc = kf_yaml_load(&c->y, &doc, &root);
    if (rc)
        return rc;
    rc = parse_root(c, root, f);
    kf_yaml_unload(&c->y);
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
    ctx c = {.y = {.file = path ? path : "<string>",
                   .text = text,
                   .len = len,
                   .err = err,
                   .nul_fix = "an inventory is UTF-8 text",
                   .empty_fix = "an inventory needs hosts:, see docs/inventory.md",
                   .second_fix = "an inventory holds one, remove the '---' and what follows",
                   .empty_value_fix = "give it a value or remove the key"},
             .home = home_dir(opts),
             .base_dir = opts ? opts->base_dir : NULL};
    const char *env = getenv("KFLEET_SSH_CONFIG");
    if (opts && opts->ssh_config)
        c.ssh_config = opts->ssh_config;
    else if (env && *env)
        c.ssh_config = env;
    else if (c.home) {
        snprintf(cfg, sizeof cfg, "%s/.ssh/config", c.home);
        c.ssh_config = cfg;
    }
    kf_fleet *f = kf_xcalloc(1, sizeof *f);
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
    char dir[PATH_MAX];
    int rrc = kf_yaml_read_file(path, KF_MAX_INVENTORY_FILE, "the inventory", "an inventory", &b,
                                dir, sizeof dir, err);
    if (rrc != KF_OK)
        return rrc;
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
        kf_fleet_host_release(&(*f)->hosts[i]);
    free((*f)->hosts);
    free(*f);
    *f = NULL;
}
