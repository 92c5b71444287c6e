/* sweep_python — what the scheduler must know of a Python kernel before
 * any agent imports it, read from its source without running it: the
 * device it asks for (`device = "cuda"` on a line of its own) and the
 * packages it imports that nodes may lack (numpy, torch, triton, cupy),
 * so that its tasks go only to agents whose Python has them. */
#include "common/buf.h"
#include "common/limits.h"
#include "core/sweep_int.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

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

int kf_sweep_python_scan(kf_sweep_ctx *c, const yaml_node_t *n, kf_sweep_kernel *k)
{
    kf_buf b = KF_BUF_INIT;
    char why[160];
    if (kf_buf_read_file_max(&b, k->path, KF_MAX_SOURCE_FILE, why, sizeof why) != KF_OK) {
        kf_buf_release(&b);
        return kf_yaml_fail(&c->y, n, "kernel source %s: %s", k->path, why);
    }
    int line = 0, rc = KF_OK;
    k->py_needs = 0;
    for (const char *p = b.data; p && p < b.data + b.len && rc == KF_OK;) {
        const char *end = memchr(p, '\n', (size_t)(b.data + b.len - p));
        size_t len = end ? (size_t)(end - p) : (size_t)(b.data + b.len - p);
        line++;
        if (device_line(p, len, &k->cuda) < 0)
            rc = kf_yaml_fail(&c->y, n,
                              "%s:%d: device must be written device = \"cuda\" or device = "
                              "\"cpu\", a literal on a line of its own: the scheduler reads "
                              "it without running the module",
                              k->path, line);
        k->py_needs |= line_imports(p, p + len);
        p = end ? end + 1 : NULL;
    }
    kf_buf_release(&b);
    return rc;
}
