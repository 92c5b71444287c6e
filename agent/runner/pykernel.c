/* pykernel — see pykernel.h.
 *
 * No Python headers are needed to build this: the few CPython functions it
 * calls are part of the stable ABI and resolved by name from the node's
 * libpython, loaded RTLD_GLOBAL so that extension modules (numpy, torch)
 * find the interpreter's symbols. Every call goes through a pyglue.py
 * function that returns a str (a payload, or "E" and a message), so this
 * file handles no Python exception objects. */
#include "runner/pykernel.h"
#include "common/log.h"
#include "runner/pysrc.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

typedef struct pyobj pyobj; /* PyObject, opaque here */

typedef struct pyhost {
    void *lib;
    void (*initialize)(int);
    int (*run_simple)(const char *, void *);
    pyobj *(*add_module)(const char *);
    pyobj *(*get_attr)(pyobj *, const char *);
    pyobj *(*call)(pyobj *, const char *, ...);
    const char *(*utf8)(pyobj *, ssize_t *);
    void (*decref)(pyobj *);
    void (*print_error)(void);
    void (*before_fork)(void), (*after_fork_parent)(void), (*after_fork_child)(void);
    int warm;       /* started by kf_pyk_warm: no kernel loaded yet, its path the filtered one */
    int per_config; /* the kernel states atol, rtol or tolerances() (kf_pyk_tolerances) */
    int loaded;     /* a kernel is loaded */
    pyobj *fn_setup, *fn_run, *fn_output, *fn_reference, *fn_measure, *fn_teardown;
    kf_kernel k;
    char name[128];
    char description[256];
} pyhost;

/* The one interpreter of this process (see pykernel.h). */
static pyhost *the_host;

/* Copies a glue error (after its "E") to err, keeping the end of a long
 * traceback, where the exception is, and its first line. */
static void copy_error(const char *msg, char *err, size_t errlen)
{
    size_t n = strlen(msg);
    if (!err || errlen == 0)
        return;
    if (n < errlen) {
        memcpy(err, msg, n + 1);
        return;
    }
    size_t head = strcspn(msg, "\n");
    if (head > errlen / 4)
        head = errlen / 4;
    static const char gap[] = "\n...\n";
    size_t tail = errlen - head - sizeof gap;
    snprintf(err, errlen, "%.*s%s%s", (int)head, msg, gap, msg + n - tail);
}

/* The str a glue function returned, or NULL when the call itself failed
 * (Python printed why on stderr). The caller decrefs *obj. */
static const char *text_of(pyhost *p, pyobj *r, pyobj **obj, char *err, size_t errlen)
{
    *obj = r;
    const char *s = r ? p->utf8(r, NULL) : NULL;
    if (!s) {
        p->print_error();
        snprintf(err, errlen, "the Python glue failed (the runner's stderr has Python's report)");
    }
    return s;
}

static void params_text(const kf_params *p, char *out, size_t len)
{
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < p->count && o < len; i++) {
        int w =
            snprintf(out + o, len - o, "%s%s=%" PRId64, i ? "," : "", p->names[i], p->values[i]);
        if (w < 0)
            break;
        o += (size_t)w;
    }
}

static int py_setup(void **state, const kf_params *params, uint64_t seed, char *err, size_t errlen)
{
    pyhost *p = the_host;
    char pt[2048];
    params_text(params, pt, sizeof pt);
    pyobj *obj;
    const char *s =
        text_of(p, p->call(p->fn_setup, "sK", pt, (unsigned long long)seed), &obj, err, errlen);
    int rc = -1;
    if (s && s[0] == 'E') {
        copy_error(s + 1, err, errlen);
    } else if (s) {
        *state = (void *)(intptr_t)strtol(s, NULL, 10);
        rc = 0;
    }
    p->decref(obj);
    return rc;
}

