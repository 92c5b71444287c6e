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
 * The parameter axes (values, lists, ranges, duplicates), durations and the
 * counting of configurations are in sweep_axes.c, one kernel entry (its
 * name, path and flags) in sweep_kernel.c, and a problem with its candidates
 * in sweep_problem.c, behind sweep_int.h. */
#include "core/sweep.h"
#include "common/limits.h"
#include "common/taskkind.h"
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
            rc = s->problem ? kf_yaml_fail(&c->y, it,
                                           "baseline '%.80s' is not a candidate of this sweep; "
                                           "name one of the candidates listed under candidates: "
                                           "(the problem is the judge, not a row)",
                                           str)
                            : kf_yaml_fail(&c->y, it,
                                           "baseline '%.80s' is not a kernel of this sweep; name "
                                           "one of the kernels listed under kernels:",
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
        int own, rc = kf_sweep_parse_kernel(c, kf_yaml_seq_item(&c->y, n, i), NULL, k, &own);
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

/* A sweep's `tasks:` names rows of the task-kind table (common/taskkind.h)
 * that a sweep may ask for; the valid names come from the table too. */
static void sweep_kind_names(char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; kf_task_kinds[i].name && n < len; i++)
        if (kf_task_kinds[i].sweep_bit)
            n += (size_t)snprintf(out + n, len - n, "%s%s", n ? ", " : "", kf_task_kinds[i].name);
}

static int parse_tasks(ctx *c, const yaml_node_t *n, int *out)
{
    char valid[128];
    sweep_kind_names(valid, sizeof valid);
    size_t len = n->type == YAML_SEQUENCE_NODE ? kf_yaml_seq_len(n) : 1;
    if (n->type == YAML_SEQUENCE_NODE && len == 0)
        return kf_yaml_fail(&c->y, n,
                            "tasks is an empty list; list at least one of %s "
                            "(or leave tasks out for all of them)",
                            valid);
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        const yaml_node_t *t = n->type == YAML_SEQUENCE_NODE ? kf_yaml_seq_item(&c->y, n, i) : n;
        const char *s;
        int rc = kf_yaml_nonempty_scalar(&c->y, t, "a task", &s);
        if (rc)
            return rc;
        const kf_task_kind *tk = kf_task_kind_named(s);
        int bit = tk ? (int)tk->sweep_bit : 0;
        if (!bit)
            return kf_yaml_fail(&c->y, t, "unknown task '%.80s'; valid tasks are %s", s, valid);
        if (bits & bit)
            return kf_yaml_fail(&c->y, t, "task '%s' is listed twice; keep one", s);
        bits |= bit;
    }
    *out = bits;
    return KF_OK;
}

/* A setting of two words: *out 0 for `first` (the default), 1 for `second`. */
static int either(ctx *c, const yaml_node_t *v, const char *what, const char *first,
                  const char *second, const char *why, int *out)
{
    const char *s;
    int rc = kf_yaml_nonempty_scalar(&c->y, v, what, &s);
    if (rc)
        return rc;
    if (strcmp(s, first) != 0 && strcmp(s, second) != 0)
        return kf_yaml_fail(&c->y, v, "%s must be %s or %s, not '%.40s'; %s", what, first, second,
                            s, why);
    *out = strcmp(s, second) == 0;
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
                                       "min_span",
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
                                       "thermal",
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
        (rc = kf_sweep_duration(c, v, "min_time", &m->min_time_s)))
        return rc;
    /* min_span: 0 turns it off (the struct's 0 is the agent's default). */
    if ((v = kf_yaml_map_get(&c->y, n, "min_span"))) {
        const char *s;
        double d;
        if ((rc = kf_yaml_nonempty_scalar(&c->y, v, "min_span", &s)))
            return rc;
        if (kf_parse_duration(s, &d) == KF_OK && d == 0)
            m->min_span_s = -1;
        else if ((rc = kf_sweep_duration(c, v, "min_span", &m->min_span_s)))
            return rc;
    }
    if ((v = kf_yaml_map_get(&c->y, n, "timeout")) &&
        (rc = kf_sweep_duration(c, v, "timeout", &m->timeout_s)))
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
    if ((v = kf_yaml_map_get(&c->y, n, "throttle")) &&
        (rc = either(c, v, "throttle", "discard", "keep",
                     "discard (the default) drops samples taken while the GPU throttled, keep "
                     "times the kernel as sustained at the power cap",
                     &m->throttle_keep)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, n, "thermal")) &&
        (rc = either(c, v, "thermal", "burst", "sustained",
                     "burst (the default) rests the GPU as long as each sample before the next, "
                     "sustained times samples back to back at the power cap",
                     &m->thermal_sustained)))
        return rc;
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
        (rc = kf_sweep_duration(c, v, "throttle_recovery", &m->throttle_recovery_s)))
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

