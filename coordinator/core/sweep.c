/* sweep — reads a sweep file (YAML) into a kf_sweep_spec. The format is in
 * sweep.h; docs/sweep-format.md is the reference for users.
 *
 * How: yamldoc loads the whole file into libyaml's node tree. Sweep files
 * are small, and every node keeps its start mark, which is what each
 * message points at. The tree is then walked once, top-down, with one
 * expected shape at every level (mapping → kernels list → kernel entry →
 * params mapping → axis values). Because nothing deeper is ever followed,
 * YAML aliases cannot make the walk loop or grow exponentially, which keeps
 * the parser safe to fuzz.
 *
 * Every mapping is checked against its list of known keys before it is read,
 * so a typo is an error that names the keys we know (and the nearest one)
 * instead of a setting silently left at its default. The spec is built in a
 * private allocation and handed over only when the whole file is valid, so a
 * failed parse leaves *out untouched and frees everything it made.
 *
 * The parameter axes (values, lists, ranges, duplicates) and the counting
 * of configurations are in sweep_axes.c, behind sweep_int.h. */
#include "core/sweep.h"
#include "common/limits.h"
#include "common/xalloc.h"
#include "core/sweep_int.h"
#include "common/buf.h"
#include "common/util.h"
#include "core/yamldoc.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <yaml.h>

#define MAX_KERNELS 4096 /* keeps the duplicate-name check quadratic-safe */
#define MAX_ATTEMPTS 100
#define MAX_FLAGS 64 /* the submit path hashes at most 64 flags per kernel */
#define MAX_FLAG_LEN 4096

typedef kf_sweep_ctx ctx;

/* ---- scalar values ---- */

static int u32_value(ctx *c, const yaml_node_t *n, const char *what, int64_t min, uint32_t *out)
{
    int64_t v;
    int rc = kf_sweep_int_value(c, n, what, min, UINT32_MAX, &v);
    if (rc == KF_OK)
        *out = (uint32_t)v;
    return rc;
}

/* A positive duration: "250ms", "2s", "1.5m", "1h" or bare seconds. */
static int duration_value(ctx *c, const yaml_node_t *n, const char *what, double *out)
{
    const char *s;
    double v;
    int rc = kf_yaml_nonempty_scalar(&c->y, n, what, &s);
    if (rc)
        return rc;
    if (s[0] == '-')
        v = -1; /* reported below as not positive, not as "not a duration" */
    else if (kf_parse_duration(s, &v) != KF_OK || !isfinite(v))
        return kf_yaml_fail(
            &c->y, n,
            "%s '%.40s' is not a duration; write it like 250ms, 2s, 1.5m, 1h or a number "
            "of seconds",
            what, s);
    if (v <= 0)
        return kf_yaml_fail(&c->y, n,
                            "%s must be longer than 0, not '%.40s'; give a positive duration or "
                            "leave it out",
                            what, s);
    *out = v;
    return KF_OK;
}

/* ---- paths and names ---- */

static int ends_with(const char *s, const char *suffix)
{
    size_t ls = strlen(s), lx = strlen(suffix);
    return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

static const char *base_name(const char *p)
{
    const char *slash = strrchr(p, '/');
    return slash ? slash + 1 : p;
}

/* Kernel names become file names (KERNELS_DIR/host/NAME.c) and keys in
 * reports, so they keep to a portable set: no '/', and no leading '.' or
 * '-' (no "..", nothing that reads as an option). */
static int valid_kernel_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > KF_SWEEP_MAX_NAME || s[0] == '.' || s[0] == '-')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("_-.", s[i]))
            return 0;
    return 1;
}

