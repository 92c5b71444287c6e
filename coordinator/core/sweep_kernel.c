/* sweep_kernel — one kernel entry of a sweep (under kernels:, problem: or
 * candidates:): its name, its source (a path resolved against the sweep's
 * directory, or a name looked up in the kernels directory), its flags and
 * params. Shared by sweep.c and sweep_problem.c, behind sweep_int.h. */
#include "common/limits.h"
#include "common/xalloc.h"
#include "core/sweep_int.h"
#include "common/buf.h"
#include "common/util.h"
#include "core/yamldoc.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#define MAX_FLAGS 64 /* the submit path hashes at most 64 flags per kernel */
#define MAX_FLAG_LEN 4096

typedef kf_sweep_ctx ctx;

/* ---- paths and names ---- */

static int ends_with(const char *s, const char *suffix)
{
    size_t ls = strlen(s), lx = strlen(suffix);
    return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

const char *kf_sweep_base_name(const char *p)
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

int kf_sweep_kernel_at(ctx *c, const yaml_node_t *n, const char *path, const char *name,
                       kf_sweep_kernel *k)
{
    k->line = (int)n->start_mark.line + 1;
    k->col = (int)n->start_mark.column + 1;
    if (!valid_kernel_name(name))
        return kf_yaml_fail(&c->y, n,
                            "'%.80s' (from %.200s) is not a valid name; use letters, digits, "
                            "'_', '-' and '.', not starting with '.' or '-' (rename the file)",
                            name, path);
    k->name = kf_xstrdup(name);
    return resolve_path(c, n, path, k);
}

int kf_sweep_is_source(const char *path)
{
    return source_suffix(path) != NULL;
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

int kf_sweep_parse_kernel(ctx *c, const yaml_node_t *n, const char *const *extra,
                          kf_sweep_kernel *k, int *own_params)
{
    const char *keys[12] = {"name", "path", "params", "flags"};
    for (size_t i = 0; extra && extra[i] && i < 7; i++)
        keys[4 + i] = extra[i];
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
        if (source_suffix(name)) { /* - my_op.py: a file, as path: my_op.py */
            path = name;
            name = NULL;
            np = n;
            nn = NULL;
        }
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
        const char *base = kf_sweep_base_name(path);
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

void kf_sweep_kernel_free(kf_sweep_kernel *k)
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
    for (size_t i = 0; i < k->nfiles; i++) {
        free(k->files[i]);
        if (k->file_src)
            free(k->file_src[i]);
    }
    free(k->files);
    free(k->file_src);
    free(k->refused);
}
