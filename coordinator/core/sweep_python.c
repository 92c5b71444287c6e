/* sweep_python — what the scheduler must know of a Python kernel before
 * any agent imports it, read from its source without running it: the
 * device it asks for (`device = "cuda"` on a line of its own), the
 * packages it imports that nodes may lack (numpy, torch, triton, cupy),
 * so that its tasks go only to agents whose Python has them, and the
 * sources of the torch extension it brings (`extension = ["op.cpp",
 * "op_kernel.cu"]`), which the client uploads and the build task builds,
 * and its own files (`files = ["helper.py", "table.npy"]`), which the
 * client uploads with it and the node puts beside it. And its tolerances
 * where they are literals (`tol_rel = 1e-5`, `tol_abs = float("inf")`): a
 * check that cannot fail (common/tolerance.h) is refused here, at submit,
 * with the line; other forms are left to the runner, which refuses the
 * same before the kernel runs. */
#include "common/buf.h"
#include "common/limits.h"
#include "common/tolerance.h"
#include "core/sweep_int.h"

#include "common/xalloc.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *const kf_sweep_py_packages[KF_SWEEP_PY_PACKAGES] = {"numpy", "torch", "triton", "cupy"};

/* The bit of a top-level module name among kf_sweep_py_packages, or 0. */
static unsigned package_bit(const char *name, size_t len)
{
    for (unsigned i = 0; i < KF_SWEEP_PY_PACKAGES; i++)
        if (strlen(kf_sweep_py_packages[i]) == len &&
            strncmp(kf_sweep_py_packages[i], name, len) == 0)
            return 1u << i;
    return 0;
}

/* The length of the dotted name at p (letters, digits, '_', '.'). */
static size_t name_len(const char *p, const char *end)
{
    size_t n = 0;
    while (p + n < end && (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '.'))
        n++;
    return n;
}

/* The packages one line imports: `import a.b as x, c` and `from a.b import
 * y`, at any indentation (an import inside a function runs too). Only the
 * top-level name counts: `torch.nn` needs torch. */
static unsigned line_imports(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    unsigned bits = 0;
    if (end - p > 5 && strncmp(p, "from ", 5) == 0) {
        p += 5;
        while (p < end && *p == ' ')
            p++;
        size_t n = name_len(p, end);
        const char *dot = memchr(p, '.', n);
        return package_bit(p, dot ? (size_t)(dot - p) : n);
    }
    if (!(end - p > 7 && strncmp(p, "import ", 7) == 0))
        return 0;
    p += 7;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == ','))
            p++;
        size_t n = name_len(p, end);
        if (n == 0)
            break;
        const char *dot = memchr(p, '.', n);
        bits |= package_bit(p, dot ? (size_t)(dot - p) : n);
        p += n;
        while (p < end && *p == ' ')
            p++;
        if (end - p > 3 && strncmp(p, "as ", 3) == 0) { /* `as alias` */
            p += 3;
            while (p < end && *p == ' ')
                p++;
            p += name_len(p, end);
        }
        while (p < end && *p == ' ')
            p++;
        if (p >= end || *p != ',')
            break;
    }
    return bits;
}

/* `device = "cuda"` or "cpu" (the default), a literal on a line of its
 * own; 1 and *cuda set when the line is one, 0 when it is not about the
 * device, -1 when it is but not in that form. */
static int device_line(const char *p, size_t len, int *cuda)
{
    if (!(len > 6 && strncmp(p, "device", 6) == 0 && (p[6] == ' ' || p[6] == '=')))
        return 0;
    char val[8] = "", lit[64];
    char q1 = 0, q2 = 0;
    int used = 0;
    snprintf(lit, sizeof lit, "%.*s", (int)(len < 63 ? len : 63), p);
    if (sscanf(lit, "device = %c%7[a-z]%c %n", &q1, val, &q2, &used) >= 3 &&
        (q1 == '"' || q1 == '\'') && q2 == q1 &&
        (strcmp(val, "cuda") == 0 || strcmp(val, "cpu") == 0) &&
        (lit[used] == '\0' || lit[used] == '#')) {
        *cuda = strcmp(val, "cuda") == 0;
        return 1;
    }
    return -1;
}

/* `tol_abs = VALUE` or `tol_rel = VALUE` on a line of its own, VALUE a
 * number literal, inf/nan, float("inf"), math.inf or np.inf (a comment may
 * follow): 1 with *which (0 abs, 1 rel) and *val; 0 when the line is not
 * one (or not in a form read here). */
