/* sweep_axes — the parameter axes of a sweep file: parsing an axis (a
 * value, a list, a {from, to, step|mul} range; integers with a K/M/G
 * suffix), refusing a value given twice, copying the top-level axes to the
 * kernels that have none, and counting and walking the cartesian product of
 * a kernel's axes. sweep.c walks the rest of the file and calls in here.
 *
 * How: an axis's values are collected together with the YAML node each came
 * from, so that a repeated value (found by a stable sort) is reported at its
 * second occurrence and names the first; a range is expanded eagerly, capped
 * at MAX_AXIS_VALUES before anything is allocated. Configurations are never
 * materialised: the idx-th one is decoded from idx, last axis fastest. */
#include "core/sweep_int.h"
#include "common/xalloc.h"
#include "common/util.h"
#include <math.h>

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define MAX_AXIS_VALUES 100000 /* per range map and per axis */

typedef kf_sweep_ctx ctx;

/* ---- integers ---- */

/* A non-negative decimal integer with an optional K, M or G suffix (powers
 * of 1024). Returns 0, -1 when s is not one, -2 on overflow of int64. */
static int parse_count(const char *s, int64_t *out)
{
    if (!isdigit((unsigned char)*s))
        return -1;
    uint64_t v = 0;
    int over = 0;
    const char *p = s;
    for (; isdigit((unsigned char)*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > ((uint64_t)INT64_MAX - d) / 10)
            over = 1; /* keep scanning: "99...9x" is still not a number */
        else
            v = v * 10 + d;
    }
    unsigned shift = 0;
    if (*p == 'K' || *p == 'M' || *p == 'G')
        shift = *p == 'K' ? 10 : *p == 'M' ? 20 : 30, p++;
    if (*p)
        return -1;
    if (over || v > ((uint64_t)INT64_MAX >> shift))
        return -2;
    *out = (int64_t)(v << shift);
    return 0;
}

int kf_sweep_int_value(ctx *c, const yaml_node_t *n, const char *what, int64_t min, int64_t max,
                       int64_t *out)
{
    const char *s;
    int64_t v;
    int rc = kf_yaml_nonempty_scalar(&c->y, n, what, &s);
    if (rc)
        return rc;
    rc = parse_count(s, &v);
    if (rc == -2)
        return kf_yaml_fail(&c->y, n,
                            "%s '%.40s' is too large (the limit is %lld); use a smaller value",
                            what, s, (long long)INT64_MAX);
    if (rc == -1 && s[0] == '-' && parse_count(s + 1, &v) != -1)
        return kf_yaml_fail(&c->y, n, "%s must be at least %lld, not %.40s; use a value >= %lld",
                            what, (long long)min, s, (long long)min);
    if (rc == -1)
        return kf_yaml_fail(&c->y, n,
                            "%s must be an integer (digits with an optional K, M or G suffix), not "
                            "'%.40s'; fix the value",
                            what, s);
    if (v < min || v > max) {
        if (v < min && max >= UINT32_MAX)
            return kf_yaml_fail(&c->y, n, "%s must be at least %lld, not %lld; use a larger value",
                                what, (long long)min, (long long)v);
        return kf_yaml_fail(&c->y, n,
                            "%s must be between %lld and %lld, not %lld; use a value in range",
                            what, (long long)min, (long long)max, (long long)v);
    }
    *out = v;
    return KF_OK;
}

/* ---- parameter axes ---- */

/* Axis names reach kernels as kf_params names: C identifiers. */
static int valid_axis_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > KF_SWEEP_MAX_NAME || isdigit((unsigned char)s[0]))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_')
            return 0;
    return 1;
}

/* An axis's values while they are collected, with the node each came from
 * so a duplicate can be reported where it is. */
typedef struct vals {
    int64_t *v;
    const yaml_node_t **from;
    size_t n, cap;
} vals;

#define EXPANDED_MSG                                                                               \
    "the sweep expands to more than %u MiB of flags and parameter values (YAML aliases count "     \
    "each time they are used); use fewer or shorter values, or split the sweep"

int kf_sweep_charge(ctx *c, const yaml_node_t *at, size_t bytes)
{
    c->expanded += bytes;
    if (c->expanded <= KF_SWEEP_MAX_EXPANDED)
        return KF_OK;
    return kf_yaml_fail(&c->y, at, EXPANDED_MSG, KF_SWEEP_MAX_EXPANDED >> 20);
}