/* tasks:, nodes:, attempts:, time_limit:, measure:, memory_limit: and refused: — what a
 * sweep's kernels (or a level's problems, each) run under. */
static int parse_settings(ctx *c, const yaml_node_t *root, kf_sweep_spec *s)
{
    yaml_node_t *v;
    const char *str;
    int64_t i64;
    int rc;
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
        (rc = kf_sweep_duration(c, v, "time_limit", &s->time_limit_s)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, root, "measure")) && (rc = parse_measure(c, v, &s->measure)))
        return rc;
    /* Each runner's memory (its control group's limit, docs/reliability.md):
     * at least 64 MiB, where a Python interpreter still starts. */
    if ((v = kf_yaml_map_get(&c->y, root, "memory_limit"))) {
        if ((rc = kf_sweep_int_value(c, v, "memory_limit", (int64_t)64 << 20, INT64_MAX, &i64)))
            return rc;
        s->memory_limit = (uint64_t)i64;
    }
    if ((v = kf_yaml_map_get(&c->y, root, "refused"))) {
        if (!kf_yaml_map_get(&c->y, root, "candidates"))
            return kf_yaml_fail(&c->y, v,
                                "refused: is about candidates, and this sweep has none; drop it "
                                "(a kernel that does not build or validate fails on its own)");
        if ((rc = either(c, v, "refused", "stop", "fail",
                         "stop (the default) submits nothing while a candidate is refused, fail "
                         "judges the others and makes each refused one a failed row",
                         &s->refused_fail)))
            return rc;
    }
    s->refused_fail |= c->opts->keep_going;
    c->keep_refused = s->refused_fail;
    return KF_OK;
}

static int parse_root(ctx *c, const yaml_node_t *root, kf_sweep_spec *s)
{
    static const char *const keys[] = {"name",    "kernels",      "params",   "tasks",
                                       "nodes",   "baseline",     "attempts", "time_limit",
                                       "measure", "problem",      "problems", "candidates",
                                       "refused", "memory_limit", NULL};
    kf_sweep_axis *top = NULL;
    size_t ntop = 0;
    yaml_node_t *v;
    const char *str;
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
    yaml_node_t *pn = kf_yaml_map_get(&c->y, root, "problem");
    yaml_node_t *ln = kf_yaml_map_get(&c->y, root, "problems");
    if (!kn && !pn && !ln)
        return kf_yaml_fail(&c->y, root,
                            "missing kernels:; add the list of kernels to run, like kernels: "
                            "[triad], or a problem: and its candidates: (docs/problems.md), or "
                            "problems: DIR with candidates: matched by name "
                            "(docs/sweep-format.md)");
    if (ln && (pn || kn))
        return kf_yaml_fail(&c->y, ln,
                            "problems: with %s in one sweep; problems: names many problems "
                            "(a directory or a glob), problem: one: keep one of them",
                            pn ? "problem:" : "kernels:");
    if ((rc = parse_settings(c, root, s)))
        return rc;
    if ((v = kf_yaml_map_get(&c->y, root, "params")) &&
        (rc = kf_sweep_parse_params(c, v, &top, &ntop)))
        return rc;
    if (ln) {
        if (!s->name) /* the parts' names start with it */
            s->name = kf_sweep_file_stem(c->y.file);
        rc = kf_sweep_parse_level(c, root, top, ntop, s);
    } else {
        rc =
            pn ? kf_sweep_parse_problem(c, root, top, ntop, s) : parse_kernels(c, kn, top, ntop, s);
    }
    kf_sweep_axes_free(top, ntop);
    if (rc)
        return rc;
    if (!ln && (v = kf_yaml_map_get(&c->y, root, "baseline")) && (rc = parse_baselines(c, v, s)))
        return rc;
    return ln ? KF_OK : kf_sweep_count_configs(c, s);
}