/* A call whose success payload is "" (run, teardown). */
static int py_status(pyobj *fn, void *state, char *err, size_t errlen)
{
    pyhost *p = the_host;
    pyobj *obj;
    const char *s = text_of(p, p->call(fn, "l", (long)(intptr_t)state), &obj, err, errlen);
    int rc = s && s[0] == '\0' ? 0 : -1;
    if (s && s[0] == 'E')
        copy_error(s + 1, err, errlen);
    p->decref(obj);
    return rc;
}

static int py_run(void *state, char *err, size_t errlen)
{
    return py_status(the_host->fn_run, state, err, errlen);
}

static int py_output(void *state, kf_view *out)
{
    pyhost *p = the_host;
    char err[2048];
    pyobj *obj;
    const char *s =
        text_of(p, p->call(p->fn_output, "l", (long)(intptr_t)state), &obj, err, sizeof err);
    unsigned long long ptr = 0, count = 0;
    int dtype = 0, dev = 0, rc = -1;
    if (s && s[0] == 'E') {
        /* output() has no error channel in kf_kernel.h: the harness reports
         * "no output"; say what was wrong where the runner's log shows it. */
        fprintf(stderr, "kfleet python kernel: %s\n", s + 1);
    } else if (s && sscanf(s, "%llu %llu %d %d", &ptr, &count, &dtype, &dev) == 4) {
        out->data = (void *)(uintptr_t)ptr;
        out->count = (size_t)count;
        out->dtype = (kf_dtype)dtype;
        out->location = dev ? KF_LOC_DEVICE : KF_LOC_HOST;
        rc = 0;
    }
    p->decref(obj);
    return rc;
}

/* reference() into ref, `width` bytes an element (8: f64, 4: f32). */
static int reference_as(void *state, void *ref, long width, char *err, size_t errlen)
{
    pyhost *p = the_host;
    /* The element count is the output's: the harness sized ref by it. */
    kf_view v = {0};
    if (py_output(state, &v) != 0) {
        snprintf(err, errlen, "output() failed before reference()");
        return -1;
    }
    pyobj *obj;
    const char *s =
        text_of(p,
                p->call(p->fn_reference, "lKKl", (long)(intptr_t)state,
                        (unsigned long long)(uintptr_t)ref, (unsigned long long)v.count, width),
                &obj, err, errlen);
    int rc = s && s[0] == '\0' ? 0 : -1;
    if (s && s[0] == 'E')
        copy_error(s + 1, err, errlen);
    p->decref(obj);
    return rc;
}

static int py_reference(void *state, double *ref, char *err, size_t errlen)
{
    return reference_as(state, ref, 8, err, errlen);
}

int kf_pyk_reference_f32(void *state, float *ref, char *err, size_t errlen)
{
    return reference_as(state, ref, 4, err, errlen);
}

static double py_measure(const char *fn, const kf_params *params)
{
    pyhost *p = the_host;
    char pt[2048], err[512];
    params_text(params, pt, sizeof pt);
    pyobj *obj;
    const char *s = text_of(p, p->call(p->fn_measure, "ss", fn, pt), &obj, err, sizeof err);
    double v = 0;
    if (s && s[0] == 'E')
        fprintf(stderr, "kfleet python kernel: %s() failed, counted as 0: %s\n", fn, s + 1);
    else if (s)
        v = strtod(s, NULL);
    p->decref(obj);
    return v;
}

static double py_bytes(const kf_params *params)
{
    return py_measure("bytes", params);
}

static double py_flops(const kf_params *params)
{
    return py_measure("flops", params);
}

static void py_teardown(void *state)
{
    char err[2048] = "";
    if (py_status(the_host->fn_teardown, state, err, sizeof err) != 0)
        fprintf(stderr, "kfleet python kernel: teardown failed: %s\n", err);
}

