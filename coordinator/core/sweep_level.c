/* sweep_level — a whole level in one sweep: `problems:` names many problems
 * (a directory of them, a glob, or a list of those), and each candidate
 * entry is a pattern matched per problem by name (docs/sweep-format.md):
 *
 *   problems: level1/               # or a glob, a list, or {path: ..., params: ...}
 *   candidates:
 *     - {name: torch, path: "level1/{name}.py"}
 *     - "gen/{name}_*.py"            # a glob: every match a candidate, named by its stem
 *   baseline: torch
 *
 * How: every path of problems: is globbed; a match is a problem when it is
 * a source file (.py, .c, .cu; named by its stem, as KernelBench's
 * level1/19_ReLU.py is 19_ReLU) or a directory holding problem.py,
 * problem.c or problem.cu (named by the directory, as kfleet's own
 * examples/problems/rmsnorm-cpu); any other directory is a directory of
 * problems, its entries taken in name order. The problem's format is not
 * this file's business: a problem is a path, loaded as a problem: path
 * would be. Then for each problem each candidate entry has {name} (the
 * problem's name) and {dir} (its directory) put in its path; a path with
 * a wildcard is globbed (each match named by its stem, or by its
 * directory when the stem is the problem's own name: gen/19_ReLU.py is
 * candidate gen of problem 19_ReLU), and an entry that matches nothing is a line in
 * s->missing, not an error: the level goes on, and a problem left without
 * candidates is not run. Each problem with candidates becomes a whole
 * problem sweep in s->parts, named "LEVEL.PROBLEM", with the sweep's
 * settings, checked against the candidate contract like any other. */
#include "common/buf.h"
#include "common/xalloc.h"
#include "core/sweep_int.h"

#include <dirent.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_PROBLEMS 4096
#define MAX_CANDIDATES 10000

typedef struct problem_path {
    char *path; /* the problem's source */
    char *name;
    char *dir; /* {dir}: the problem directory, or the file's */
} problem_path;

typedef struct level {
    problem_path *p;
    size_t n, cap;
} level;

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int has_glob(const char *s)
{
    return strpbrk(s, "*?[") != NULL;
}

/* rel against the sweep file's directory. */
static void joined(const kf_sweep_ctx *c, const char *rel, char *out, size_t len)
{
    if (rel[0] == '/' || !c->base_dir)
        snprintf(out, len, "%s", rel);
    else
        snprintf(out, len, "%s/%s", c->base_dir, rel);
}

/* The problem source inside a problem directory, or 0. */
static int problem_in_dir(const char *d, char *out, size_t len)
{
    static const char *const names[] = {"problem.py", "problem.c", "problem.cu"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(out, len, "%s/%s", d, names[i]);
        if (is_file(out))
            return 1;
    }
    return 0;
}

static void add_problem(level *l, const char *src, const char *name, const char *dir)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->p = kf_xrealloc(l->p, l->cap * sizeof *l->p);
    }
    /* Absolute: a glob's match is already joined to the sweep's directory. */
    char real[PATH_MAX];
    l->p[l->n++] = (problem_path){kf_xstrdup(realpath(src, real) ? real : src), kf_xstrdup(name),
                                  kf_xstrdup(dir)};
}

/* One match of a problems: path: a problem, or a directory of them (1 when
 * it gave any). */
static int take_match(level *l, const char *m, int top)
{
    char src[PATH_MAX + 16];
    if (is_file(m) && kf_sweep_is_source(m)) {
        char *stem = kf_sweep_file_stem(m), dir[PATH_MAX];
        const char *base = kf_sweep_base_name(m);
        snprintf(dir, sizeof dir, "%.*s", base > m ? (int)(base - m - 1) : 1, base > m ? m : ".");
        add_problem(l, m, stem, dir);
        free(stem);
        return 1;
    }
    if (!is_dir(m))
        return 0;
    if (problem_in_dir(m, src, sizeof src)) {
        char trimmed[PATH_MAX];
        snprintf(trimmed, sizeof trimmed, "%s", m);
        size_t tl = strlen(trimmed);
        while (tl > 1 && trimmed[tl - 1] == '/')
            trimmed[--tl] = '\0';
        add_problem(l, src, kf_sweep_base_name(trimmed), trimmed);
        return 1;
    }
    if (!top) /* a directory inside a directory of problems: not one */
        return 0;
    struct dirent **ents = NULL;
    int ne = scandir(m, &ents, NULL, alphasort), any = 0;
    for (int i = 0; i < ne; i++) {
        if (ents[i]->d_name[0] != '.' && strcmp(ents[i]->d_name, "__pycache__") != 0 &&
            strcmp(ents[i]->d_name, "__init__.py") != 0) {
            char sub[PATH_MAX + 256];
            snprintf(sub, sizeof sub, "%s/%s", m, ents[i]->d_name);
            any |= take_match(l, sub, 0);
        }
        free(ents[i]);
    }
    free(ents);
    return any;
}

