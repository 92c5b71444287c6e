/* sweep_formats — a problem in a format people already have (issue 42):
 * KernelBench's (class Model, get_inputs(), get_init_inputs(), module-level
 * sizes; candidates define class ModelNew, or are such a file, whose Model
 * is the candidate) and GPU MODE's (reference.py with generate_input,
 * ref_kernel and check_implementation, task.yml beside it; candidates
 * define custom_kernel). The runner adapts the files themselves
 * (agent/runner/pyformats.py); what the scheduler must know before any
 * agent imports them is read here, from the source text as sweep_python
 * reads a kernel's:
 *
 *   - the format: stated by the problem's `format:` (kfleet, kernelbench,
 *     gpumode) or recognised from the top-level definitions; a stated one
 *     the file does not have is refused with what it lacks;
 *   - the device: such files say none (KernelBench moves inputs to the GPU
 *     itself, GPU MODE's generate_input makes them there), so it is the
 *     problem's `device:` (cuda by default; cpu for a CPU run);
 *   - for GPU MODE, the configurations: task.yml's tests then benchmarks,
 *     by index, as the axis `case` (unless params: names cases), and the
 *     files that travel with reference.py: task.yml and the files its
 *     `files:` list names (task.py, ../utils.py as utils.py), except the
 *     submission and GPU MODE's own eval.py, which kfleet replaces;
 *   - a candidate's entry point: class ModelNew or class Model
 *     (KernelBench), def custom_kernel (GPU MODE), or run() (kfleet). */
#include "common/buf.h"
#include "common/limits.h"
#include "core/sweep_int.h"

#include "common/xalloc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const format_names[] = {"kfleet", "kernelbench", "gpumode"};

/* What each format's problem defines at its top level, and how it says so
 * in a message. */
static const struct {
    const char *defs[3];
    const char *says;
} problem_defs[] = {
    [KF_FORMAT_KFLEET] = {{"def setup", NULL, NULL}, "setup(params, seed)"},
    [KF_FORMAT_KERNELBENCH] = {{"class Model", "def get_inputs", "def get_init_inputs"},
                               "class Model, get_inputs() and get_init_inputs()"},
    [KF_FORMAT_GPUMODE] = {{"def generate_input", "def ref_kernel", "check_implementation"},
                           "generate_input(), ref_kernel() and check_implementation"},
};

const char *kf_sweep_format_name(int format)
{
    return format >= 0 && format < 3 ? format_names[format] : "?";
}

/* Whether a top-level line of text defines what `def` names: "def NAME",
 * "class NAME" (followed by '(' or ':'), or a bare NAME, assigned. */
static int defines(const char *text, size_t len, const char *def)
{
    size_t dl = strlen(def);
    for (const char *p = text; p && p < text + len;) {
        const char *end = memchr(p, '\n', (size_t)(text + len - p));
        size_t n = end ? (size_t)(end - p) : (size_t)(text + len - p);
        if (n > dl && strncmp(p, def, dl) == 0) {
            const char *q = p + dl;
            while (q < p + n && *q == ' ')
                q++;
            if (q < p + n && (*q == '(' || *q == ':' || (*q == '=' && strchr(def, ' ') == NULL)))
                return 1;
        }
        p = end ? end + 1 : NULL;
    }
    return 0;
}

/* The first of problem_defs[f] that text lacks, or NULL. */
static const char *lacks(const char *text, size_t len, int f)
{
    for (int i = 0; i < 3 && problem_defs[f].defs[i]; i++)
        if (!defines(text, len, problem_defs[f].defs[i]))
            return problem_defs[f].defs[i];
    return NULL;
}

static int detect(const char *text, size_t len)
{
    if (!lacks(text, len, KF_FORMAT_KFLEET))
        return KF_FORMAT_KFLEET;
    if (!lacks(text, len, KF_FORMAT_KERNELBENCH))
        return KF_FORMAT_KERNELBENCH;
    if (!lacks(text, len, KF_FORMAT_GPUMODE))
        return KF_FORMAT_GPUMODE;
    return KF_FORMAT_KFLEET;
}

/* One more file travelling with k, named `name` on the node and read from
 * `src` (relative to k's directory) here. */