#define SYM(field, name)                                                                           \
    do {                                                                                           \
        *(void **)&p->field = dlsym(p->lib, name);                                                 \
        if (!p->field) {                                                                           \
            snprintf(err, errlen, "%s lacks %s; is it CPython 3.8 or newer?", py->libpython,       \
                     name);                                                                        \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

/* Appends s to boot as a Python str literal, byte by byte as \x escapes
 * (so no path can end the string early), decoded as UTF-8. */
static size_t put_literal(char *boot, size_t o, size_t n, const char *s)
{
    o += (size_t)snprintf(boot + o, n - o, "b'");
    for (const char *c = s; *c && o + 8 < n; c++)
        o += (size_t)snprintf(boot + o, n - o, "\\x%02x", (unsigned char)*c);
    o += (size_t)snprintf(boot + o, n - o, "'.decode('utf-8', 'surrogateescape')");
    return o;
}

/* Loads libpython and starts the interpreter with the node Python's home
 * and module path; then runs pyglue.py in __main__. With `unsafe` (a warm
 * start, before any sandbox: warm.h), the module path keeps only what no
 * kernel can have written: absolute directories outside `unsafe` (the
 * agent's work dir, where scratch dirs and caches are) that others cannot
 * write; the rest comes back when a kernel loads (restore_path). */
static int start(pyhost *p, const kf_pyenv *py, const char *unsafe, char *err, size_t errlen)
{
    p->lib = dlopen(py->libpython, RTLD_NOW | RTLD_GLOBAL);
    if (!p->lib) {
        snprintf(err, errlen, "cannot load %s (Python %s's shared library): %s", py->libpython,
                 py->version, dlerror());
        return -1;
    }
    SYM(initialize, "Py_InitializeEx");
    SYM(run_simple, "PyRun_SimpleStringFlags");
    SYM(add_module, "PyImport_AddModule");
    SYM(get_attr, "PyObject_GetAttrString");
    SYM(call, "PyObject_CallFunction");
    SYM(utf8, "PyUnicode_AsUTF8AndSize");
    SYM(decref, "Py_DecRef");
    SYM(print_error, "PyErr_Print");
    SYM(before_fork, "PyOS_BeforeFork");
    SYM(after_fork_parent, "PyOS_AfterFork_Parent");
    SYM(after_fork_child, "PyOS_AfterFork_Child");
    /* The home of the interpreter the probe ran, not one found on PATH:
     * its standard library must match the libpython loaded. */
    char home[2 * PATH_MAX + 2];
    snprintf(home, sizeof home, "%s%s%s", py->base_prefix,
             strcmp(py->base_prefix, py->base_exec_prefix) ? ":" : "",
             strcmp(py->base_prefix, py->base_exec_prefix) ? py->base_exec_prefix : "");
    setenv("PYTHONHOME", home, 1);
    p->initialize(0); /* 0: leave signal handling to the runner */
    unsetenv("PYTHONHOME");
    /* sys.path is the probe's JSON list, which is a Python literal. */
    size_t n =
        strlen(py->path_json) + (strlen(py->executable) + (unsafe ? strlen(unsafe) : 0)) * 4 + 1024;
    char *boot = malloc(n);
    if (!boot) {
        snprintf(err, errlen, "out of memory starting Python");
        return -1;
    }
    size_t o = (size_t)snprintf(
        boot, n, "import os, sys\nsys.path[:] = %s\nsys.executable = ", py->path_json);
    o = put_literal(boot, o, n, py->executable);
    if (unsafe) {
        o += (size_t)snprintf(boot + o, n - o, "\n_kf_unsafe = os.path.realpath(");
        o = put_literal(boot, o, n, unsafe);
        o += (size_t)snprintf(
            boot + o, n - o,
            ")\n"
            "def _kf_safe(d):\n"
            "    if not d or not os.path.isabs(d):\n"
            "        return False\n"
            "    r = os.path.realpath(d)\n"
            "    if (r + '/').startswith(_kf_unsafe + '/') or (_kf_unsafe + '/').startswith(r + "
            "'/'):\n"
            "        return False\n"
            "    try:\n"
            "        return not os.stat(r).st_mode & 0o002\n"
            "    except OSError:\n"
            "        return False\n"
            "sys.path[:] = [d for d in sys.path if _kf_safe(d)]\n");
    }
    /* site.addsitedir runs the .pth files of the module path's
     * site-packages (a venv's included), as the interpreter's own start
     * does; the embedded one started from the base installation. */
    snprintf(boot + o, n - o,
             "\nsys.argv = ['']\nimport site\n"
             "for _p in list(sys.path):\n"
             "    if _p.endswith(('site-packages', 'dist-packages')):\n"
             "        site.addsitedir(_p)\n");
    int rc = p->run_simple(boot, NULL);
    free(boot);
    if (rc != 0 || p->run_simple(kf_py_glue_src, NULL) != 0) {
        snprintf(err, errlen,
                 "Python %s did not start the kernel glue (the runner's stderr has "
                 "Python's report)",
                 py->version);
        return -1;
    }
    pyobj *main = p->add_module("__main__");
    struct {
        pyobj **fn;
        const char *name;
    } fns[] = {{&p->fn_setup, "setup"},     {&p->fn_run, "run"},
               {&p->fn_output, "output"},   {&p->fn_reference, "reference"},
               {&p->fn_measure, "measure"}, {&p->fn_teardown, "teardown"}};
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++)
        if (!main || !(*fns[i].fn = p->get_attr(main, fns[i].name))) {
            snprintf(err, errlen, "the kernel glue lacks %s()", fns[i].name);
            return -1;
        }
    return 0;
}

/* A call of the glue's function `fn` with one str argument whose success
 * payload is copied to out (NULL: must be ""); 0, or -1 with err. */
static int glue_call(pyhost *p, const char *fn, const char *arg, char *out, size_t outlen,
                     char *err, size_t errlen)
{
    pyobj *f = p->get_attr(p->add_module("__main__"), fn), *obj;
    const char *s = f ? text_of(p, p->call(f, "s", arg), &obj, err, errlen) : NULL;
    if (!f)
        snprintf(err, errlen, "the kernel glue lacks %s()", fn);
    if (!s)
        return -1;
    int rc = s[0] == 'E' || (!out && s[0]) ? -1 : 0;
    if (s[0] == 'E')
        copy_error(s + 1, err, errlen);
    else if (rc)
        snprintf(err, errlen, "the kernel glue answered '%.100s' to %s()", s, fn);
    else if (out)
        snprintf(out, outlen, "%s", s);
    p->decref(obj);
    return rc;
}

/* The probe's whole module path back, with its site-packages' .pth files,
 * in a runner forked from a warm interpreter (kf_pyk_warm filtered it). */
static int restore_path(pyhost *p, const kf_pyenv *py, char *err, size_t errlen)
{
    return glue_call(p, "restore_path", py->path_json, NULL, 0, err, errlen);
}

int kf_pyk_warm(const kf_pyenv *py, const char *unsafe, char *imported, size_t implen, char *err,
                size_t errlen)
{
    if (the_host) {
        snprintf(err, errlen, "internal: a warm interpreter in a process that has one");
        return -1;
    }
    pyhost *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "out of memory starting Python");
        return -1;
    }
    if (start(p, py, unsafe, err, errlen) != 0) {
        free(p);
        return -1;
    }
    p->warm = 1;
    the_host = p;
    return glue_call(p, "warm", unsafe, imported, implen, err, errlen);
}