/* The problems of one problems: path (a scalar node). */
static int take_path(kf_sweep_ctx *c, const yaml_node_t *n, level *l)
{
    const char *s;
    int rc = kf_yaml_nonempty_scalar(&c->y, n, "a problems: path", &s);
    if (rc)
        return rc;
    char full[PATH_MAX];
    joined(c, s, full, sizeof full);
    glob_t g;
    memset(&g, 0, sizeof g);
    int grc = glob(full, 0, NULL, &g);
    if (grc != 0 || g.gl_pathc == 0) {
        globfree(&g);
        return kf_yaml_fail(&c->y, n,
                            "problems: '%.200s' matches nothing (looked for %.300s); paths are "
                            "relative to the sweep file's directory",
                            s, full);
    }
    int any = 0;
    for (size_t i = 0; i < g.gl_pathc && l->n <= MAX_PROBLEMS; i++)
        any |= take_match(l, g.gl_pathv[i], 1);
    globfree(&g);
    if (!any)
        return kf_yaml_fail(&c->y, n,
                            "problems: '%.200s' names no problem: a problem is a source file "
                            "(.py, .c, .cu) or a directory with problem.py, problem.c or "
                            "problem.cu, and a directory of such",
                            s);
    if (l->n > MAX_PROBLEMS)
        return kf_yaml_fail(&c->y, n, "more than %d problems in one sweep; split the level",
                            MAX_PROBLEMS);
    return KF_OK;
}

/* `pattern` with {name} and {dir} replaced; NULL (and a message) when it
 * holds another {...}. */
static char *expand(const char *pattern, const problem_path *p)
{
    kf_buf b = KF_BUF_INIT;
    for (const char *q = pattern; *q; q++) {
        if (strncmp(q, "{name}", 6) == 0) {
            kf_buf_addf(&b, "%s", p->name);
            q += 5;
        } else if (strncmp(q, "{dir}", 5) == 0) {
            kf_buf_addf(&b, "%s", p->dir);
            q += 4;
        } else {
            kf_buf_add(&b, q, 1);
        }
    }
    return kf_buf_detach(&b);
}

static void add_missing(kf_sweep_spec *s, const char *msg)
{
    s->missing = kf_xrealloc(s->missing, (s->nmissing + 1) * sizeof *s->missing);
    s->missing[s->nmissing++] = kf_xstrdup(msg);
}

/* A missing line: "FILE:LINE:COL: problem 'P': ...". */
static void missing_at(kf_sweep_ctx *c, kf_sweep_spec *s, const yaml_node_t *n, const char *what)
{
    kf_err msg, *keep = c->y.err;
    c->y.err = &msg;
    kf_yaml_fail(&c->y, n, "%s", what);
    c->y.err = keep;
    add_missing(s, msg.msg);
}

/* A new candidate of part, from `path` (resolved, absolute) under `name`,
 * with the entry's flags; the contract checked. */