static int tolerance_line(const char *p, size_t len, int *which, double *val)
{
    char lit[128], name[8], rhs[96];
    snprintf(lit, sizeof lit, "%.*s", (int)(len < 127 ? len : 127), p);
    char *hash = strchr(lit, '#');
    if (hash)
        *hash = '\0';
    if (sscanf(lit, "%7[a-z_] = %95s", name, rhs) != 2)
        return 0;
    if (strcmp(name, "tol_abs") == 0)
        *which = 0;
    else if (strcmp(name, "tol_rel") == 0)
        *which = 1;
    else
        return 0;
    size_t n = strlen(rhs);
    char extra[8];
    if (sscanf(lit, "%*[a-z_] = %*s %7s", extra) == 1)
        return 0; /* an expression: the runner judges it */
    static const struct {
        const char *text;
        double v;
    } named[] = {{"float(\"inf\")", INFINITY},
                 {"float('inf')", INFINITY},
                 {"math.inf", INFINITY},
                 {"np.inf", INFINITY},
                 {"numpy.inf", INFINITY},
                 {"float(\"nan\")", NAN},
                 {"float('nan')", NAN},
                 {"math.nan", NAN},
                 {"np.nan", NAN},
                 {"numpy.nan", NAN}};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        if (strcmp(rhs, named[i].text) == 0) {
            *val = named[i].v;
            return 1;
        }
    }
    char *end = NULL;
    double v = strtod(rhs, &end);
    if (n == 0 || !end || *end != '\0')
        return 0;
    *val = v;
    return 1;
}

static int has_suffix(const char *s, const char *const *sfx)
{
    size_t n = strlen(s);
    for (; *sfx; sfx++) {
        size_t m = strlen(*sfx);
        if (n > m && strcmp(s + n - m, *sfx) == 0)
            return 1;
    }
    return 0;
}

static const char *const ext_units[] = {".cpp", ".cc", ".cxx", ".cu", NULL};
static const char *const ext_headers[] = {".h", ".hpp", ".cuh", NULL};

/* Why the extension file `name` is refused, or NULL. The first file names
 * the module (its stem is TORCH_EXTENSION_NAME), so it is a compile unit
 * whose stem is a Python identifier. */
static const char *ext_name_problem(const char *name, int first)
{
    if (!*name || strchr(name, '/') || name[0] == '.')
        return "is not a plain file name beside the kernel";
    if (!has_suffix(name, ext_units) && !has_suffix(name, ext_headers))
        return "is neither a source (.cpp .cc .cxx .cu) nor a header (.h .hpp .cuh)";
    if (strcmp(name, "kf_kernel.h") == 0)
        return "is the name of kfleet's ABI header";
    if (first) {
        if (!has_suffix(name, ext_units))
            return "comes first, so it names the module, but is a header";
        for (const char *p = name; *p && *p != '.'; p++)
            if (!(isalnum((unsigned char)*p) || *p == '_') ||
                (p == name && isdigit((unsigned char)*p)))
                return "comes first, so its stem is the module's name, which must be a Python "
                       "identifier";
    }
    return NULL;
}

/* Why the kernel's own file `name` (files = [...]) is refused, or NULL: a
 * plain name beside the kernel ("helper.py"), or a directory beside it
 * written with a trailing slash ("mylib/"), none of the names the node
 * gives files of its own. */
static const char *file_name_problem(const char *name, int first)
{
    (void)first;
    size_t n = strlen(name);
    const char *slash = strchr(name, '/');
    if (!n || name[0] == '.' || (slash && slash != name + n - 1) || n == 1)
        return "is neither a file name beside the kernel (\"helper.py\") nor a directory "
               "beside it (\"mylib/\")";
    if (strcmp(name, "kf_kernel.h") == 0)
        return "is the name of kfleet's ABI header";
    return NULL;
}

/* `KEY = ["a", "b"]`, a literal list of quoted names on a line of its own:
 * 1 with *names filled, 0 when the line is not about KEY, 2 when *names
 * was filled by an earlier line, -1 (why says what) when it is but cannot
 * be read. `problem` refuses a name (first: it is the list's first). */
