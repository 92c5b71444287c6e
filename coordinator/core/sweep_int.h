/* sweep_int — internal to the sweep parser: what sweep.c (the file's
 * top level, kernels, measure settings) and sweep_axes.c (parameter axes,
 * integers, configurations) share. Nothing outside common/sweep*.c
 * includes it; the public API is sweep.h. */
#ifndef KF_SWEEP_INT_H
#define KF_SWEEP_INT_H

#include "core/sweep.h"
#include "common/buf.h"
#include "core/yamldoc.h"

#include <stddef.h>
#include <stdint.h>

/* The longest kernel or axis name, in bytes. */
#define KF_SWEEP_MAX_NAME 128

/* One parse: the loaded document (every message goes through c->y, which
 * knows the file name) and where paths and kernel names are resolved. */
typedef struct kf_sweep_ctx {
    kf_yaml y;
    const char *base_dir;
    const char *kernels_dir;
    /* What the parse has built from the document so far: flag bytes and
     * axis values (8 bytes each), an aliased node counted every time it is
     * used. A few hundred bytes of aliases can stand for gigabytes; the
     * parse stops at KF_SWEEP_MAX_EXPANDED instead of building them. */
    size_t expanded;
    /* Refused candidates (sweep_problem.c): how the caller wants them
     * (never NULL), whether they are kept as failed rows (`refused: fail`
     * or opts->keep_going), and those not kept: how many, and the first
     * message (the error when there is no on_refused to hear them all). */
    const kf_sweep_parse_opts *opts;
    int keep_refused;
    size_t nrefused;
    char *first_refusal;
    /* The problem a level's candidates are parsed for (sweep_level.c), named
     * in their messages; NULL in a sweep of one problem. */
    const char *level_problem;
} kf_sweep_ctx;

/* The most a sweep may expand to (flags and parameter values), bytes: the
 * whole sweep travels in one request under ZeroMQ's 16 MiB limit. */
#define KF_SWEEP_MAX_EXPANDED (8u << 20)

/* Counts `bytes` more of the sweep as built; KF_EINVAL at `at` (with
 * FILE:LINE:COL) past KF_SWEEP_MAX_EXPANDED. */
int kf_sweep_charge(kf_sweep_ctx *c, const yaml_node_t *at, size_t bytes);

/* A scalar integer in [min, max]: digits with an optional K, M or G suffix
 * (powers of 1024). `what` names it in the message ("attempts", "a value of
 * axis 'n'"). Returns 0, or an error code with the message in c->y. */
int kf_sweep_int_value(kf_sweep_ctx *c, const yaml_node_t *n, const char *what, int64_t min,
                       int64_t max, int64_t *out);

/* A params mapping (axis name -> value, list or range) into a new array of
 * *nout axes (NULL and 0 for {}), which the caller frees with
 * kf_sweep_axes_free. On error nothing stays allocated. */
int kf_sweep_parse_params(kf_sweep_ctx *c, const yaml_node_t *pn, kf_sweep_axis **out,
                          size_t *nout);
/* Gives kernel k its own copy of the n axes in src (the top-level params of
 * a kernel that has none). On error what was copied stays in k, for the
 * caller's cleanup of k. */
int kf_sweep_axes_dup(kf_sweep_ctx *c, const kf_sweep_axis *src, size_t n, kf_sweep_kernel *k);
void kf_sweep_axes_free(kf_sweep_axis *axes, size_t n);

/* Reads a Python kernel's source (k->path): its device line into k->cuda
 * and the packages it imports into k->py_needs. KF_EINVAL at n (with the
 * source's own line) for a device line the scheduler cannot read. */
int kf_sweep_python_scan(kf_sweep_ctx *c, const yaml_node_t *n, kf_sweep_kernel *k);

/* sweep_kernel.c: fills k from one kernel entry (a name, or a mapping with name:, path:,
 * params:, flags: and any of `extra` keys, NULL-terminated or NULL, which
 * the caller reads). *own_params tells whether it had params:. On error
 * what was filled stays in k for kf_sweep_kernel_free. */
int kf_sweep_parse_kernel(kf_sweep_ctx *c, const yaml_node_t *n, const char *const *extra,
                          kf_sweep_kernel *k, int *own_params);
void kf_sweep_kernel_free(kf_sweep_kernel *k);
/* Fills k from a source path (resolved as path: is) and a name, both
 * checked, with n's place in messages: a kernel no entry spells out (a
 * level's problems and the candidates its patterns match). */