static int add_candidate(kf_sweep_ctx *c, const yaml_node_t *it, kf_sweep_spec *part,
                         const char *path, const char *name, const kf_sweep_kernel *entry)
{
    size_t n = part->nkernels;
    if (n >= MAX_CANDIDATES)
        return kf_yaml_fail(&c->y, it, "more than %d candidates for problem '%s'", MAX_CANDIDATES,
                            part->problem->name);
    if (n >= 8 && (n & (n - 1)) == 0) /* full at each power of two from 8 (new_part's 8) */
        part->kernels = kf_xrealloc(part->kernels, 2 * n * sizeof *part->kernels);
    kf_sweep_kernel *k = &part->kernels[part->nkernels++];
    memset(k, 0, sizeof *k);
    int rc = kf_sweep_kernel_at(c, it, path, name, k);
    if (rc)
        return rc;
    kf_sweep_candidate_of(k, part->problem);
    for (size_t f = 0; f < entry->nflags; f++) {
        k->flags = kf_xrealloc(k->flags, (k->nflags + 1) * sizeof *k->flags);
        k->flags[k->nflags++] = kf_xstrdup(entry->flags[f]);
    }
    if (strcmp(k->name, part->problem->name) == 0 && strcmp(k->path, part->problem->path) != 0)
        return kf_yaml_fail(&c->y, it,
                            "candidate %s of problem '%s' has the problem's name; give the "
                            "entry a name: of its own",
                            path, k->name);
    for (size_t j = 0; j + 1 < part->nkernels; j++)
        if (strcmp(part->kernels[j].name, k->name) == 0)
            return kf_yaml_fail(&c->y, it,
                                "problem '%s' gets two candidates named '%s' (%s and %s); give "
                                "one entry a name: of its own, or keep one pattern",
                                part->problem->name, k->name, part->kernels[j].path, k->path);
    if ((rc = kf_sweep_check_candidate(c, it, k)))
        return rc;
    return kf_sweep_axes_dup(c, part->problem->axes, part->problem->naxes, k);
}

/* What every candidate entry says, parsed once: a pattern, or a kernel
 * entry without placeholders (k filled). */
typedef struct centry {
    const yaml_node_t *node;
    const char *pattern; /* NULL: a plain entry, in k */
    const char *name;    /* name: of a pattern entry, or NULL */
    kf_sweep_kernel k;   /* a plain entry; a pattern's flags */
} centry;

static int parse_entry(kf_sweep_ctx *c, const yaml_node_t *it, centry *e)
{
    static const char *const keys[] = {"name", "path", "flags", NULL};
    e->node = it;
    const yaml_node_t *pn = it;
    if (it->type == YAML_MAPPING_NODE) {
        int rc = kf_yaml_check_keys(&c->y, it, "in a candidate entry of a level", keys);
        if (rc)
            return rc;
        pn = kf_yaml_map_get(&c->y, it, "path");
    }
    const char *path = NULL;
    if (pn && pn->type == YAML_SCALAR_NODE)
        path = kf_yaml_text(pn);
    if (!path || (!strstr(path, "{name}") && !strstr(path, "{dir}") && !has_glob(path))) {
        int own, rc = kf_sweep_parse_kernel(c, it, NULL, &e->k, &own);
        if (rc == KF_OK && own)
            rc = kf_yaml_fail(&c->y, it, "a candidate has no params: of its own");
        return rc;
    }
    e->pattern = path;
    if (it->type == YAML_MAPPING_NODE) {
        const yaml_node_t *nn = kf_yaml_map_get(&c->y, it, "name"), *fn;
        int rc;
        if (nn && (rc = kf_yaml_nonempty_scalar(&c->y, nn, "name:", &e->name)))
            return rc;
        if ((fn = kf_yaml_map_get(&c->y, it, "flags"))) {
            /* The flags through the kernel parser, on a throwaway entry. */
            if (fn->type != YAML_SEQUENCE_NODE)
                return kf_yaml_fail(&c->y, fn, "flags must be a list of compiler arguments");
            for (size_t i = 0; i < kf_yaml_seq_len(fn); i++) {
                const char *f;
                if ((rc = kf_yaml_nonempty_scalar(&c->y, kf_yaml_seq_item(&c->y, fn, i), "a flag",
                                                  &f)))
                    return rc;
                e->k.flags = kf_xrealloc(e->k.flags, (e->k.nflags + 1) * sizeof *e->k.flags);
                e->k.flags[e->k.nflags++] = kf_xstrdup(f);
            }
        }
    }
    return KF_OK;
}