/* ---- loading ---- */

/* Refused candidates not kept stop the parse once all were read: the one
 * refusal, or how many (each told to on_refused). */
static int refusals(ctx *c)
{
    if (c->nrefused == 1 || (c->nrefused && !c->opts->on_refused))
        return kf_err_set(c->y.err, KF_EINVAL, "%s%s", c->first_refusal,
                          c->nrefused > 1 ? " (and more candidates refused)" : "");
    if (!c->nrefused)
        return KF_OK;
    return kf_err_set(c->y.err, KF_EINVAL,
                      "%s: %zu candidates refused (each named above); nothing was submitted: "
                      "fix them, or judge the others with --keep-going (or refused: fail in the "
                      "sweep), which makes each refused candidate a failed row",
                      c->y.file, c->nrefused);
}

static int load(ctx *c, kf_sweep_spec *s)
{
    yaml_document_t doc;
    yaml_node_t *root;
    int rc = kf_yaml_load(&c->y, &doc, &root);
    if (rc)
        return rc;
    rc = parse_root(c, root, s);
    if (rc == KF_OK)
        rc = refusals(c);
    kf_yaml_unload(&c->y);
    free(c->first_refusal);
    return rc;
}

int kf_sweep_parse_string(const char *text, size_t len, const char *filename, const char *base_dir,
                          const char *kernels_dir, kf_sweep_spec **out, kf_err *err)
{
    return kf_sweep_parse_string_opts(text, len, filename, base_dir, kernels_dir, NULL, out, err);
}

int kf_sweep_parse_string_opts(const char *text, size_t len, const char *filename,
                               const char *base_dir, const char *kernels_dir,
                               const kf_sweep_parse_opts *opts, kf_sweep_spec **out, kf_err *err)
{
    static const kf_sweep_parse_opts none = {0, NULL, NULL};
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
             .kernels_dir = kernels_dir,
             .opts = opts ? opts : &none};
    kf_sweep_spec *s = kf_xcalloc(1, sizeof *s);
    s->tasks = (int)kf_task_kind_sweep_all();
    s->max_attempts = 3;
    s->time_limit_s = 300;
    s->measure.seeds = 3;
    int rc = load(&c, s);
    if (rc == KF_OK && !s->name)
        s->name = kf_sweep_file_stem(file);
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
    return kf_sweep_parse_file_opts(path, kernels_dir, NULL, out, err);
}

int kf_sweep_parse_file_opts(const char *path, const char *kernels_dir,
                             const kf_sweep_parse_opts *opts, kf_sweep_spec **out, kf_err *err)
{
    kf_buf b = KF_BUF_INIT;
    /* Paths inside are relative to the file's own directory. */
    char dir[PATH_MAX];
    int rrc = kf_yaml_read_file(path, KF_MAX_SWEEP_FILE, "the sweep file", "a sweep file", &b, dir,
                                sizeof dir, err);
    if (rrc != KF_OK)
        return rrc;
    int rc = kf_sweep_parse_string_opts(b.data, b.len, path, dir, kernels_dir, opts, out, err);
    kf_buf_release(&b);
    return rc;
}