static int is_regular(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The language of a kernel source, by its suffix: ".c", ".cu" or ".py";
 * NULL for anything else. */
static const char *source_suffix(const char *path)
{
    static const char *const sfx[] = {".cu", ".c", ".py"};
    for (size_t i = 0; i < sizeof sfx / sizeof *sfx; i++)
        if (ends_with(path, sfx[i]))
            return sfx[i];
    return NULL;
}

/* Resolves `path:` against the sweep file's directory to an absolute path. */
static int resolve_path(ctx *c, const yaml_node_t *n, const char *given, kf_sweep_kernel *k)
{
    const char *sfx = source_suffix(given);
    if (!sfx)
        return kf_yaml_fail(
            &c->y, n,
            "path '%s' does not end in .c, .cu or .py; a kernel is one C (.c), CUDA (.cu) or "
            "Python (.py) source file",
            given);
    char joined[PATH_MAX], real[PATH_MAX];
    int len = given[0] == '/' || !c->base_dir
                  ? snprintf(joined, sizeof joined, "%s", given)
                  : snprintf(joined, sizeof joined, "%s/%s", c->base_dir, given);
    if (len < 0 || (size_t)len >= sizeof joined)
        return kf_yaml_fail(&c->y, n, "path '%.80s...' is too long; shorten it", given);
    if (!realpath(joined, real))
        return kf_yaml_fail(
            &c->y, n,
            "path '%s' cannot be used: %s (looked at %s); paths are relative to the "
            "sweep file's directory",
            given, strerror(errno), joined);
    if (!is_regular(real))
        return kf_yaml_fail(
            &c->y, n, "path '%s' is not a regular file (%s); point it at a kernel source file",
            given, real);
    /* The compiler picks the language from the stored (resolved) name. */
    if (!ends_with(real, sfx))
        return kf_yaml_fail(
            &c->y, n,
            "path '%s' resolves to %s, which does not end in %s; point path: at the "
            "source file itself",
            given, real, sfx);
    k->path = kf_xstrdup(real);
    k->cuda = strcmp(sfx, ".cu") == 0;
    k->python = strcmp(sfx, ".py") == 0;
    return k->python ? kf_sweep_python_scan(c, n, k) : KF_OK;
}

/* Finds a kernel named without a path: KERNELS_DIR/host/NAME.c, then
 * KERNELS_DIR/cuda/NAME.cu, then KERNELS_DIR/python/NAME.py (the torch
 * baselines). */
static int find_kernel(ctx *c, const yaml_node_t *n, kf_sweep_kernel *k)
{
    if (!c->kernels_dir)
        return kf_yaml_fail(
            &c->y, n,
            "kernel '%s' is named without a path and no kernels directory is known; "
            "give its source with path:",
            k->name);
    char cand[3][PATH_MAX], real[PATH_MAX];
    snprintf(cand[0], sizeof cand[0], "%s/host/%s.c", c->kernels_dir, k->name);
    snprintf(cand[1], sizeof cand[1], "%s/cuda/%s.cu", c->kernels_dir, k->name);
    snprintf(cand[2], sizeof cand[2], "%s/python/%s.py", c->kernels_dir, k->name);
    for (int i = 0; i < 3; i++) {
        if (!is_regular(cand[i]) || !realpath(cand[i], real))
            continue;
        k->path = kf_xstrdup(real);
        k->cuda = i == 1;
        k->python = i == 2;
        return k->python ? kf_sweep_python_scan(c, n, k) : KF_OK;
    }
    return kf_yaml_fail(
        &c->y, n,
        "unknown kernel '%s': none of %s, %s and %s exists; check the name, or give the "
        "source with path:",
        k->name, cand[0], cand[1], cand[2]);
}

/* baseline: one kernel of the sweep, or a list of them (torch_softmax for
 * the softmax kernels, torch_sdpa for the attention ones: each row is
 * compared with the first baseline that runs its configuration). Kept as
 * one comma-separated string, as the wire's Sweep.baseline carries it. */
static int parse_baselines(ctx *c, const yaml_node_t *v, kf_sweep_spec *s)
{
    size_t n = v->type == YAML_SEQUENCE_NODE ? kf_yaml_seq_len(v) : 1;
    if (v->type == YAML_SEQUENCE_NODE && n == 0)
        return kf_yaml_fail(&c->y, v, "baseline is an empty list; name a kernel, or leave it out");
    kf_buf out = KF_BUF_INIT;
    for (size_t k = 0; k < n; k++) {
        const yaml_node_t *it = v->type == YAML_SEQUENCE_NODE ? kf_yaml_seq_item(&c->y, v, k) : v;
        const char *str;
        int rc = kf_yaml_nonempty_scalar(&c->y, it, "baseline", &str);
        size_t i = 0;
        while (rc == KF_OK && i < s->nkernels && strcmp(s->kernels[i].name, str) != 0)
            i++;
        if (rc == KF_OK && i == s->nkernels)
            rc = kf_yaml_fail(&c->y, it,
                              "baseline '%.80s' is not a kernel of this sweep; name one of the "
                              "kernels listed under kernels:",
                              str);
        if (rc != KF_OK) {
            kf_buf_release(&out);
            return rc;
        }
        kf_buf_addf(&out, "%s%s", k ? "," : "", str);
    }
    s->baseline = kf_buf_detach(&out);
    return KF_OK;
}

/* ---- kernels ---- */

static int parse_flags(ctx *c, const yaml_node_t *n, kf_sweep_kernel *k)
{
    if (n->type != YAML_SEQUENCE_NODE)
        return kf_yaml_fail(&c->y, n,
                            "flags of kernel '%s' must be a list with one compiler argument per "
                            "item, like [-O3, -march=native], not %s",
                            k->name, kf_yaml_kind(n));
    size_t len = kf_yaml_seq_len(n);
    if (len == 0)
        return KF_OK;
    if (len > MAX_FLAGS)
        return kf_yaml_fail(
            &c->y, kf_yaml_seq_item(&c->y, n, MAX_FLAGS),
            "kernel '%s' has more than %d flags; put common ones in a response file "
            "(@FILE) or drop some",
            k->name, MAX_FLAGS);
    k->flags = kf_xcalloc(len, sizeof *k->flags);
    for (size_t i = 0; i < len; i++) {
        const char *s;
        const yaml_node_t *it = kf_yaml_seq_item(&c->y, n, i);
        int rc = kf_yaml_nonempty_scalar(&c->y, it, "a flag", &s);
        if (rc)
            return rc;
        size_t fl = strlen(s);
        if (fl > MAX_FLAG_LEN)
            return kf_yaml_fail(&c->y, it,
                                "a flag of kernel '%s' is %zu bytes; at most %d (put long "
                                "arguments in a response file, @FILE)",
                                k->name, fl, MAX_FLAG_LEN);
        if ((rc = kf_sweep_charge(c, it, fl + 1)))
            return rc;
        k->flags[k->nflags] = kf_xstrdup(s);
        k->nflags++;
    }
    return KF_OK;
}

/* Fills k from one entry of kernels:. *own_params tells whether the entry
 * had its own params: (even an empty one). */
static int parse_kernel(ctx *c, const yaml_node_t *n, kf_sweep_kernel *k, int *own_params)
{
    static const char *const keys[] = {"name", "path", "params", "flags", NULL};
    const char *name = NULL, *path = NULL;
    const yaml_node_t *nn = NULL, *np = NULL;
    int rc;
    k->line = (int)n->start_mark.line + 1;
    k->col = (int)n->start_mark.column + 1;
    *own_params = 0;
    if (n->type == YAML_SCALAR_NODE) {
        if ((rc = kf_yaml_nonempty_scalar(&c->y, n, "a kernel name", &name)))
            return rc;
        nn = n;
    } else if (n->type == YAML_MAPPING_NODE) {
        if ((rc = kf_yaml_check_keys(&c->y, n, "in a kernel entry", keys)))
            return rc;
        nn = kf_yaml_map_get(&c->y, n, "name");
        np = kf_yaml_map_get(&c->y, n, "path");
        if (!nn && !np)
            return kf_yaml_fail(&c->y, n,
                                "a kernel entry needs name: or path: (or both); add name: NAME to "
                                "use KERNELS_DIR or path: FILE.c for your own source");
        if (nn && (rc = kf_yaml_nonempty_scalar(&c->y, nn, "name:", &name)))
            return rc;
        if (np && (rc = kf_yaml_nonempty_scalar(&c->y, np, "path:", &path)))
            return rc;
    } else {
        return kf_yaml_fail(&c->y, n,
                            "a kernel entry must be a kernel name or a mapping with name: and/or "
                            "path:, not %s; write - NAME or - {path: FILE.c}",
                            kf_yaml_kind(n));
    }
    if (name && !valid_kernel_name(name))
        return kf_yaml_fail(&c->y, nn,
                            "kernel name '%.80s' is not valid; use letters, digits, '_', '-' and "
                            "'.', not starting with '.' or '-'",
                            name);
    if (path && (rc = resolve_path(c, np, path, k)))
        return rc;
    if (!name) {
        /* The stem of the file name; resolve_path checked the suffix. */
        const char *base = base_name(path);
        size_t stem = strlen(base) - strlen(source_suffix(base));
        k->name = kf_xmalloc(stem + 1);
        memcpy(k->name, base, stem);
        k->name[stem] = '\0';
        if (!valid_kernel_name(k->name))
            return kf_yaml_fail(&c->y, np,
                                "the file name of '%.80s' does not make a kernel name (letters, "
                                "digits, '_', '-', '.'); add name: NAME next to path:",
                                path);
    } else {
        k->name = kf_xstrdup(name);
    }
    if (!path && (rc = find_kernel(c, nn, k)))
        return rc;
    if (n->type == YAML_MAPPING_NODE) {
        yaml_node_t *pn = kf_yaml_map_get(&c->y, n, "params"),
                    *fn = kf_yaml_map_get(&c->y, n, "flags");
        if (pn) {
            *own_params = 1;
            if ((rc = kf_sweep_parse_params(c, pn, &k->axes, &k->naxes)))
                return rc;
        }
        if (fn && (rc = parse_flags(c, fn, k)))
            return rc;
    }
    return KF_OK;
}

static void kernel_free(kf_sweep_kernel *k)
{
    free(k->name);
    free(k->path);
    kf_sweep_axes_free(k->axes, k->naxes);
    for (size_t i = 0; i < k->nflags; i++)
        free(k->flags[i]);
    free(k->flags);
    for (size_t i = 0; i < k->next; i++)
        free(k->ext[i]);
    free(k->ext);
    for (size_t i = 0; i < k->nfiles; i++)
        free(k->files[i]);
    free(k->files);
}

static int parse_kernels(ctx *c, const yaml_node_t *n, const kf_sweep_axis *top, size_t ntop,
                         kf_sweep_spec *s)
{
    if (n->type != YAML_SEQUENCE_NODE)
        return kf_yaml_fail(&c->y, n,
                            "kernels must be a list, not %s; write kernels: [NAME, ...] or one "
                            "\"- NAME\" per line",
                            kf_yaml_kind(n));
    size_t len = kf_yaml_seq_len(n);
    if (len == 0)
        return kf_yaml_fail(&c->y, n, "kernels is an empty list; name at least one kernel");
    if (len > MAX_KERNELS)
        return kf_yaml_fail(&c->y, kf_yaml_seq_item(&c->y, n, MAX_KERNELS),
                            "more than %d kernels in one sweep; split it "
                            "into several sweeps",
                            MAX_KERNELS);
    s->kernels = kf_xcalloc(len, sizeof *s->kernels);
    s->nkernels = len; /* zeroed entries free cleanly if we stop early */
    for (size_t i = 0; i < len; i++) {
        kf_sweep_kernel *k = &s->kernels[i];
        int own, rc = parse_kernel(c, kf_yaml_seq_item(&c->y, n, i), k, &own);
        if (rc)
            return rc;
        if (!own && (rc = kf_sweep_axes_dup(c, top, ntop, k)))
            return rc;
        for (size_t j = 0; j < i; j++)
            if (strcmp(s->kernels[j].name, k->name) == 0)
                return kf_yaml_fail_at(
                    &c->y, (size_t)k->line - 1, (size_t)k->col - 1,
                    "kernel '%s' is listed twice (first at %d:%d); merge the two, or "
                    "give one another name with name: next to path:",
                    k->name, s->kernels[j].line, s->kernels[j].col);
    }
    return KF_OK;
}

/* ---- the rest of the top level ---- */

static int parse_tasks(ctx *c, const yaml_node_t *n, int *out)
{
    static const struct {
        const char *name;
        int bit;
    } names[] = {
        {"build", KF_TASK_BUILD}, {"validate", KF_TASK_VALIDATE}, {"profile", KF_TASK_PROFILE}};
    size_t len = n->type == YAML_SEQUENCE_NODE ? kf_yaml_seq_len(n) : 1;
    if (n->type == YAML_SEQUENCE_NODE && len == 0)
        return kf_yaml_fail(&c->y, n,
                            "tasks is an empty list; list at least one of build, validate, profile "
                            "(or leave tasks out for all three)");
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        const yaml_node_t *t = n->type == YAML_SEQUENCE_NODE ? kf_yaml_seq_item(&c->y, n, i) : n;
        const char *s;
        int rc = kf_yaml_nonempty_scalar(&c->y, t, "a task", &s), bit = 0;
        if (rc)
            return rc;
        for (size_t j = 0; j < sizeof names / sizeof names[0]; j++)
            if (strcmp(names[j].name, s) == 0)
                bit = names[j].bit;
        if (!bit)
            return kf_yaml_fail(
                &c->y, t, "unknown task '%.80s'; valid tasks are build, validate, profile", s);
        if (bits & bit)
            return kf_yaml_fail(&c->y, t, "task '%s' is listed twice; keep one", s);
        bits |= bit;
    }
    *out = bits;
    return KF_OK;
}

