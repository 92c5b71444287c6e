/* sweep_problem — a sweep's problem: and candidates: (docs/problems.md).
 *
 * The problem is a kernel entry (a C, CUDA or Python kernel with setup,
 * reference and tolerances) plus its seed policy (`seeds:`, the pool size,
 * and `renew:`, how long a pool lives). Its params are the configurations
 * every candidate runs. The candidates become the sweep's kernels, each
 * marked `candidate`; a candidate has no params of its own.
 *
 * The candidate contract is checked here, at submit, from the source
 * without running it: a candidate brings only the computation, so one that
 * declares tolerances, a reference, its own inputs or seeds (a Python module
 * defining tol_abs, tol_rel, atol, rtol, tolerances, reference, setup,
 * seed or seeds at its top level; a C or CUDA file naming kf_kernel_get,
 * kf_tolerances, tol_abs, tol_rel or a .reference member) is refused with its file, line and the
 * reason, and one without its entry point (run, kf_candidate_get) is refused too. The scan is by
 * text, as sweep_python's is: what it cannot see (a name built at run time) has no effect anyway,
 * because the runner never asks a candidate for any of those things and the comparison data comes
 * from the store. */
#include "common/buf.h"
#include "common/limits.h"
#include "common/tolerance.h"
#include "core/sweep_int.h"

#include "common/xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CANDIDATES 10000

enum { LANG_PY = 1, LANG_C = 2 };

/* What a candidate may not declare: the name, the languages it is looked
 * for in, and why (the message's reason). For C, `member` names are refused
 * only after '.' or "->" (a designated initializer or a store into a
 * struct), the others anywhere outside comments and strings. */
static const struct forbidden {
    const char *name;
    unsigned lang;
    int member;
    const char *why;
} forbidden[] = {
    {"tol_abs", LANG_PY | LANG_C, 0, "declares a tolerance"},
    {"tol_rel", LANG_PY | LANG_C, 0, "declares a tolerance"},
    {"atol", LANG_PY, 0, "declares a tolerance"},
    {"rtol", LANG_PY, 0, "declares a tolerance"},
    {"tolerances", LANG_PY, 0, "declares its tolerances"},
    {"kf_tolerances", LANG_C, 0, "declares its tolerances"},
    {"reference", LANG_PY, 0, "declares a reference"},
    {"reference", LANG_C, 1, "declares a reference"},
    {"setup", LANG_PY, 0, "makes its own inputs (setup(params, seed) is the problem's)"},
    {"seed", LANG_PY, 0, "declares seeds"},
    {"seeds", LANG_PY, 0, "declares seeds"},
    {"kf_kernel_get", LANG_C, 0,
     "is a whole kernel (kf_kernel_get brings its own setup, reference and tolerances)"},
};

/* The entry point each language's candidate must define. */
static const char *entry_of(unsigned lang)
{
    return lang == LANG_PY ? "run" : "kf_candidate_get";
}

static int ident_char(char ch)
{
    return isalnum((unsigned char)ch) || ch == '_';
}

/* A top-level Python line that defines `name`: `def name(`, `async def
 * name(`, `name =`, `name:` (annotated) or `name, x = ...`. Returns the
 * defined name's length, 0 for none; *at is where the name starts. */
static size_t py_defined(const char *p, size_t len, const char **at)
{
    const char *end = p + len;
    if (len == 0 || !(isalpha((unsigned char)*p) || *p == '_'))
        return 0;
    if (len > 6 && strncmp(p, "async ", 6) == 0)
        p += 6;
    if (end - p > 4 && strncmp(p, "def ", 4) == 0) {
        p += 4;
        while (p < end && *p == ' ')
            p++;
        const char *s = p;
        while (p < end && ident_char(*p))
            p++;
        *at = s;
        return (size_t)(p - s);
    }
    const char *s = p;
    while (p < end && ident_char(*p))
        p++;
    size_t n = (size_t)(p - s);
    while (p < end && *p == ' ')
        p++;
    if (p < end && ((*p == '=' && (p + 1 == end || p[1] != '=')) || *p == ':' || *p == ',')) {
        *at = s;
        return n;
    }
    return 0;
}

/* The first forbidden row matching `name` in `lang` (member: the name
 * follows '.' or "->"), or NULL. */
static const struct forbidden *forbidden_row(const char *name, size_t n, unsigned lang, int member)
{
    for (size_t i = 0; i < sizeof forbidden / sizeof *forbidden; i++) {
        const struct forbidden *f = &forbidden[i];
        if ((f->lang & lang) && strlen(f->name) == n && strncmp(f->name, name, n) == 0 &&
            (!f->member || member))
            return f;
    }
    return NULL;
}