static int list_line(const char *p, size_t len, const char *key, char ***names, size_t *n,
                     const char *(*problem)(const char *name, int first), char *why, size_t wlen)
{
    const char *end = p + len;
    size_t klen = strlen(key);
    if (!(len > klen && strncmp(p, key, klen) == 0 && (p[klen] == ' ' || p[klen] == '=')))
        return 0;
    p += klen;
    while (p < end && *p == ' ')
        p++;
    if (p >= end || *p++ != '=')
        return 0; /* `extension.x`, `extension_dir = ...`: not this line */
    if (*n)
        return 2; /* a second one */
    while (p < end && *p == ' ')
        p++;
    if (p >= end || *p++ != '[') {
        snprintf(why, wlen, "is not a list");
        return -1;
    }
    for (;;) {
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (p < end && *p == ']')
            break;
        if (p >= end || (*p != '"' && *p != '\'')) {
            snprintf(why, wlen, "holds something other than quoted file names");
            return -1;
        }
        char q = *p++;
        const char *s = p;
        while (p < end && *p != q && *p != '\\')
            p++;
        if (p >= end || *p != q) {
            snprintf(why, wlen, "has an unterminated or escaped name");
            return -1;
        }
        char name[KF_SWEEP_MAX_NAME + 1];
        if ((size_t)(p - s) > KF_SWEEP_MAX_NAME) {
            snprintf(why, wlen, "names a file longer than %d bytes", KF_SWEEP_MAX_NAME);
            return -1;
        }
        memcpy(name, s, (size_t)(p - s));
        name[p - s] = '\0';
        p++;
        const char *bad = problem(name, *n == 0);
        if (bad) {
            snprintf(why, wlen, "names '%.60s', which %s", name, bad);
            return -1;
        }
        for (size_t i = 0; i < *n; i++)
            if (strcmp((*names)[i], name) == 0) {
                snprintf(why, wlen, "names '%.60s' twice", name);
                return -1;
            }
        if (*n == KF_SWEEP_MAX_EXT) {
            snprintf(why, wlen, "names more than %d files", KF_SWEEP_MAX_EXT);
            return -1;
        }
        *names = kf_xrealloc(*names, (*n + 1) * sizeof **names);
        (*names)[(*n)++] = kf_xstrdup(name);
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (p < end && *p == ',') {
            p++;
            continue;
        }
        if (p < end && *p == ']')
            break;
        snprintf(why, wlen, "is not a list of quoted names separated by commas");
        return -1;
    }
    p++;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
        p++;
    if (p < end && *p != '#') {
        snprintf(why, wlen, "has more after the list");
        return -1;
    }
    if (*n == 0) {
        snprintf(why, wlen, "is an empty list");
        return -1;
    }
    return 1;
}

/* The kernel's own files are regular files beside it, none of them the
 * kernel itself or a file of its extension; the first that is not is
 * reported at `n` with the kernel's line. */
static int check_own_files(kf_sweep_ctx *c, const yaml_node_t *n, kf_sweep_kernel *k, int line)
{
    const char *slash = strrchr(k->path, '/');
    int dlen = slash ? (int)(slash - k->path) : 0;
    for (size_t i = 0; i < k->nfiles; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%.*s/%s", dlen, k->path, k->files[i]);
        if (strcmp(k->files[i], slash ? slash + 1 : k->path) == 0)
            return kf_yaml_fail(&c->y, n, "%s:%d: files lists the kernel itself (%s)", k->path,
                                line, k->files[i]);
        for (size_t e = 0; e < k->next; e++)
            if (strcmp(k->files[i], k->ext[e]) == 0)
                return kf_yaml_fail(&c->y, n,
                                    "%s:%d: %s is in both files and extension; list it once",
                                    k->path, line, k->files[i]);
        size_t fl = strlen(k->files[i]);
        int want_dir = k->files[i][fl - 1] == '/';
        if (want_dir && (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)))
            return kf_yaml_fail(&c->y, n,
                                "%s:%d: %s (files = [...]) is not a directory beside the kernel "
                                "(%s)",
                                k->path, line, k->files[i], path);
        if (want_dir)
            continue;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            return kf_yaml_fail(&c->y, n,
                                "%s:%d: file %s (files = [...]) is not a regular file beside "
                                "the kernel (%s)",
                                k->path, line, k->files[i], path);
        /* What its modules import, the kernel needs. */
        kf_buf b = KF_BUF_INIT;
        char why[160];
        if (fl > 3 && strcmp(k->files[i] + fl - 3, ".py") == 0 &&
            kf_buf_read_file_max(&b, path, KF_MAX_SOURCE_FILE, why, sizeof why) == KF_OK)
            for (const char *p = b.data; p && p < b.data + b.len;) {
                const char *end = memchr(p, '\n', (size_t)(b.data + b.len - p));
                k->py_needs |= line_imports(p, end ? end : b.data + b.len);
                p = end ? end + 1 : NULL;
            }
        kf_buf_release(&b);
    }
    return KF_OK;
}

/* Each extension file is a regular file beside the kernel; the first
 * missing one is reported at `n` with the kernel's line. */