static int vals_push(ctx *c, vals *vs, const char *axis, int64_t v, const yaml_node_t *from)
{
    int rc = kf_sweep_charge(c, from, sizeof v);
    if (rc)
        return rc;
    if (vs->n == MAX_AXIS_VALUES)
        return kf_yaml_fail(&c->y, from,
                            "axis '%s' has more than %d values; use fewer values or a coarser "
                            "range",
                            axis, MAX_AXIS_VALUES);
    if (vs->n == vs->cap) {
        size_t cap = vs->cap ? vs->cap * 2 : 8;
        int64_t *nv = kf_xrealloc(vs->v, cap * sizeof *nv);
        vs->v = nv;
        const yaml_node_t **nf = kf_xrealloc(vs->from, cap * sizeof *nf);
        vs->from = nf;
        vs->cap = cap;
    }
    vs->v[vs->n] = v;
    vs->from[vs->n++] = from;
    return KF_OK;
}

static int parse_range(ctx *c, const char *axis, const yaml_node_t *map, vals *vs)
{
    static const char *const keys[] = {"from", "to", "step", "mul", NULL};
    char where[KF_SWEEP_MAX_NAME + 32], what[KF_SWEEP_MAX_NAME + 48];
    snprintf(where, sizeof where, "in a range of axis '%s'", axis);
    int rc = kf_yaml_check_keys(&c->y, map, where, keys);
    if (rc)
        return rc;
    yaml_node_t *nf = kf_yaml_map_get(&c->y, map, "from"), *nt = kf_yaml_map_get(&c->y, map, "to");
    yaml_node_t *ns = kf_yaml_map_get(&c->y, map, "step"), *nm = kf_yaml_map_get(&c->y, map, "mul");
    if (!nf || !nt)
        return kf_yaml_fail(&c->y, map,
                            "the range of axis '%s' needs both from: and to:; write {from: A, to: "
                            "B, mul: M} or {from: A, to: B, step: S}",
                            axis);
    if (!ns && !nm)
        return kf_yaml_fail(&c->y, map,
                            "the range of axis '%s' needs step: or mul:; add step: S to count up "
                            "by S or mul: M to multiply by M",
                            axis);
    if (ns && nm)
        return kf_yaml_fail(&c->y, nm, "the range of axis '%s' has both step: and mul:; keep one",
                            axis);
    int64_t from, to, by;
    snprintf(what, sizeof what, "from: of axis '%s'", axis);
    if ((rc = kf_sweep_int_value(c, nf, what, 0, INT64_MAX, &from)))
        return rc;
    snprintf(what, sizeof what, "to: of axis '%s'", axis);
    if ((rc = kf_sweep_int_value(c, nt, what, 0, INT64_MAX, &to)))
        return rc;
    if (from > to)
        return kf_yaml_fail(&c->y, nt,
                            "the range of axis '%s' goes from %lld down to %lld; from: must be <= "
                            "to:, swap them",
                            axis, (long long)from, (long long)to);
    snprintf(what, sizeof what, "%s of axis '%s'", ns ? "step:" : "mul:", axis);
    if ((rc = kf_sweep_int_value(c, ns ? ns : nm, what, ns ? 1 : 2, INT64_MAX, &by)))
        return rc;
    if (ns) {
        uint64_t count = (uint64_t)(to - from) / (uint64_t)by + 1;
        if (count > MAX_AXIS_VALUES)
            return kf_yaml_fail(&c->y, map,
                                "the range of axis '%s' has %llu values, more than %d; use a "
                                "larger step: or a narrower range",
                                axis, (unsigned long long)count, MAX_AXIS_VALUES);
        for (uint64_t i = 0; i < count; i++)
            if ((rc = vals_push(c, vs, axis, from + (int64_t)i * by, map)))
                return rc;
        return KF_OK;
    }
    if (from == 0)
        return kf_yaml_fail(&c->y, nf,
                            "the range of axis '%s' multiplies from 0, which never grows; start "
                            "from: at 1 or more, or use step:",
                            axis);
    /* v <= to / by guarantees v * by <= to: no overflow, and it stops. */
    for (int64_t v = from;; v *= by) {
        if ((rc = vals_push(c, vs, axis, v, map)))
            return rc;
        if (v > to / by)
            break;
    }
    return KF_OK;
}