int kf_pyk_warm_learn(const char *kcache, char *built, size_t builtlen, char *err, size_t errlen)
{
    if (!the_host || !the_host->warm) {
        snprintf(err, errlen, "internal: no warm interpreter in this process");
        return -1;
    }
    return glue_call(the_host, "learn_launchers", kcache, built, builtlen, err, errlen);
}

void kf_pyk_before_fork(void)
{
    if (the_host)
        the_host->before_fork();
}

void kf_pyk_after_fork_parent(void)
{
    if (the_host)
        the_host->after_fork_parent();
}

void kf_pyk_after_fork_child(void)
{
    if (!the_host)
        return;
    /* The interpreter's threading state for this process, and the
     * os.register_at_fork hooks (random's reseed); then numpy's global
     * generator reseeded (the glue's after_fork): every runner draws its
     * own, as a fresh interpreter would. */
    the_host->after_fork_child();
    char err[512];
    if (glue_call(the_host, "after_fork", "", NULL, 0, err, sizeof err) != 0)
        fprintf(stderr, "kfleet python kernel: after_fork: %s\n", err);
}

int kf_pyk_per_config(void)
{
    return the_host && the_host->per_config;
}

int kf_pyk_tolerances(const kf_params *params, kf_dtype out, kf_tol *t, char *err, size_t errlen)
{
    static const char *const names[] = {"float32", "float64", "float16", "bfloat16", "int32"};
    if (!the_host) {
        snprintf(err, errlen, "internal: no Python kernel loaded");
        return -1;
    }
    char arg[2100], reply[256];
    snprintf(arg, sizeof arg, "%s ", (unsigned)out < 5 ? names[out] : "float32");
    params_text(params, arg + strlen(arg), sizeof arg - strlen(arg));
    if (glue_call(the_host, "tolerances", arg, reply, sizeof reply, err, errlen) != 0)
        return -1;
    kf_tol got = {0};
    if (sscanf(reply, "%lf %lf %d %lf %lf", &got.tol_abs, &got.tol_rel, &got.close, &got.atol,
               &got.rtol) != 5) {
        snprintf(err, errlen, "the kernel glue answered '%.100s' to tolerances()", reply);
        return -1;
    }
    *t = got;
    return 0;
}