static void add_file(kf_sweep_kernel *k, const char *name, const char *src)
{
    for (size_t i = 0; i < k->nfiles; i++)
        if (strcmp(k->files[i], name) == 0)
            return;
    k->files = kf_xrealloc(k->files, (k->nfiles + 1) * sizeof *k->files);
    k->file_src = kf_xrealloc(k->file_src, (k->nfiles + 1) * sizeof *k->file_src);
    k->files[k->nfiles] = kf_xstrdup(name);
    k->file_src[k->nfiles] = strcmp(name, src) == 0 ? NULL : kf_xstrdup(src);
    k->nfiles++;
}

/* A scalar's text inside a task.yml mapping, or NULL. */
static const char *map_text(kf_yaml *y, const yaml_node_t *m, const char *key)
{
    const yaml_node_t *v = m->type == YAML_MAPPING_NODE ? kf_yaml_map_get(y, m, key) : NULL;
    return v && v->type == YAML_SCALAR_NODE ? kf_yaml_text(v) : NULL;
}

/* task.yml beside the GPU MODE problem k: its cases as the axis `case`
 * (unless own), its files as k's. Errors at `at` name task.yml's line. */
static int gpumode_task(kf_sweep_ctx *c, const yaml_node_t *at, kf_sweep_kernel *k, int own)
{
    const char *slash = strrchr(k->path, '/');
    int dlen = slash ? (int)(slash - k->path) : 0;
    char path[4096], dir[4096];
    snprintf(path, sizeof path, "%.*s/task.yml", dlen, k->path);
    kf_buf b = KF_BUF_INIT;
    kf_err err = {0};
    if (kf_yaml_read_file(path, KF_MAX_SOURCE_FILE, "GPU MODE's task file", "a task file", &b, dir,
                          sizeof dir, &err) != KF_OK) {
        kf_buf_release(&b);
        return kf_yaml_fail(&c->y, at,
                            "a GPU MODE problem has task.yml beside reference.py (its tests and "
                            "benchmarks): %s",
                            err.msg);
    }
    kf_yaml ty = {.file = path, .text = b.data, .len = b.len, .err = &err};
    yaml_document_t doc;
    yaml_node_t *root = NULL;
    int rc = kf_yaml_load(&ty, &doc, &root);
    size_t ncases = 0;
    if (rc == KF_OK && root->type != YAML_MAPPING_NODE)
        rc = kf_yaml_fail(&ty, root, "task.yml is not a mapping");
    for (int part = 0; rc == KF_OK && part < 2; part++) {
        const yaml_node_t *s = kf_yaml_map_get(&ty, root, part ? "benchmarks" : "tests");
        if (s && s->type != YAML_SEQUENCE_NODE)
            rc = kf_yaml_fail(&ty, s, "%s is not a list", part ? "benchmarks" : "tests");
        else if (s)
            ncases += kf_yaml_seq_len(s);
    }
    if (rc == KF_OK && ncases == 0)
        rc = kf_yaml_fail(&ty, root, "task.yml has no tests and no benchmarks");
    const yaml_node_t *fl = rc == KF_OK ? kf_yaml_map_get(&ty, root, "files") : NULL;
    for (size_t i = 0; fl && fl->type == YAML_SEQUENCE_NODE && i < kf_yaml_seq_len(fl); i++) {
        const yaml_node_t *f = kf_yaml_seq_item(&ty, fl, i);
        const char *name = map_text(&ty, f, "name"), *src = map_text(&ty, f, "source");
        if (!name || !src || src[0] == '@' || strcmp(name, "eval.py") == 0 ||
            strcmp(src, kf_sweep_base_name(k->path)) == 0)
            continue; /* the submission, GPU MODE's harness, the problem itself */
        struct stat st;
        snprintf(dir, sizeof dir, "%.*s/%s", dlen, k->path, src);
        if (strchr(name, '/') || name[0] == '.' || stat(dir, &st) != 0 || !S_ISREG(st.st_mode)) {
            rc = kf_yaml_fail(&ty, f,
                              "task.yml's file %s (source %s) is not a plain name of a "
                              "regular file (%s)",
                              name, src, dir);
            break;
        }
        add_file(k, name, src);
    }
    kf_yaml_unload(&ty);
    kf_buf_release(&b);
    if (rc != KF_OK)
        return kf_yaml_fail(&c->y, at, "%s", err.msg);
    add_file(k, "task.yml", "task.yml");
    if (own)
        return KF_OK;
    k->axes = kf_xcalloc(1, sizeof *k->axes);
    k->naxes = 1;
    k->axes[0].name = kf_xstrdup("case");
    k->axes[0].values = kf_xcalloc(ncases, sizeof *k->axes[0].values);
    for (size_t i = 0; i < ncases; i++)
        k->axes[0].values[i] = (int64_t)i;
    k->axes[0].nvalues = ncases;
    return kf_sweep_charge(c, at, ncases * sizeof(int64_t));
}