static int bool_value(ctx *c, const yaml_node_t *v, const char *what, int *out)
{
    static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no", "off"};
    const char *s;
    int rc = kf_yaml_nonempty_scalar(&c->y, v, what, &s);
    if (rc)
        return rc;
    for (size_t i = 0; i < 3; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = 1;
            return KF_OK;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = 0;
            return KF_OK;
        }
    }
    return kf_yaml_fail(&c->y, v, "%s must be true or false, not '%.40s'; fix the value", what, s);
}

/* A percentage as written in a sweep: a plain non-negative number, with
 * or without a trailing '%' ("0.5", "2%", ".5"). KF_EINVAL otherwise. */
static int percent_text(const char *s, double *out)
{
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (*end == '%')
        end++;
    if (end == s || *end || errno || !isfinite(d) || !(isdigit((unsigned char)s[0]) || s[0] == '.'))
        return KF_EINVAL;
    *out = d;
    return KF_OK;
}

/* A percentage above 0 (`0.5` or `0.5%`): max_noise, precision. */
static int positive_pct(ctx *c, yaml_node_t *v, const char *key, const char *what, double *out)
{
    const char *s;
    double d;
    int rc = kf_yaml_nonempty_scalar(&c->y, v, key, &s);
    if (rc)
        return rc;
    if (percent_text(s, &d) != KF_OK)
        return kf_yaml_fail(&c->y, v,
                            "%s '%.40s' is not a number; give %s in percent, like 0.5 or 2%%", key,
                            s, what);
    if (d <= 0)
        return kf_yaml_fail(&c->y, v,
                            "%s must be above 0, not %.40s; give a positive percentage or leave it "
                            "out",
                            key, s);
    *out = d;
    return KF_OK;
}