int kf_pyk_refresh(void *state, uint64_t seed, uint64_t seed2, int pool, int *used, char *err,
                   size_t errlen)
{
    *used = 0;
    if (!the_host) {
        snprintf(err, errlen, "internal: no Python kernel loaded");
        return -1;
    }
    char arg[96], out[16] = "";
    snprintf(arg, sizeof arg, "%ld %llu %llu %d", (long)(intptr_t)state, (unsigned long long)seed,
             (unsigned long long)seed2, pool ? 1 : 0);
    int rc = glue_call(the_host, "refresh", arg, out, sizeof out, err, errlen);
    if (rc == 0)
        *used = out[0] == '2' ? 2 : out[0] == '1';
    return rc;
}

int kf_pyk_fresh_inputs(void)
{
    char reply[8] = "", err[256];
    return the_host &&
           glue_call(the_host, "fresh_inputs", "", reply, sizeof reply, err, sizeof err) == 0 &&
           reply[0] == '1';
}

void kf_pyk_flush(void)
{
    char err[256];
    if (the_host && glue_call(the_host, "flush", "", NULL, 0, err, sizeof err) != 0)
        kf_warn("python.flush", "error=\"%s\"", err);
}

int kf_pyk_load(const kf_pyenv *py, const char *path, const char *filename, const char *name,
                int want_cuda, const char *ext_dir, const char *ext_module, const char *files_dir,
                int problem, const kf_kernel **k, char *err, size_t errlen)
{
    pyhost *p = the_host;
    if (p && (p->loaded || !p->warm)) {
        snprintf(err, errlen, "a Python kernel is already loaded in this runner");
        return -1;
    }
    if (p) {
        /* A warm interpreter (kf_pyk_warm): the kernel sees the module
         * path a fresh one has. */
        if (restore_path(p, py, err, errlen) != 0)
            return -1;
    } else {
        p = calloc(1, sizeof *p);
        if (!p) {
            snprintf(err, errlen, "out of memory loading a Python kernel");
            return -1;
        }
        if (start(p, py, NULL, err, errlen) != 0) {
            free(p); /* libpython stays loaded: it cannot be unloaded safely */
            return -1;
        }
        the_host = p;
    }
    p->loaded = 1;
    pyobj *load = p->get_attr(p->add_module("__main__"), "load"), *obj;
    const char *s = load ? text_of(p,
                                   p->call(load, "sssisssi", path, filename, name, want_cuda,
                                           ext_dir, ext_module, files_dir, problem),
                                   &obj, err, errlen)
                         : NULL;
    if (!s)
        return -1; /* the interpreter stays: a runner loads one kernel, then exits */
    if (s[0] == 'E') {
        copy_error(s + 1, err, errlen);
        p->decref(obj);
        return -1;
    }
    double tol_abs = 0, tol_rel = 0;
    int det = 0, used = 0;
    if (sscanf(s, "%lf %lf %d %d %127s%n", &tol_abs, &tol_rel, &det, &p->per_config, p->name,
               &used) < 5) {
        snprintf(err, errlen, "the kernel glue answered '%.100s' to load()", s);
        p->decref(obj);
        return -1;
    }
    const char *nl = strchr(s + used, '\n');
    snprintf(p->description, sizeof p->description, "%s", nl ? nl + 1 : "");
    p->decref(obj);
    p->k = (kf_kernel){.abi_version = KF_KERNEL_ABI_VERSION,
                       .name = p->name,
                       .description = p->description,
                       .tol_abs = tol_abs,
                       .tol_rel = tol_rel,
                       .deterministic = det,
                       .setup = py_setup,
                       .run = py_run,
                       .output = py_output,
                       .reference = py_reference,
                       .bytes = py_bytes,
                       .flops = py_flops,
                       .teardown = py_teardown};
    *k = &p->k;
    return 0;
}