void kf_sweep_candidate_of(kf_sweep_kernel *k, const kf_sweep_kernel *problem)
{
    k->candidate = 1;
    k->format = problem->format;
    if (k->python && (k->format != KF_FORMAT_KFLEET || !k->device_said))
        k->cuda = problem->cuda; /* a candidate runs on its problem's state */
}

int kf_sweep_problem_format(kf_sweep_ctx *c, const yaml_node_t *pn, kf_sweep_kernel *k, int own,
                            int *axes_set)
{
    *axes_set = 0;
    const yaml_node_t *fn = pn->type == YAML_MAPPING_NODE ? kf_yaml_map_get(&c->y, pn, "format")
                                                          : NULL,
                      *dn = pn->type == YAML_MAPPING_NODE ? kf_yaml_map_get(&c->y, pn, "device")
                                                          : NULL;
    int stated = -1, rc;
    const char *s;
    if (fn) {
        if ((rc = kf_yaml_nonempty_scalar(&c->y, fn, "format:", &s)))
            return rc;
        for (int f = 0; f < 3; f++)
            if (strcmp(s, format_names[f]) == 0)
                stated = f;
        if (stated < 0)
            return kf_yaml_fail(&c->y, fn,
                                "unknown problem format '%.40s'; write kfleet, kernelbench or "
                                "gpumode (docs/problems.md)",
                                s);
    }
    if (!k->python) {
        if (stated > KF_FORMAT_KFLEET || dn)
            return kf_yaml_fail(&c->y, fn ? fn : dn,
                                "%s is not a Python file; KernelBench and GPU MODE problems are "
                                "Python files, and a C or CUDA problem says its device by its "
                                "suffix",
                                k->path);
        return KF_OK;
    }
    kf_buf b = KF_BUF_INIT;
    char why[160];
    if (kf_buf_read_file_max(&b, k->path, KF_MAX_SOURCE_FILE, why, sizeof why) != KF_OK) {
        kf_buf_release(&b);
        return kf_yaml_fail(&c->y, pn, "problem source %s: %s", k->path, why);
    }
    const char *text = b.data ? b.data : "";
    int f = detect(text, b.len);
    const char *missing = stated >= 0 ? lacks(text, b.len, stated) : NULL;
    kf_buf_release(&b);
    if (missing)
        return kf_yaml_fail(&c->y, fn,
                            "%s is stated to be a %s problem but defines no top-level '%s' (a %s "
                            "problem defines %s)",
                            k->path, format_names[stated], missing, format_names[stated],
                            problem_defs[stated].says);
    k->format = stated >= 0 ? stated : f;
    if (k->format == KF_FORMAT_KFLEET) {
        if (dn)
            return kf_yaml_fail(&c->y, dn,
                                "device: is for KernelBench and GPU MODE problems; a kfleet "
                                "problem says device = \"cuda\" in its source");
        return KF_OK;
    }
    k->cuda = 1;
    if (dn) {
        if ((rc = kf_yaml_nonempty_scalar(&c->y, dn, "device:", &s)))
            return rc;
        if (strcmp(s, "cuda") != 0 && strcmp(s, "cpu") != 0)
            return kf_yaml_fail(&c->y, dn, "device is '%.40s'; write cuda or cpu", s);
        k->cuda = strcmp(s, "cuda") == 0;
    }
    k->py_needs |= 1u << 1; /* torch: both formats are torch's */
    if (k->format == KF_FORMAT_GPUMODE) {
        if ((rc = gpumode_task(c, pn, k, own)))
            return rc;
        *axes_set = !own;
    }
    return KF_OK;
}

int kf_sweep_candidate_entry(int format, const char *text, size_t len, const char **says)
{
    switch (format) {
    case KF_FORMAT_KERNELBENCH:
        *says = "defines class ModelNew (or is a KernelBench problem file, whose class Model is "
                "the candidate)";
        return defines(text, len, "class ModelNew") || defines(text, len, "class Model");
    case KF_FORMAT_GPUMODE:
        *says = "defines custom_kernel(data), as a GPU MODE submission.py does";
        return defines(text, len, "def custom_kernel");
    default:
        *says = "defines run(s), the work on the problem's state";
        return defines(text, len, "def run");
    }
}