static int parse_measure(ctx *c, const yaml_node_t *n, kf_sweep_measure *m)
{
    static const char *const keys[] = {"min_samples",
                                       "min_time",
                                       "max_noise",
                                       "precision",
                                       "timeout",
                                       "warmup",
                                       "hot",
                                       "seeds",
                                       "batch",
                                       "sanitize",
                                       "ncu",
                                       "throttle",
                                       "throttle_threshold",
                                       "throttle_recovery",
                                       NULL};
    if (n->type != YAML_MAPPING_NODE)
        return kf_yaml_fail(&c->y, n,
                            "measure must be a mapping, like {min_samples: 10, min_time: 0.5s}, "
                            "not %s",
                            kf_yaml_kind(n));
    int rc = kf_yaml_check_keys(&c->y, n, "in measure", keys);
    if (rc)
        return rc;
    yaml_node_t *v;
    if ((v = kf_yaml_map_get(&c->y, n, "min_samples")) &&
        (rc = u32_value(c, v, "min_samples", 1, &m->min_samples)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "min_time")) &&
        (rc = duration_value(c, v, "min_time", &m->min_time_s)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "timeout")) &&
        (rc = duration_value(c, v, "timeout", &m->timeout_s)))
        return rc;
    /* 0 in the struct means "the agent's default", so an explicit 0 could
     * not be told apart from leaving the key out: refuse it. */
    if ((v = kf_yaml_map_get(&c->y, n, "warmup")) &&
        (rc = u32_value(c, v, "warmup", 1, &m->warmup)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "seeds")) && (rc = u32_value(c, v, "seeds", 1, &m->seeds)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "batch")) && (rc = u32_value(c, v, "batch", 1, &m->batch)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "max_noise")) &&
        (rc = positive_pct(c, v, "max_noise", "the spread above which a row is flagged noisy",
                           &m->max_noise_pct)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "precision")) &&
        (rc = positive_pct(c, v, "precision",
                           "how precisely the median must be known (95 % interval)",
                           &m->precision_pct)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "hot")) && (rc = bool_value(c, v, "hot", &m->hot)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "sanitize")) &&
        (rc = bool_value(c, v, "sanitize", &m->sanitize)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "throttle"))) {
        const char *s;
        if ((rc = kf_yaml_nonempty_scalar(&c->y, v, "throttle", &s)))
            return rc;
        if (strcmp(s, "discard") != 0 && strcmp(s, "keep") != 0)
            return kf_yaml_fail(&c->y, v,
                                "throttle must be discard or keep, not '%.40s'; discard (the "
                                "default) drops samples taken while the GPU throttled, keep "
                                "times the kernel as sustained at the power cap",
                                s);
        m->throttle_keep = strcmp(s, "keep") == 0;
    }
    if ((v = kf_yaml_map_get(&c->y, n, "throttle_threshold"))) {
        const char *s;
        double d;
        if ((rc = kf_yaml_nonempty_scalar(&c->y, v, "throttle_threshold", &s)))
            return rc;
        if (percent_text(s, &d) != KF_OK || d <= 0 || d > 100)
            return kf_yaml_fail(&c->y, v,
                                "throttle_threshold '%.40s' is not a percentage in (0, 100]; "
                                "give the share of the GPU's default SM clock below which a "
                                "sample is discarded, like 75 or 75%%",
                                s);
        m->throttle_threshold_pct = d;
    }
    if ((v = kf_yaml_map_get(&c->y, n, "throttle_recovery")) &&
        (rc = duration_value(c, v, "throttle_recovery", &m->throttle_recovery_s)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "ncu"))) {
        if (v->type != YAML_SEQUENCE_NODE || kf_yaml_seq_len(v) == 0)
            return kf_yaml_fail(&c->y, v,
                                "ncu must be a non-empty list of Nsight Compute metric names, like "
                                "[gpu__time_duration.sum]");
        size_t cnt = kf_yaml_seq_len(v);
        if (cnt > 64)
            return kf_yaml_fail(&c->y, v, "ncu lists %zu metrics; at most 64", cnt);
        m->ncu = kf_xcalloc(cnt, sizeof *m->ncu);
        for (size_t i = 0; i < cnt; i++) {
            yaml_node_t *it = kf_yaml_seq_item(&c->y, v, i);
            const char *s;
            if ((rc = kf_yaml_nonempty_scalar(&c->y, it, "an ncu metric", &s)))
                return rc;
            for (const char *q = s; *q; q++)
                if (!(isalnum((unsigned char)*q) || *q == '_' || *q == '.' || *q == ':'))
                    return kf_yaml_fail(
                        &c->y, it,
                        "ncu metric '%.80s' has a character metric names never have; "
                        "use names like sm__throughput.avg.pct_of_peak_sustained_elapsed",
                        s);
            m->ncu[i] = kf_xstrdup(s);
            m->nncu = i + 1;
        }
    }
    return KF_OK;
}