static int axis_item(ctx *c, const char *axis, const yaml_node_t *n, vals *vs)
{
    char what[KF_SWEEP_MAX_NAME + 32];
    int64_t v = 0;
    if (n->type == YAML_MAPPING_NODE)
        return parse_range(c, axis, n, vs);
    if (n->type != YAML_SCALAR_NODE)
        return kf_yaml_fail(&c->y, n,
                            "axis '%s' holds a list inside a list; flatten it into one list", axis);
    snprintf(what, sizeof what, "a value of axis '%s'", axis);
    int rc = kf_sweep_int_value(c, n, what, 0, INT64_MAX, &v);
    return rc ? rc : vals_push(c, vs, axis, v, n);
}

typedef struct ordered {
    int64_t v;
    size_t i;
} ordered;

static int cmp_ordered(const void *a, const void *b)
{
    const ordered *x = a, *y = b;
    if (x->v != y->v)
        return x->v < y->v ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* The same value twice would run the same configuration twice. Reports the
 * first repeat in file order. */
static int check_unique(ctx *c, const char *axis, const vals *vs)
{
    ordered *o = kf_xmalloc(vs->n * sizeof *o);
    for (size_t i = 0; i < vs->n; i++)
        o[i] = (ordered){vs->v[i], i};
    qsort(o, vs->n, sizeof *o, cmp_ordered);
    size_t start = 0, first = 0, again = SIZE_MAX;
    for (size_t i = 1; i < vs->n; i++) {
        if (o[i].v != o[i - 1].v) {
            start = i;
        } else if (o[i].i < again) {
            again = o[i].i;
            first = o[start].i;
        }
    }
    free(o);
    if (again == SIZE_MAX)
        return KF_OK;
    const yaml_node_t *a = vs->from[first];
    return kf_yaml_fail(&c->y, vs->from[again],
                        "value %lld appears twice in axis '%s' (also at %zu:%zu); "
                        "remove one",
                        (long long)vs->v[again], axis, a->start_mark.line + 1,
                        a->start_mark.column + 1);
}

static int parse_axis(ctx *c, const char *name, const yaml_node_t *n, kf_sweep_axis *axis)
{
    vals vs = {0};
    int rc = KF_OK;
    if (n->type == YAML_SCALAR_NODE && n->data.scalar.length == 0) {
        rc = kf_yaml_fail(&c->y, n,
                          "axis '%s' has no values; give a value, a list [A, B] or a range {from: "
                          "A, to: B, mul: M}",
                          name);
    } else if (n->type == YAML_SEQUENCE_NODE) {
        if (kf_yaml_seq_len(n) == 0)
            rc =
                kf_yaml_fail(&c->y, n, "axis '%s' is an empty list; give at least one value", name);
        for (size_t i = 0; rc == KF_OK && i < kf_yaml_seq_len(n); i++)
            rc = axis_item(c, name, kf_yaml_seq_item(&c->y, n, i), &vs);
    } else {
        rc = axis_item(c, name, n, &vs);
    }
    if (rc == KF_OK)
        rc = check_unique(c, name, &vs);
    if (rc == KF_OK)
        axis->name = kf_xstrdup(name);
    free(vs.from);
    if (rc) {
        free(vs.v);
        return rc;
    }
    axis->values = vs.v;
    axis->nvalues = vs.n;
    return KF_OK;
}

void kf_sweep_axes_free(kf_sweep_axis *axes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(axes[i].name);
        free(axes[i].values);
    }
    free(axes);
}