int kf_pyk_load_candidate(const char *path, const char *filename, const char *name,
                          const char *ext_dir, const char *ext_module, const char *files_dir,
                          char *err, size_t errlen)
{
    pyhost *p = the_host;
    if (!p) {
        snprintf(err, errlen, "internal: a Python candidate before its problem");
        return -1;
    }
    pyobj *fn = p->get_attr(p->add_module("__main__"), "load_candidate"), *obj;
    const char *s =
        fn ? text_of(p, p->call(fn, "ssssss", path, filename, name, ext_dir, ext_module, files_dir),
                     &obj, err, errlen)
           : NULL;
    if (!s)
        return -1;
    int rc = s[0] == '\0' ? 0 : -1;
    if (s[0] == 'E')
        copy_error(s + 1, err, errlen);
    p->decref(obj);
    return rc;
}

int kf_pyk_inputs(void *state, kf_view *in, size_t max, size_t *n, char *err, size_t errlen)
{
    pyhost *p = the_host;
    *n = 0;
    pyobj *fn = p ? p->get_attr(p->add_module("__main__"), "inputs") : NULL, *obj;
    const char *s =
        fn ? text_of(p, p->call(fn, "l", (long)(intptr_t)state), &obj, err, errlen) : NULL;
    if (!s)
        return -1;
    int rc = 0;
    if (s[0] == 'E') {
        copy_error(s + 1, err, errlen);
        rc = -1;
    }
    for (const char *c = s; rc == 0 && *c;) {
        unsigned long long ptr = 0, count = 0;
        int dtype = 0, dev = 0;
        if (*n == max || sscanf(c, "%llu %llu %d %d", &ptr, &count, &dtype, &dev) != 4) {
            snprintf(err, errlen,
                     "the problem's inputs() names more than %zu arrays, or the "
                     "glue answered '%.60s'",
                     max, c);
            rc = -1;
            break;
        }
        in[*n] = (kf_view){.data = (void *)(uintptr_t)ptr,
                           .count = (size_t)count,
                           .dtype = (kf_dtype)dtype,
                           .location = dev ? KF_LOC_DEVICE : KF_LOC_HOST};
        (*n)++;
        const char *nl = strchr(c, '\n');
        c = nl ? nl + 1 : c + strlen(c);
    }
    p->decref(obj);
    return rc;
}