static int parse_root(ctx *c, const yaml_node_t *root, kf_sweep_spec *s)
{
    static const char *const keys[] = {"name",     "kernels",  "params",     "tasks",   "nodes",
                                       "baseline", "attempts", "time_limit", "measure", NULL};
    kf_sweep_axis *top = NULL;
    size_t ntop = 0;
    yaml_node_t *v;
    const char *str;
    int64_t i64;
    if (root->type != YAML_MAPPING_NODE)
        return kf_yaml_fail(&c->y, root,
                            "the top level must be a mapping with kernels: and other keys, not "
                            "%s; see docs/sweep-format.md",
                            kf_yaml_kind(root));
    int rc = kf_yaml_check_keys(&c->y, root, "at the top level", keys);
    if (rc)
        return rc;
    if ((v = kf_yaml_map_get(&c->y, root, "name"))) {
        if ((rc = kf_yaml_nonempty_scalar(&c->y, v, "name", &str)))
            return rc;
        if (strlen(str) > KF_SWEEP_MAX_NAME)
            return kf_yaml_fail(&c->y, v,
                                "the sweep's name is %zu bytes; at most %d (it heads every "
                                "report): shorten it",
                                strlen(str), KF_SWEEP_MAX_NAME);
        s->name = kf_xstrdup(str);
    }
    yaml_node_t *kn = kf_yaml_map_get(&c->y, root, "kernels");
    if (!kn)
        return kf_yaml_fail(&c->y, root,
                            "missing kernels:; add the list of kernels to run, like kernels: "
                            "[triad]");
    if ((v = kf_yaml_map_get(&c->y, root, "params")) &&
        (rc = kf_sweep_parse_params(c, v, &top, &ntop)))
        return rc;
    rc = parse_kernels(c, kn, top, ntop, s);
    kf_sweep_axes_free(top, ntop);
    if (rc)
        return rc;
    if ((v = kf_yaml_map_get(&c->y, root, "tasks")) && (rc = parse_tasks(c, v, &s->tasks)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, root, "nodes"))) {
        if ((rc = kf_yaml_nonempty_scalar(&c->y, v, "nodes", &str)))
            return rc;
        if (strcmp(str, "any") != 0 && strcmp(str, "all") != 0)
            return kf_yaml_fail(&c->y, v,
                                "nodes must be any or all, not '%.40s'; any runs each "
                                "configuration once on some agent, all on every agent",
                                str);
        s->nodes_all = strcmp(str, "all") == 0;
    }
    if ((v = kf_yaml_map_get(&c->y, root, "attempts"))) {
        if ((rc = kf_sweep_int_value(c, v, "attempts", 1, MAX_ATTEMPTS, &i64)))
            return rc;
        s->max_attempts = (uint32_t)i64;
    }
    if ((v = kf_yaml_map_get(&c->y, root, "time_limit")) &&
        (rc = duration_value(c, v, "time_limit", &s->time_limit_s)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, root, "measure")) && (rc = parse_measure(c, v, &s->measure)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, root, "baseline")) && (rc = parse_baselines(c, v, s)))
        return rc;
    return kf_sweep_count_configs(c, s);
}