int kf_sweep_parse_params(ctx *c, const yaml_node_t *pn, kf_sweep_axis **out, size_t *nout)
{
    if (pn->type != YAML_MAPPING_NODE)
        return kf_yaml_fail(&c->y, pn,
                            "params must be a mapping from axis name to values, like {n: [1K, "
                            "4K]}, not %s; write {} for no axes",
                            kf_yaml_kind(pn));
    size_t n = kf_yaml_map_len(pn), got = 0;
    kf_sweep_axis *axes = n ? kf_xcalloc(n, sizeof *axes) : NULL;
    int rc = KF_OK;
    for (; rc == KF_OK && got < n; got++) {
        yaml_node_t *k = kf_yaml_map_key(&c->y, pn, got);
        const char *name;
        if ((rc = kf_yaml_nonempty_scalar(&c->y, k, "an axis name", &name)))
            break;
        if (got == KF_SWEEP_MAX_AXES) {
            rc = kf_yaml_fail(&c->y, k,
                              "more than %d axes; a kernel takes at most %d parameters, drop some",
                              KF_SWEEP_MAX_AXES, KF_SWEEP_MAX_AXES);
            break;
        }
        if (!valid_axis_name(name)) {
            rc =
                kf_yaml_fail(&c->y, k,
                             "axis name '%.80s' is not an identifier; use letters, digits and '_', "
                             "not starting with a digit",
                             name);
            break;
        }
        for (size_t j = 0; j < got; j++)
            if (strcmp(axes[j].name, name) == 0) {
                yaml_node_t *first = kf_yaml_map_key(&c->y, pn, j);
                rc = kf_yaml_fail(&c->y, k, "axis '%s' is given twice (first at %zu:%zu); keep one",
                                  name, first->start_mark.line + 1, first->start_mark.column + 1);
                break;
            }
        if (rc == KF_OK)
            rc = parse_axis(c, name, kf_yaml_map_value(&c->y, pn, got), &axes[got]);
    }
    if (rc) {
        kf_sweep_axes_free(axes, n);
        return rc;
    }
    *out = axes;
    *nout = n;
    return KF_OK;
}

int kf_sweep_axes_dup(ctx *c, const kf_sweep_axis *src, size_t n, kf_sweep_kernel *k)
{
    if (n == 0)
        return KF_OK;
    k->axes = kf_xcalloc(n, sizeof *k->axes);
    k->naxes = n;
    for (size_t i = 0; i < n; i++) {
        c->expanded += src[i].nvalues * sizeof *src[i].values;
        if (c->expanded > KF_SWEEP_MAX_EXPANDED)
            return kf_yaml_fail_at(&c->y, (size_t)k->line - 1, (size_t)k->col - 1, EXPANDED_MSG,
                                   KF_SWEEP_MAX_EXPANDED >> 20);
        kf_sweep_axis *a = &k->axes[i];
        a->name = kf_xstrdup(src[i].name);
        a->values = kf_xmalloc(src[i].nvalues * sizeof *a->values);
        memcpy(a->values, src[i].values, src[i].nvalues * sizeof *a->values);
        a->nvalues = src[i].nvalues;
    }
    return KF_OK;
}

/* ---- configurations ---- */

int kf_sweep_count_configs(ctx *c, const kf_sweep_spec *s)
{
    size_t total = 0;
    for (size_t i = 0; i < s->nkernels; i++) {
        const kf_sweep_kernel *k = &s->kernels[i];
        size_t n = kf_sweep_kernel_configs(k);
        if (n > KF_SWEEP_MAX_CONFIGS - total) {
            char count[32] = "more than can be counted"; /* the product saturated */
            if (n != SIZE_MAX)
                snprintf(count, sizeof count, "%zu", n);
            return kf_yaml_fail_at(
                &c->y, (size_t)k->line - 1, (size_t)k->col - 1,
                "the sweep has more than %d configurations once kernel '%s' is added "
                "(%zu before it, %s for it); use fewer axis values or split the sweep",
                KF_SWEEP_MAX_CONFIGS, k->name, total, count);
        }
        total += n;
    }
    return KF_OK;
}

size_t kf_sweep_kernel_configs(const kf_sweep_kernel *k)
{
    size_t n = 1;
    for (size_t i = 0; i < k->naxes; i++) {
        if (k->axes[i].nvalues && n > SIZE_MAX / k->axes[i].nvalues)
            return SIZE_MAX; /* saturates: callers compare against a limit */
        n *= k->axes[i].nvalues;
    }
    return n;
}

int kf_sweep_kernel_config(const kf_sweep_kernel *k, size_t idx, const char **names,
                           int64_t *values)
{
    if (idx >= kf_sweep_kernel_configs(k))
        return KF_EINVAL;
    for (size_t i = k->naxes; i-- > 0;) {
        const kf_sweep_axis *a = &k->axes[i];
        if (names)
            names[i] = a->name;
        if (values)
            values[i] = a->values[idx % a->nvalues];
        idx /= a->nvalues;
    }
    return (int)k->naxes;
}

/* A positive duration: "250ms", "2s", "1.5m", "1h" or bare seconds. */
static int duration_value(kf_sweep_ctx *c, const yaml_node_t *n, const char *what, double *out)
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

int kf_sweep_duration(kf_sweep_ctx *c, const yaml_node_t *n, const char *what, double *out)
{
    return duration_value(c, n, what, out);
}