int kf_sweep_kernel_at(kf_sweep_ctx *c, const yaml_node_t *n, const char *path, const char *name,
                       kf_sweep_kernel *k);
/* Whether path ends in a kernel source's suffix (.c, .cu, .py). */
int kf_sweep_is_source(const char *path);
/* sweep_spec.c: a file's stem, the default sweep name ("runs/quick.yaml"
 * -> "quick"), allocated. */
char *kf_sweep_file_stem(const char *file);
/* The last component of a path ("a/b.c" -> "b.c"), pointing into p. */
const char *kf_sweep_base_name(const char *p);
/* sweep_axes.c: a positive duration scalar ("30s", "24h", "1.5"): seconds into *out. */
int kf_sweep_duration(kf_sweep_ctx *c, const yaml_node_t *n, const char *what, double *out);

/* sweep_problem.c: problem: and candidates: (the root has problem:), the
 * candidates into s->kernels, each checked against the candidate contract
 * (docs/problems.md). `top` are the top-level params. */
int kf_sweep_parse_problem(kf_sweep_ctx *c, const yaml_node_t *root, const kf_sweep_axis *top,
                           size_t ntop, kf_sweep_spec *s);
/* The candidate contract on k's source (docs/problems.md), k read from the
 * entry at n. A broken contract is a refusal, not an error: kept in
 * k->refused (c->keep_refused) or counted in c (and told to
 * c->opts->on_refused), and the parse goes on; 0 then. An error code only
 * for a source that cannot be read. */
int kf_sweep_check_candidate(kf_sweep_ctx *c, const yaml_node_t *n, kf_sweep_kernel *k);
/* The seed policy (seeds:, renew:) of a problem entry pn into s. */
int kf_sweep_seed_policy(kf_sweep_ctx *c, const yaml_node_t *pn, kf_sweep_spec *s);
/* The problem's atol: and rtol: (both or neither) into s; then whether
 * they may apply to the problem k (a KernelBench or GPU MODE one: a kfleet
 * problem states its own in its source). */
int kf_sweep_tol_override(kf_sweep_ctx *c, const yaml_node_t *pn, kf_sweep_spec *s);
int kf_sweep_tol_applies(kf_sweep_ctx *c, const yaml_node_t *pn, const kf_sweep_spec *s,
                         const kf_sweep_kernel *k);

/* sweep_level.c: problems: (the root has it): every problem it names, each
 * with the candidates its patterns match, as s->parts (docs/sweep-format.md,
 * "A whole level"). `top` are the top-level params; s holds the sweep's
 * other settings already (parse_root reads them first), which each part
 * copies. */
int kf_sweep_parse_level(kf_sweep_ctx *c, const yaml_node_t *root, const kf_sweep_axis *top,
                         size_t ntop, kf_sweep_spec *s);

/* sweep_formats.c: the problem k's format (its `format:`, else what its
 * source defines) into k->format, and for a KernelBench or GPU MODE file
 * its device (`device:`, cuda by default) and, for GPU MODE, task.yml's
 * files and, unless own (params: given), its cases as the axis `case`
 * (*axes_set then 1). pn is the problem's node. KF_EINVAL with the place. */
int kf_sweep_problem_format(kf_sweep_ctx *c, const yaml_node_t *pn, kf_sweep_kernel *k, int own,
                            int *axes_set);
/* Whether a candidate's source defines the entry point of a problem of
 * `format` (run(s), class ModelNew or Model, custom_kernel); *says is
 * what a candidate of that format defines, for a message. */
int kf_sweep_candidate_entry(int format, const char *text, size_t len, const char **says);
/* k, a candidate of `problem` (under problem: or a level's problems:):
 * marked one, of the problem's format, and a Python one on the problem's
 * device where its file is of KernelBench's or GPU MODE's format (such
 * files say none) or it says none itself. */
void kf_sweep_candidate_of(kf_sweep_kernel *k, const kf_sweep_kernel *problem);
/* "kfleet", "kernelbench", "gpumode". */
const char *kf_sweep_format_name(int format);

/* KF_EINVAL, pointing at the kernel that crosses it, when the sweep has more
 * than KF_SWEEP_MAX_CONFIGS configurations in all. */
int kf_sweep_count_configs(kf_sweep_ctx *c, const kf_sweep_spec *s);

#endif