/* ---- loading ---- */

/* The default sweep name: the file's stem ("runs/quick.yaml" → "quick"). */
static char *file_stem(const char *file)
{
    const char *base = base_name(file);
    const char *dot = strrchr(base, '.');
    size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    char *stem = kf_xmalloc(n + 1);
    memcpy(stem, base, n);
    stem[n] = '\0';
    return stem;
}

static int load(ctx *c, kf_sweep_spec *s)
{
    yaml_document_t doc;
    yaml_node_t *root;
    int rc = kf_yaml_load(&c->y, &doc, &root);
    if (rc)
        return rc;
    rc = parse_root(c, root, s);
    kf_yaml_unload(&c->y);
    return rc;
}

int kf_sweep_parse_string(const char *text, size_t len, const char *filename, const char *base_dir,
                          const char *kernels_dir, kf_sweep_spec **out, kf_err *err)
{
    const char *file = filename ? filename : "<string>";
    ctx c = {.y = {.file = file,
                   .text = text,
                   .len = len,
                   .err = err,
                   .nul_fix = "a sweep file is UTF-8 text",
                   .empty_fix = "a sweep needs at least kernels:, like kernels: [triad]",
                   .second_fix = "a sweep file holds one, remove the '---' and what follows or "
                                 "make it a separate file",
                   .empty_value_fix = "give it a value"},
             .base_dir = base_dir,
             .kernels_dir = kernels_dir};
    kf_sweep_spec *s = kf_xcalloc(1, sizeof *s);
    s->tasks = KF_TASK_BUILD | KF_TASK_VALIDATE | KF_TASK_PROFILE;
    s->max_attempts = 3;
    s->time_limit_s = 300;
    s->measure.seeds = 3;
    int rc = load(&c, s);
    if (rc == KF_OK && !s->name)
        s->name = file_stem(file);
    if (rc == KF_OK) {
        s->file = kf_xstrdup(file);
        s->text = kf_xmalloc(len + 1);
    }
    if (rc) {
        kf_sweep_destroy(&s);
        return rc;
    }
    memcpy(s->text, text, len);
    s->text[len] = '\0';
    *out = s;
    return KF_OK;
}