/* Python: each top-level definition. */
static int scan_python(const char *text, size_t len, const struct forbidden **bad, int *bad_line,
                       int *bad_col, int *has_entry)
{
    int line = 0;
    for (const char *p = text; p && p < text + len;) {
        const char *end = memchr(p, '\n', (size_t)(text + len - p));
        size_t n = end ? (size_t)(end - p) : (size_t)(text + len - p);
        line++;
        const char *at = NULL;
        size_t dn = py_defined(p, n, &at);
        if (dn) {
            const struct forbidden *f = forbidden_row(at, dn, LANG_PY, 0);
            if (f && !*bad) {
                *bad = f;
                *bad_line = line;
                *bad_col = (int)(at - p) + 1;
            }
            if (dn == 3 && strncmp(at, "run", 3) == 0 && strncmp(p, "def", 3) == 0)
                *has_entry = 1;
        }
        p = end ? end + 1 : NULL;
    }
    return 0;
}

/* C and CUDA: identifiers outside comments, strings and character
 * literals. */
static int scan_c(const char *text, size_t len, const struct forbidden **bad, int *bad_line,
                  int *bad_col, int *has_entry)
{
    int line = 1;
    const char *p = text, *end = text + len, *bol = text; /* the line's start */
    char prev = 0, prev2 = 0;                             /* the last two significant characters */
    while (p < end) {
        if (*p == '\n') {
            line++;
            bol = ++p;
        } else if (p + 1 < end && p[0] == '/' && p[1] == '/') {
            while (p < end && *p != '\n')
                p++;
        } else if (p + 1 < end && p[0] == '/' && p[1] == '*') {
            p += 2;
            while (p + 1 < end && !(p[0] == '*' && p[1] == '/'))
                if (*p++ == '\n') {
                    line++;
                    bol = p;
                }
            p = p + 1 < end ? p + 2 : end;
        } else if (*p == '"' || *p == '\'') {
            char q = *p++;
            while (p < end && *p != q && *p != '\n')
                p += *p == '\\' && p + 1 < end ? 2 : 1;
            p += p < end && *p == q;
            prev2 = prev;
            prev = q;
        } else if (isalpha((unsigned char)*p) || *p == '_') {
            const char *s = p;
            while (p < end && ident_char(*p))
                p++;
            size_t n = (size_t)(p - s);
            int member = prev == '.' || (prev == '>' && prev2 == '-');
            const struct forbidden *f = forbidden_row(s, n, LANG_C, member);
            if (f && !*bad) {
                *bad = f;
                *bad_line = line;
                *bad_col = (int)(s - bol) + 1;
            }
            if (n == 16 && strncmp(s, "kf_candidate_get", 16) == 0)
                *has_entry = 1;
            prev2 = prev;
            prev = 'a';
        } else {
            if (!isspace((unsigned char)*p)) {
                prev2 = prev;
                prev = *p;
            }
            p++;
        }
    }
    return 0;
}

/* A refused candidate: the message "FILE:LINE:COL: SOURCE:L:C: candidate
 * ..." at n, kept in k (c->keep_refused) or counted and told. */