/* The candidates entry e gives problem p, into part; misses into s. */
static int match_entry(kf_sweep_ctx *c, kf_sweep_spec *s, kf_sweep_spec *part,
                       const problem_path *p, const centry *e)
{
    char what[PATH_MAX + 200];
    if (!e->pattern)
        return add_candidate(c, e->node, part, e->k.path, e->k.name, &e->k);
    char *rel = expand(e->pattern, p), full[PATH_MAX];
    joined(c, rel, full, sizeof full);
    glob_t g;
    memset(&g, 0, sizeof g);
    int rc = KF_OK, n = 0;
    if (glob(full, 0, NULL, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc && rc == KF_OK; i++) {
            if (!is_file(g.gl_pathv[i]) || !kf_sweep_is_source(g.gl_pathv[i]))
                continue;
            char *stem = kf_sweep_file_stem(g.gl_pathv[i]);
            if (strcmp(stem, p->name) == 0) {
                /* gen/19_ReLU.py for problem 19_ReLU: named by its
                 * directory (gen), as the problem already has the name. */
                free(stem);
                char d[PATH_MAX];
                snprintf(d, sizeof d, "%s", g.gl_pathv[i]);
                char *slash = strrchr(d, '/');
                if (slash)
                    *slash = '\0';
                stem = kf_xstrdup(slash ? kf_sweep_base_name(d) : "candidate");
            }
            /* name: names the candidate when the pattern is one file. */
            char *name = e->name && !has_glob(rel) ? expand(e->name, p) : NULL;
            char real[PATH_MAX];
            rc = add_candidate(c, e->node, part,
                               realpath(g.gl_pathv[i], real) ? real : g.gl_pathv[i],
                               name ? name : stem, &e->k);
            free(name);
            free(stem);
            n++;
        }
    globfree(&g);
    if (rc == KF_OK && n == 0) {
        snprintf(what, sizeof what, "problem '%s': no candidate at '%s' (%s)", p->name, rel,
                 has_glob(rel) ? "the pattern matches no .py, .c or .cu file" : "no such file");
        missing_at(c, s, e->node, what);
    }
    free(rel);
    return rc;
}

/* Part i's settings: the sweep's, copied (its own name). */
static kf_sweep_spec *new_part(kf_sweep_ctx *c, const kf_sweep_spec *s, const problem_path *p)
{
    kf_sweep_spec *t = kf_xcalloc(1, sizeof *t);
    kf_buf nb = KF_BUF_INIT;
    kf_buf_addf(&nb, "%s.%s", s->name, p->name);
    t->name = kf_buf_detach(&nb);
    t->file = kf_xstrdup(c->y.file);
    t->text = kf_xmalloc(c->y.len + 1);
    memcpy(t->text, c->y.text, c->y.len);
    t->text[c->y.len] = '\0';
    t->tasks = s->tasks;
    t->nodes_all = s->nodes_all;
    t->max_attempts = s->max_attempts;
    t->time_limit_s = s->time_limit_s;
    t->memory_limit = s->memory_limit;
    t->measure = s->measure;
    t->measure.ncu = s->measure.nncu ? kf_xcalloc(s->measure.nncu, sizeof(char *)) : NULL;
    for (size_t i = 0; i < s->measure.nncu; i++)
        t->measure.ncu[i] = kf_xstrdup(s->measure.ncu[i]);
    t->refused_fail = s->refused_fail;
    t->problem = kf_xcalloc(1, sizeof *t->problem);
    t->kernels = kf_xcalloc(8, sizeof *t->kernels);
    return t;
}

/* The baselines of list (one name or several, comma-separated) that part
 * has as candidates, or NULL. */
static char *part_baseline(const kf_sweep_spec *part, const char *list)
{
    kf_buf b = KF_BUF_INIT;
    for (size_t i = 0; i < part->nkernels; i++)
        if (kf_sweep_is_baseline(list, part->kernels[i].name))
            kf_buf_addf(&b, "%s%s", b.len ? "," : "", part->kernels[i].name);
    if (!b.len) {
        kf_buf_release(&b);
        return NULL;
    }
    return kf_buf_detach(&b);
}

/* baseline: names or a list of them, comma-joined; NULL for none. */
static int baseline_list(kf_sweep_ctx *c, const yaml_node_t *v, char **out)
{
    kf_buf b = KF_BUF_INIT;
    size_t n = v->type == YAML_SEQUENCE_NODE ? kf_yaml_seq_len(v) : 1;
    for (size_t i = 0; i < n; i++) {
        const char *str;
        const yaml_node_t *it = v->type == YAML_SEQUENCE_NODE ? kf_yaml_seq_item(&c->y, v, i) : v;
        int rc = kf_yaml_nonempty_scalar(&c->y, it, "baseline", &str);
        if (rc) {
            kf_buf_release(&b);
            return rc;
        }
        kf_buf_addf(&b, "%s%s", i ? "," : "", str);
    }
    *out = kf_buf_detach(&b);
    return KF_OK;
}

static int parse_part(kf_sweep_ctx *c, const yaml_node_t *ln, const yaml_node_t *pn,
                      const kf_sweep_axis *axes, size_t naxes, int own, centry *ents, size_t nents,
                      const problem_path *p, kf_sweep_spec *s, kf_sweep_spec **out)
{
    kf_sweep_spec *part = new_part(c, s, p);
    int axes_set = 0, rc = kf_sweep_kernel_at(c, ln, p->path, p->name, part->problem);
    /* Its format (and, for KernelBench and GPU MODE, its device and GPU
     * MODE's cases) as a problem: path's (sweep_formats.c). */
    if (rc == KF_OK)
        rc = kf_sweep_problem_format(c, pn, part->problem, own, &axes_set);
    if (rc == KF_OK && !axes_set)
        rc = kf_sweep_axes_dup(c, axes, naxes, part->problem);
    part->seed_pool = s->seed_pool;
    part->seed_renew_s = s->seed_renew_s;
    part->tol_override = s->tol_override;
    part->tol_atol = s->tol_atol;
    part->tol_rtol = s->tol_rtol;
    if (rc == KF_OK)
        rc = kf_sweep_tol_applies(c, pn, s, part->problem);
    c->level_problem = p->name;
    for (size_t e = 0; e < nents && rc == KF_OK; e++)
        rc = match_entry(c, s, part, p, &ents[e]);
    c->level_problem = NULL;
    if (rc == KF_OK && strlen(part->name) > KF_SWEEP_MAX_NAME)
        rc = kf_yaml_fail(&c->y, ln,
                          "sweep '%s' would be %zu bytes; at most %d: shorten name:", part->name,
                          strlen(part->name), KF_SWEEP_MAX_NAME);
    if (rc == KF_OK && part->nkernels && (rc = kf_sweep_count_configs(c, part)) == KF_OK &&
        s->baseline)
        part->baseline = part_baseline(part, s->baseline);
    if (rc || part->nkernels == 0) {
        if (rc == KF_OK) {
            char what[300];
            snprintf(what, sizeof what,
                     "problem '%s' (%s): no candidate matched; the problem is not run", p->name,
                     p->path);
            missing_at(c, s, ln, what);
        }
        kf_sweep_destroy(&part);
    }
    *out = part;
    return rc;
}

int kf_sweep_parse_level(kf_sweep_ctx *c, const yaml_node_t *root, const kf_sweep_axis *top,
                         size_t ntop, kf_sweep_spec *s)
{
    static const char *const keys[] = {"path",   "params", "seeds", "renew", "format",
                                       "device", "atol",   "rtol",  NULL};
    const yaml_node_t *ln = kf_yaml_map_get(&c->y, root, "problems");
    const yaml_node_t *cn = kf_yaml_map_get(&c->y, root, "candidates");
    const yaml_node_t *paths = ln, *v;
    kf_sweep_axis *axes = NULL;
    size_t naxes = 0;
    int rc = KF_OK, own = 0;
    level l = {0};
    s->seed_pool = KF_SWEEP_DEFAULT_SEED_POOL;
    s->seed_renew_s = KF_SWEEP_DEFAULT_SEED_RENEW_S;
    if (!cn || cn->type != YAML_SEQUENCE_NODE || kf_yaml_seq_len(cn) == 0)
        return kf_yaml_fail(&c->y, cn ? cn : ln,
                            "problems: needs candidates:, a non-empty list of paths matched per "
                            "problem, like candidates: [\"gen/{name}/*.py\"] ({name} is each "
                            "problem's name, {dir} its directory)");
    if (ln->type == YAML_MAPPING_NODE) {
        if ((rc = kf_yaml_check_keys(&c->y, ln, "in problems", keys)))
            return rc;
        if (!(paths = kf_yaml_map_get(&c->y, ln, "path")))
            return kf_yaml_fail(&c->y, ln,
                                "problems: needs path:, a directory or glob of "
                                "problems (or a list of them)");
        if ((v = kf_yaml_map_get(&c->y, ln, "params"))) {
            own = 1;
            if ((rc = kf_sweep_parse_params(c, v, &axes, &naxes)))
                return rc;
        }
        if ((rc = kf_sweep_seed_policy(c, ln, s)) || (rc = kf_sweep_tol_override(c, ln, s)))
            goto out;
    }
    if ((v = kf_yaml_map_get(&c->y, root, "baseline")) && (rc = baseline_list(c, v, &s->baseline)))
        goto out;
    if (paths->type == YAML_SEQUENCE_NODE && kf_yaml_seq_len(paths) > 0) {
        for (size_t i = 0; i < kf_yaml_seq_len(paths) && rc == KF_OK; i++)
            rc = take_path(c, kf_yaml_seq_item(&c->y, paths, i), &l);
    } else if (paths->type == YAML_SCALAR_NODE) {
        rc = take_path(c, paths, &l);
    } else {
        rc = kf_yaml_fail(&c->y, paths,
                          "problems: must be a path (a directory or a glob) or a list of them, "
                          "not %s",
                          kf_yaml_kind(paths));
    }
    for (size_t i = 0; i < l.n && rc == KF_OK; i++)
        for (size_t j = 0; j < i && rc == KF_OK; j++)
            if (strcmp(l.p[i].name, l.p[j].name) == 0)
                rc = kf_yaml_fail(&c->y, paths,
                                  "two problems are named '%s' (%s and %s); candidates are "
                                  "matched by name: put them in two sweeps",
                                  l.p[i].name, l.p[j].path, l.p[i].path);
    size_t nents = kf_yaml_seq_len(cn);
    centry *ents = kf_xcalloc(nents, sizeof *ents);
    for (size_t e = 0; e < nents && rc == KF_OK; e++)
        rc = parse_entry(c, kf_yaml_seq_item(&c->y, cn, e), &ents[e]);
    s->parts = kf_xcalloc(l.n ? l.n : 1, sizeof *s->parts);
    for (size_t i = 0; i < l.n && rc == KF_OK; i++) {
        kf_sweep_spec *part = NULL;
        rc = parse_part(c, paths, ln, own ? axes : top, own ? naxes : ntop, own, ents, nents,
                        &l.p[i], s, &part);
        if (part)
            s->parts[s->nparts++] = part;
    }
    if (rc == KF_OK && s->baseline)
        for (const char *b = s->baseline; b && *b;) {
            const char *e = strchr(b, ',');
            size_t len = e ? (size_t)(e - b) : strlen(b);
            int found = 0;
            for (size_t i = 0; i < s->nparts && !found; i++)
                for (size_t k = 0; k < s->parts[i]->nkernels && !found; k++)
                    found = strlen(s->parts[i]->kernels[k].name) == len &&
                            strncmp(s->parts[i]->kernels[k].name, b, len) == 0;
            if (!found && s->nparts)
                rc = kf_yaml_fail(&c->y, v,
                                  "baseline '%.*s' is not a candidate of any problem; name one "
                                  "of the candidates (a pattern's match is named by its file's "
                                  "stem, or give the entry name:)",
                                  (int)(len < 80 ? len : 80), b);
            b = e ? e + 1 : NULL;
        }
    for (size_t e = 0; e < nents; e++)
        kf_sweep_kernel_free(&ents[e].k);
    free(ents);
out:
    for (size_t i = 0; i < l.n; i++) {
        free(l.p[i].path);
        free(l.p[i].name);
        free(l.p[i].dir);
    }
    free(l.p);
    kf_sweep_axes_free(axes, naxes);
    return rc;
}