int kf_sweep_parse_file(const char *path, const char *kernels_dir, kf_sweep_spec **out, kf_err *err)
{
    kf_buf b = KF_BUF_INIT;
    char why[160];
    int rrc = kf_buf_read_file_max(&b, path, KF_MAX_SWEEP_FILE, why, sizeof why);
    if (rrc != KF_OK) {
        kf_buf_release(&b);
        if (rrc == KF_EINVAL)
            return kf_err_set(err, KF_EINVAL,
                              "%s: the sweep file %s; a sweep file is a regular file of at most "
                              "%u MiB",
                              path, why, KF_MAX_SWEEP_FILE >> 20);
        return kf_err_set(err, KF_EIO, "%s: cannot read the sweep file: %s; check the path", path,
                          why);
    }
    /* Paths inside are relative to the file's own directory. */
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int rc = kf_sweep_parse_string(b.data, b.len, path, dir, kernels_dir, out, err);
    kf_buf_release(&b);
    return rc;
}

void kf_sweep_destroy(kf_sweep_spec **self)
{
    if (!self || !*self)
        return;
    kf_sweep_spec *s = *self;
    for (size_t i = 0; i < s->nkernels; i++)
        kernel_free(&s->kernels[i]);
    free(s->kernels);
    free(s->name);
    free(s->file);
    free(s->text);
    free(s->baseline);
    for (size_t i = 0; i < s->measure.nncu; i++)
        free(s->measure.ncu[i]);
    free(s->measure.ncu);
    free(s);
    *self = NULL;
}