static int check_ext_files(kf_sweep_ctx *c, const yaml_node_t *n, const kf_sweep_kernel *k,
                           int line)
{
    const char *slash = strrchr(k->path, '/');
    int dlen = slash ? (int)(slash - k->path) : 0;
    int cuda_src = 0;
    for (size_t i = 0; i < k->next; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%.*s/%s", dlen, k->path, k->ext[i]);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            return kf_yaml_fail(&c->y, n,
                                "%s:%d: extension file %s is not a regular file beside the "
                                "kernel (%s)",
                                k->path, line, k->ext[i], path);
        cuda_src |= has_suffix(k->ext[i], (const char *const[]){".cu", NULL});
    }
    if (cuda_src && !k->cuda)
        return kf_yaml_fail(&c->y, n,
                            "%s:%d: the extension has CUDA sources but the kernel does not say "
                            "device = \"cuda\"; add that line",
                            k->path, line);
    return KF_OK;
}

int kf_sweep_python_scan(kf_sweep_ctx *c, const yaml_node_t *n, kf_sweep_kernel *k)
{
    kf_buf b = KF_BUF_INIT;
    int read = kf_yaml_read_named(&c->y, n, "kernel source", k->path, KF_MAX_SOURCE_FILE, &b);
    if (read != KF_OK)
        return read;
    int line = 0, ext_line = 0, files_line = 0, rc = KF_OK, tol_line[2] = {0, 0};
    double tol[2] = {0, 0};
    k->py_needs = 0;
    for (const char *p = b.data; p && p < b.data + b.len && rc == KF_OK;) {
        const char *end = memchr(p, '\n', (size_t)(b.data + b.len - p));
        size_t len = end ? (size_t)(end - p) : (size_t)(b.data + b.len - p);
        line++;
        int dl = device_line(p, len, &k->cuda);
        k->device_said |= dl > 0;
        if (dl < 0)
            rc = kf_yaml_fail(&c->y, n,
                              "%s:%d: device must be written device = \"cuda\" or device = "
                              "\"cpu\", a literal on a line of its own: the scheduler reads "
                              "it without running the module",
                              k->path, line);
        k->py_needs |= line_imports(p, p + len);
        int which = 0;
        double tv = 0;
        if (tolerance_line(p, len, &which, &tv)) {
            tol[which] = tv;
            tol_line[which] = line;
        }
        char ewhy[200];
        int f = rc == KF_OK ? list_line(p, len, "files", &k->files, &k->nfiles, file_name_problem,
                                        ewhy, sizeof ewhy)
                            : 0;
        if (f == 2)
            rc = kf_yaml_fail(&c->y, n, "%s:%d: a second files line (the first is line %d)",
                              k->path, line, files_line);
        else if (f > 0)
            files_line = line;
        else if (f < 0)
            rc = kf_yaml_fail(&c->y, n,
                              "%s:%d: the files line %s; write files = [\"helper.py\", "
                              "\"table.npy\", \"mylib/\"], a literal on a line of its own "
                              "naming files and directories beside the kernel "
                              "(docs/python-kernels.md)",
                              k->path, line, ewhy);
        int e = rc == KF_OK ? list_line(p, len, "extension", &k->ext, &k->next, ext_name_problem,
                                        ewhy, sizeof ewhy)
                            : 0;
        if (e == 2)
            rc = kf_yaml_fail(&c->y, n, "%s:%d: a second extension line (the first is line %d)",
                              k->path, line, ext_line);
        else if (e > 0)
            ext_line = line;
        else if (e < 0)
            rc = kf_yaml_fail(&c->y, n,
                              "%s:%d: the extension line %s; write extension = [\"op.cpp\", "
                              "\"op_kernel.cu\"], a literal on a line of its own, the first "
                              "file naming the module (docs/python-kernels.md)",
                              k->path, line, ewhy);
        p = end ? end + 1 : NULL;
    }
    kf_buf_release(&b);
    char twhy[400];
    if (rc == KF_OK && (tol_line[0] || tol_line[1]) &&
        kf_tol_vacuous(tol[0], tol[1], twhy, sizeof twhy) != 0)
        rc = kf_yaml_fail(&c->y, n, "%s:%d: the kernel's check cannot fail, refused: %s", k->path,
                          tol_line[1] && (!isfinite(tol[1]) || tol[1] >= 1 || tol[1] < 0)
                              ? tol_line[1]
                              : tol_line[0],
                          twhy);
    if (rc == KF_OK && ext_line) {
        k->py_needs |= package_bit("torch", 5); /* an extension is built and loaded by torch */
        rc = check_ext_files(c, n, k, ext_line);
    }
    if (rc == KF_OK && files_line)
        rc = check_own_files(c, n, k, files_line);
    return rc;
}