static int refuse(kf_sweep_ctx *c, const yaml_node_t *n, kf_sweep_kernel *k, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int refuse(kf_sweep_ctx *c, const yaml_node_t *n, kf_sweep_kernel *k, const char *fmt, ...)
{
    char what[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    kf_err msg, *keep = c->y.err;
    c->y.err = &msg;
    kf_yaml_fail(&c->y, n, "%s", what);
    c->y.err = keep;
    if (c->keep_refused) {
        k->refused = kf_xstrdup(msg.msg);
        return KF_OK;
    }
    if (c->nrefused++ == 0)
        c->first_refusal = kf_xstrdup(msg.msg);
    if (c->opts->on_refused)
        c->opts->on_refused(c->opts->ctx, msg.msg);
    return KF_OK;
}

int kf_sweep_check_candidate(kf_sweep_ctx *c, const yaml_node_t *n, kf_sweep_kernel *k)
{
    kf_buf b = KF_BUF_INIT;
    int read = kf_yaml_read_named(&c->y, n, "candidate source", k->path, KF_MAX_SOURCE_FILE, &b);
    if (read != KF_OK)
        return read;
    unsigned lang = k->python ? LANG_PY : LANG_C;
    const struct forbidden *bad = NULL;
    int bad_line = 0, bad_col = 0, has_entry = 0;
    const char *says = NULL;
    if (lang == LANG_PY)
        scan_python(b.data ? b.data : "", b.len, &bad, &bad_line, &bad_col, &has_entry);
    else
        scan_c(b.data ? b.data : "", b.len, &bad, &bad_line, &bad_col, &has_entry);
    if (k->format != KF_FORMAT_KFLEET) /* sweep_formats.c: a Python file of that format */
        has_entry = kf_sweep_candidate_entry(k->format, b.data ? b.data : "", b.len, &says) &&
                    lang == LANG_PY;
    kf_buf_release(&b);
    /* In a level (problems:), the problem is named: one file may hold the
     * candidates of a hundred. */
    char of[KF_SWEEP_MAX_NAME + 16] = "";
    if (c->level_problem)
        snprintf(of, sizeof of, " of problem '%s'", c->level_problem);
    if (bad)
        return refuse(c, n, k,
                      "%s:%d:%d: candidate '%s'%s %s (%s), refused: the problem owns the "
                      "inputs, the reference, the tolerances and the seeds, and a "
                      "candidate brings only the computation; remove it "
                      "(docs/problems.md)",
                      k->path, bad_line, bad_col, k->name, of, bad->why, bad->name);
    if (!has_entry)
        return refuse(c, n, k,
                      "%s: candidate '%s'%s defines no %s, refused; a %s candidate %s "
                      "(docs/problems.md)",
                      k->path, k->name, of, says ? "entry point" : entry_of(lang),
                      says              ? kf_sweep_format_name(k->format)
                      : lang == LANG_PY ? "Python"
                                        : "C",
                      says              ? says
                      : lang == LANG_PY ? "defines run(s), the work on the problem's state"
                                        : "defines kf_candidate_get (kernels/kf_kernel.h)");
    return KF_OK;
}

int kf_sweep_seed_policy(kf_sweep_ctx *c, const yaml_node_t *pn, kf_sweep_spec *s)
{
    s->seed_pool = KF_SWEEP_DEFAULT_SEED_POOL;
    s->seed_renew_s = KF_SWEEP_DEFAULT_SEED_RENEW_S;
    if (pn->type != YAML_MAPPING_NODE)
        return KF_OK;
    const yaml_node_t *v;
    int64_t i64;
    int rc;
    if ((v = kf_yaml_map_get(&c->y, pn, "seeds"))) {
        if ((rc = kf_sweep_int_value(c, v, "the problem's seeds (its secret pool's size)", 1,
                                     KF_SWEEP_MAX_SEED_POOL, &i64)))
            return rc;
        s->seed_pool = (uint32_t)i64;
    }
    if ((v = kf_yaml_map_get(&c->y, pn, "renew")) &&
        (rc = kf_sweep_duration(c, v, "the problem's renew", &s->seed_renew_s)))
        return rc;
    return KF_OK;
}

/* One of atol:/rtol:: a plain number at least 0 ("1e-2", "0.001"). */
static int tol_value(kf_sweep_ctx *c, const yaml_node_t *v, const char *key, double *out)
{
    const char *s;
    int rc = kf_yaml_nonempty_scalar(&c->y, v, key, &s);
    if (rc)
        return rc;
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(d) || d < 0 ||
        !(isdigit((unsigned char)s[0]) || s[0] == '.'))
        return kf_yaml_fail(&c->y, v,
                            "%s '%.40s' is not a number at least 0; write one like 1e-2 or 0.001",
                            key, s);
    *out = d;
    return KF_OK;
}

int kf_sweep_tol_override(kf_sweep_ctx *c, const yaml_node_t *pn, kf_sweep_spec *s)
{
    if (pn->type != YAML_MAPPING_NODE)
        return KF_OK;
    const yaml_node_t *a = kf_yaml_map_get(&c->y, pn, "atol"),
                      *r = kf_yaml_map_get(&c->y, pn, "rtol");
    if (!a && !r)
        return KF_OK;
    if (!a || !r)
        return kf_yaml_fail(&c->y, a ? a : r,
                            "%s without %s: the check is |out - ref| <= atol + rtol |ref|; give "
                            "both (KernelBench's fp32 default is atol: 1e-4 and rtol: 1e-4)",
                            a ? "atol:" : "rtol:", a ? "rtol:" : "atol:");
    int rc = tol_value(c, a, "atol:", &s->tol_atol);
    if (rc || (rc = tol_value(c, r, "rtol:", &s->tol_rtol)))
        return rc;
    /* Beside the relative-L2 bound these problems keep (0.5). */
    char why[400];
    if (kf_tol_close_vacuous(s->tol_atol, s->tol_rtol, INFINITY, 0.5, why, sizeof why))
        return kf_yaml_fail(&c->y, r, "%s", why);
    s->tol_override = 1;
    return KF_OK;
}

int kf_sweep_tol_applies(kf_sweep_ctx *c, const yaml_node_t *pn, const kf_sweep_spec *s,
                         const kf_sweep_kernel *k)
{
    if (!s->tol_override || k->format != KF_FORMAT_KFLEET)
        return KF_OK;
    return kf_yaml_fail(&c->y, kf_yaml_map_get(&c->y, pn, "atol"),
                        "atol: and rtol: override the tolerances of KernelBench and GPU MODE "
                        "problems, whose files are judged as they are; %s is a kfleet problem: "
                        "state them in its source (atol = ..., rtol = ..., or tolerances())",
                        k->path);
}

int kf_sweep_parse_problem(kf_sweep_ctx *c, const yaml_node_t *root, const kf_sweep_axis *top,
                           size_t ntop, kf_sweep_spec *s)
{
    static const char *const extra[] = {"seeds", "renew", "format", "device", "atol", "rtol", NULL};
    const yaml_node_t *pn = kf_yaml_map_get(&c->y, root, "problem");
    const yaml_node_t *kn = kf_yaml_map_get(&c->y, root, "kernels");
    const yaml_node_t *cn = kf_yaml_map_get(&c->y, root, "candidates");
    if (kn)
        return kf_yaml_fail(&c->y, kn,
                            "kernels: and problem: in one sweep; a problem's implementations "
                            "go under candidates:, or drop problem: to run kernels that judge "
                            "themselves");
    if (!cn)
        return kf_yaml_fail(&c->y, pn,
                            "a problem without candidates:; add the implementations to judge, "
                            "like candidates: [mine.py]");
    if (cn->type != YAML_SEQUENCE_NODE || kf_yaml_seq_len(cn) == 0)
        return kf_yaml_fail(&c->y, cn,
                            "candidates must be a non-empty list, not %s; write one \"- "
                            "path: FILE\" per candidate",
                            cn->type == YAML_SEQUENCE_NODE ? "an empty list" : kf_yaml_kind(cn));
    size_t len = kf_yaml_seq_len(cn);
    if (len > MAX_CANDIDATES)
        return kf_yaml_fail(&c->y, kf_yaml_seq_item(&c->y, cn, MAX_CANDIDATES),
                            "more than %d candidates in one sweep; split them over several "
                            "sweeps of the same problem (the references are reused)",
                            MAX_CANDIDATES);
    s->problem = kf_xcalloc(1, sizeof *s->problem);
    int own, axes_set = 0, rc = kf_sweep_parse_kernel(c, pn, extra, s->problem, &own);
    if (rc)
        return rc;
    if ((rc = kf_sweep_problem_format(c, pn, s->problem, own, &axes_set)))
        return rc;
    if (!own && !axes_set && (rc = kf_sweep_axes_dup(c, top, ntop, s->problem)))
        return rc;
    if ((rc = kf_sweep_seed_policy(c, pn, s)) || (rc = kf_sweep_tol_override(c, pn, s)) ||
        (rc = kf_sweep_tol_applies(c, pn, s, s->problem)))
        return rc;
    s->kernels = kf_xcalloc(len, sizeof *s->kernels);
    s->nkernels = len; /* zeroed entries free cleanly if we stop early */
    for (size_t i = 0; i < len; i++) {
        kf_sweep_kernel *k = &s->kernels[i];
        const yaml_node_t *it = kf_yaml_seq_item(&c->y, cn, i);
        if ((rc = kf_sweep_parse_kernel(c, it, NULL, k, &own)))
            return rc;
        kf_sweep_candidate_of(k, s->problem);
        if (own)
            return kf_yaml_fail(&c->y, it,
                                "candidate '%s' has params: of its own; a candidate runs the "
                                "problem's configurations: move them to problem:",
                                k->name);
        if (strcmp(k->name, s->problem->name) == 0)
            return kf_yaml_fail(&c->y, it,
                                "candidate '%s' has the problem's name; give it another with "
                                "name: next to path:",
                                k->name);
        for (size_t j = 0; j < i; j++)
            if (strcmp(s->kernels[j].name, k->name) == 0)
                return kf_yaml_fail(&c->y, it,
                                    "candidate '%s' is listed twice (first at %d:%d); give one "
                                    "another name with name: next to path:",
                                    k->name, s->kernels[j].line, s->kernels[j].col);
        if ((rc = kf_sweep_check_candidate(c, it, k)))
            return rc;
        if ((rc = kf_sweep_axes_dup(c, s->problem->axes, s->problem->naxes, k)))
            return rc;
    }
    return KF_OK;
}
