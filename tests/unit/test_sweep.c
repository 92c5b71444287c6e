/* test_sweep — the sweep file parser: every key read into the spec, the
 * defaults, K/M/G suffixes and range maps expanded, the cartesian product in
 * order, and for every kind of bad input KF_EINVAL, *out untouched and a
 * message that starts with the exact "file:line:col: ".
 *
 * Kernels named without a path resolve against a kernels directory the
 * fixture makes in a temp dir (host/foo.c, cuda/gpu.cu, ...), so these tests
 * never depend on the real kernels/. The seed files under
 * tests/data/sweeps/ are parsed from disk and also cut and mutated byte by
 * byte: whatever happens must be a clean success or a located error. */
#include "core/sweep.h"
#include "common/buf.h"
#include "common/taskkind.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEEDS KF_SOURCE_DIR "/tests/data/sweeps"

typedef struct fixture {
    char dir[PATH_MAX];     /* the sweep's base_dir: holds src/ */
    char kernels[PATH_MAX]; /* the kernels_dir: host/ and cuda/ */
} fixture;

static void write_file(const char *dir, const char *name, const char *content)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
}

static void make_dir(const char *dir, const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    assert_int_equal(mkdir(path, 0700), 0);
}

/* realpath of dir/name, for comparing against the stored absolute paths. */
static void real(const char *dir, const char *name, char out[PATH_MAX])
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    assert_non_null(realpath(path, out));
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    strcpy(f->dir, "/tmp/kf-sweep-XXXXXX");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    snprintf(f->kernels, sizeof f->kernels, "%s/kernels", f->dir);
    make_dir(f->dir, "kernels");
    make_dir(f->dir, "kernels/host");
    make_dir(f->dir, "kernels/cuda");
    make_dir(f->dir, "kernels/python");
    make_dir(f->dir, "src");
    make_dir(f->dir, "src/dir.c");
    write_file(f->dir, "kernels/host/foo.c", "/* foo */\n");
    write_file(f->dir, "kernels/host/bar.c", "/* bar */\n");
    write_file(f->dir, "kernels/host/both.c", "/* both, host */\n");
    write_file(f->dir, "kernels/cuda/both.cu", "/* both, cuda */\n");
    write_file(f->dir, "kernels/cuda/gpu.cu", "/* gpu */\n");
    write_file(f->dir, "src/my.c", "/* my */\n");
    write_file(f->dir, "src/dev.cu", "/* dev */\n");
    write_file(f->dir, "src/notes.txt", "notes\n");
    write_file(f->dir, "src/op.py", "import torch\n\ndevice = 'cuda'  # on a GPU slot\n");
    write_file(f->dir, "src/host.py", "import numpy\ndevices = 'cuda'\n");
    write_file(f->dir, "src/imports.py",
               "import os, numpy as np\nfrom triton.language import core\n"
               "def f():\n    import cupy.random\n# import torch (a comment)\n"
               "import torchvision\nfrom numpyx import y\n");
    write_file(f->dir, "src/baddev.py", "import os\n\ndevice = os.environ['DEV']\n");
    /* Issue 29: literal tolerances that cannot fail, refused at submit. */
    write_file(f->dir, "src/tol_inf.py", "tol_rel = 1e-5\ntol_abs = float(\"inf\")  # any\n");
    write_file(f->dir, "src/tol_rel1.py", "import numpy as np\ntol_abs = 1e-6\ntol_rel = 1.0\n");
    write_file(f->dir, "src/tol_nan.py", "import numpy as np\ntol_abs = 0\n\ntol_rel = np.nan\n");
    write_file(f->dir, "kernels/python/torch_softmax.py", "device = \"cuda\"\n");
    /* Torch extensions: one that is right, and one file per way to get the
     * `extension` line wrong. */
    write_file(f->dir, "src/ext_op.cpp", "// op\n");
    write_file(f->dir, "src/ext_k.cu", "// kernel\n");
    write_file(f->dir, "src/ext.h", "// header\n");
    write_file(f->dir, "src/ext.py",
               "import numpy\nimport ext_op\ndevice = \"cuda\"\n"
               "extension = [\"ext_op.cpp\", 'ext_k.cu' , \"ext.h\"]  # built by kfleet\n"
               "extension_note = 'not the line'\n");
    write_file(f->dir, "src/ext_str.py", "device = \"cuda\"\nextension = \"ext_op.cpp\"\n");
    write_file(f->dir, "src/ext_missing.py",
               "device = \"cuda\"\n\nextension = [\"ext_op.cpp\", \"gone.cu\"]\n");
    write_file(f->dir, "src/ext_header.py",
               "device = \"cuda\"\nextension = [\"ext.h\", \"ext_k.cu\"]\n");
    write_file(f->dir, "src/ext_cpu.py", "extension = [\"ext_op.cpp\", \"ext_k.cu\"]\n");
    write_file(f->dir, "src/ext_slash.py", "extension = [\"../ext_op.cpp\"]\n");
    write_file(f->dir, "src/ext_twice.py",
               "device = \"cuda\"\nextension = [\"ext_op.cpp\", \"ext_op.cpp\"]\n");
    write_file(f->dir, "src/ext_two.py",
               "extension = [\"ext_op.cpp\"]\nextension = [\"ext_op.cpp\"]\n");
    write_file(f->dir, "src/ext_expr.py", "extension = [\"ext_op.cpp\"] + more\n");
    write_file(f->dir, "src/ext_module.py", "extension = [\"ext-op.cpp\"]\n");
    write_file(f->dir, "src/bad name.c", "/* a space in the stem */\n");
    char link[PATH_MAX];
    snprintf(link, sizeof link, "%s/src/link.c", f->dir);
    if (symlink("notes.txt", link) != 0)
        return -1;
    /* Two links naming each other, and one to a file that is not a kernel's. */
    char loop[PATH_MAX];
    snprintf(link, sizeof link, "%s/src/loopa.c", f->dir);
    snprintf(loop, sizeof loop, "%s/src/loopb.c", f->dir);
    if (symlink(loop, link) != 0 || symlink(link, loop) != 0)
        return -1;
    snprintf(link, sizeof link, "%s/src/shadow.c", f->dir);
    if (symlink("/etc/shadow", link) != 0)
        return -1;
    *state = f;
    return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

static int teardown(void **state)
{
    fixture *f = *state;
    nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

static int parse(const fixture *f, const char *yaml, kf_sweep_spec **out, kf_err *err)
{
    return kf_sweep_parse_string(yaml, strlen(yaml), "t.yaml", f->dir, f->kernels, out, err);
}

/* Parses text that must be valid, failing the test with the message if not. */
static kf_sweep_spec *parse_ok(const fixture *f, const char *yaml)
{
    kf_sweep_spec *s = NULL;
    kf_err err;
    kf_err_clear(&err);
    int rc = parse(f, yaml, &s, &err);
    if (rc != KF_OK)
        fail_msg("expected success for:\n%s\ngot %d: %s", yaml, rc, err.msg);
    assert_non_null(s);
    return s;
}

static void assert_values(const kf_sweep_axis *a, const char *name, const int64_t *want, size_t n)
{
    assert_string_equal(a->name, name);
    assert_int_equal(a->nvalues, n);
    for (size_t i = 0; i < n; i++)
        assert_true(a->values[i] == want[i]);
}

#define VALUES(a, name, ...)                                                                       \
    do {                                                                                           \
        const int64_t want_[] = {__VA_ARGS__};                                                     \
        assert_values((a), (name), want_, sizeof want_ / sizeof want_[0]);                         \
    } while (0)

/* ---- valid files ---- */

static void test_full_file(void **state)
{
    const fixture *f = *state;
    const char *yaml =
        "name: nightly\n"
        "kernels:\n"
        "  - foo\n"
        "  - name: bar\n"
        "    params: {n: [128, 256], block: [16, 32]}\n"
        "    flags: [-O3, -march=native]\n"
        "  - path: src/my.c\n"
        "  - name: dev2\n"
        "    path: src/dev.cu\n"
        "    flags: []\n"
        "params: {n: [1M, 4M]}\n"
        "tasks: [validate, profile]\n"
        "nodes: all\n"
        "baseline: bar\n"
        "attempts: 7\n"
        "time_limit: 1.5m\n"
        "memory_limit: 16G\n"
        "measure: {min_samples: 10, min_time: 250ms, max_noise: 2%, precision: 0.25%,\n"
        "          timeout: 15s, min_span: 150ms,\n"
        "          warmup: 2, hot: yes, seeds: 5, batch: 4, throttle: keep,\n"
        "          throttle_threshold: 80%, throttle_recovery: 20ms, thermal: sustained}\n";
    kf_sweep_spec *s = parse_ok(f, yaml);
    char want[PATH_MAX];

    assert_string_equal(s->name, "nightly");
    assert_string_equal(s->file, "t.yaml");
    assert_string_equal(s->text, yaml);
    assert_int_equal(s->nkernels, 4);

    const kf_sweep_kernel *k = &s->kernels[0];
    assert_string_equal(k->name, "foo");
    real(f->kernels, "host/foo.c", want);
    assert_string_equal(k->path, want);
    assert_int_equal(k->cuda, 0);
    assert_int_equal(k->line, 3);
    assert_int_equal(k->col, 5);
    assert_int_equal(k->naxes, 1);
    VALUES(&k->axes[0], "n", 1 << 20, 4 << 20);
    assert_int_equal(k->nflags, 0);

    k = &s->kernels[1];
    assert_string_equal(k->name, "bar");
    real(f->kernels, "host/bar.c", want);
    assert_string_equal(k->path, want);
    assert_int_equal(k->line, 4);
    assert_int_equal(k->col, 5);
    assert_int_equal(k->naxes, 2);
    VALUES(&k->axes[0], "n", 128, 256);
    VALUES(&k->axes[1], "block", 16, 32);
    assert_int_equal(k->nflags, 2);
    assert_string_equal(k->flags[0], "-O3");
    assert_string_equal(k->flags[1], "-march=native");

    k = &s->kernels[2];
    assert_string_equal(k->name, "my"); /* the file stem */
    real(f->dir, "src/my.c", want);
    assert_string_equal(k->path, want);
    assert_int_equal(k->cuda, 0);
    assert_int_equal(k->line, 7);
    assert_int_equal(k->naxes, 1); /* the top-level params */
    VALUES(&k->axes[0], "n", 1 << 20, 4 << 20);

    k = &s->kernels[3];
    assert_string_equal(k->name, "dev2"); /* name: given next to path: */
    real(f->dir, "src/dev.cu", want);
    assert_string_equal(k->path, want);
    assert_int_equal(k->cuda, 1);
    assert_int_equal(k->nflags, 0);

    assert_int_equal(s->tasks,
                     (1 << KFLEET__TASK_KIND__VALIDATE) | (1 << KFLEET__TASK_KIND__PROFILE));
    assert_int_equal(s->nodes_all, 1);
    assert_string_equal(s->baseline, "bar");
    assert_int_equal(s->max_attempts, 7);
    assert_true(s->time_limit_s == 90.0);
    assert_int_equal(s->memory_limit, (uint64_t)16 << 30);
    assert_int_equal(s->measure.min_samples, 10);
    assert_true(s->measure.min_time_s == 0.25);
    assert_true(s->measure.max_noise_pct == 2.0);
    assert_true(s->measure.precision_pct == 0.25);
    assert_true(s->measure.timeout_s == 15.0);
    assert_true(s->measure.min_span_s == 0.15);
    assert_int_equal(s->measure.warmup, 2);
    assert_int_equal(s->measure.hot, 1);
    assert_int_equal(s->measure.seeds, 5);
    assert_int_equal(s->measure.batch, 4);
    assert_int_equal(s->measure.throttle_keep, 1);
    assert_true(s->measure.throttle_threshold_pct == 80.0);
    assert_true(s->measure.throttle_recovery_s == 0.02);
    assert_int_equal(s->measure.thermal_sustained, 1);

    kf_sweep_destroy(&s);
    assert_null(s);
}

static void test_defaults(void **state)
{
    const fixture *f = *state;
    const char *yaml = "kernels: [foo]\n";
    kf_sweep_spec *s = NULL;
    kf_err err;
    assert_int_equal(
        kf_sweep_parse_string(yaml, strlen(yaml), "runs/quick.yaml", f->dir, f->kernels, &s, &err),
        KF_OK);
    assert_string_equal(s->name, "quick");
    assert_string_equal(s->file, "runs/quick.yaml");
    assert_int_equal(s->tasks, (1 << KFLEET__TASK_KIND__BUILD) |
                                   (1 << KFLEET__TASK_KIND__VALIDATE) |
                                   (1 << KFLEET__TASK_KIND__PROFILE));
    assert_int_equal(s->nodes_all, 0);
    assert_null(s->baseline);
    assert_int_equal(s->max_attempts, 3);
    assert_true(s->time_limit_s == 300.0);
    assert_int_equal(s->memory_limit, 0); /* the agent's default */
    assert_int_equal(s->measure.min_samples, 0);
    assert_true(s->measure.min_time_s == 0);
    assert_true(s->measure.max_noise_pct == 0);
    assert_true(s->measure.timeout_s == 0);
    assert_int_equal(s->measure.warmup, 0);
    assert_int_equal(s->measure.hot, 0);
    assert_int_equal(s->measure.throttle_keep, 0); /* discard, the agent's 75 % and 50 ms */
    assert_true(s->measure.throttle_threshold_pct == 0);
    assert_true(s->measure.throttle_recovery_s == 0);
    assert_int_equal(s->measure.thermal_sustained, 0); /* burst */
    assert_int_equal(s->measure.seeds, 3);
    assert_int_equal(s->measure.batch, 0);
    assert_int_equal(s->nkernels, 1);
    assert_int_equal(s->kernels[0].naxes, 0);
    assert_int_equal(kf_sweep_kernel_configs(&s->kernels[0]), 1);
    assert_int_equal(kf_sweep_kernel_config(&s->kernels[0], 0, NULL, NULL), 0);
    assert_true(kf_sweep_kernel_config(&s->kernels[0], 1, NULL, NULL) < 0);
    kf_sweep_destroy(&s);

    /* No filename: messages and the stored file say <string>. */
    assert_int_equal(kf_sweep_parse_string(yaml, strlen(yaml), NULL, f->dir, f->kernels, &s, &err),
                     KF_OK);
    assert_string_equal(s->file, "<string>");
    kf_sweep_destroy(&s);
    kf_sweep_destroy(&s); /* NULL: no-op */
    kf_sweep_destroy(NULL);
}

/* min_span: 0 turns the GPU's least span off, which the struct's 0 (the
 * agent's default) could not say; left out it stays the default. */
static void test_min_span_off(void **state)
{
    const fixture *f = *state;
    kf_sweep_spec *s = parse_ok(f, "kernels: [foo]\nmeasure: {min_span: 0}\n");
    assert_true(s->measure.min_span_s < 0);
    kf_sweep_destroy(&s);
    s = parse_ok(f, "kernels: [foo]\nmeasure: {min_span: 0ms}\n");
    assert_true(s->measure.min_span_s < 0);
    kf_sweep_destroy(&s);
    s = parse_ok(f, "kernels: [foo]\n");
    assert_true(s->measure.min_span_s == 0);
    kf_sweep_destroy(&s);
}

static void test_cartesian_order(void **state)
{
    const fixture *f = *state;
    kf_sweep_spec *s = parse_ok(f, "kernels:\n"
                                   "  - name: foo\n"
                                   "    params: {a: [1, 2], b: [10, 20, 30]}\n");
    const kf_sweep_kernel *k = &s->kernels[0];
    const int64_t want[6][2] = {{1, 10}, {1, 20}, {1, 30}, {2, 10}, {2, 20}, {2, 30}};
    assert_int_equal(kf_sweep_kernel_configs(k), 6);
    for (size_t i = 0; i < 6; i++) {
        const char *names[KF_SWEEP_MAX_AXES] = {0};
        int64_t values[KF_SWEEP_MAX_AXES] = {0};
        assert_int_equal(kf_sweep_kernel_config(k, i, names, values), 2);
        assert_ptr_equal(names[0], k->axes[0].name);
        assert_ptr_equal(names[1], k->axes[1].name);
        assert_true(values[0] == want[i][0]);
        assert_true(values[1] == want[i][1]);
    }
    assert_true(kf_sweep_kernel_config(k, 6, NULL, NULL) < 0);
    kf_sweep_destroy(&s);

    /* Three axes of 2, 3, 2: idx 7 = (1, 0, 1) in mixed radix. */
    s = parse_ok(f, "kernels: [foo]\nparams: {x: [0, 1], y: [0, 1, 2], z: [5, 6]}\n");
    int64_t v[3];
    assert_int_equal(kf_sweep_kernel_configs(&s->kernels[0]), 12);
    assert_int_equal(kf_sweep_kernel_config(&s->kernels[0], 7, NULL, v), 3);
    assert_true(v[0] == 1 && v[1] == 0 && v[2] == 6);
    assert_int_equal(kf_sweep_kernel_config(&s->kernels[0], 11, NULL, v), 3);
    assert_true(v[0] == 1 && v[1] == 2 && v[2] == 6);
    kf_sweep_destroy(&s);
}

/* Parses one axis `x: <values>` and returns the sweep (the caller destroys). */
static kf_sweep_spec *one_axis(const fixture *f, const char *values)
{
    char yaml[512];
    snprintf(yaml, sizeof yaml, "kernels: [foo]\nparams:\n  x: %s\n", values);
    kf_sweep_spec *s = parse_ok(f, yaml);
    assert_int_equal(s->kernels[0].naxes, 1);
    return s;
}

#define AXIS_IS(f, text, ...)                                                                      \
    do {                                                                                           \
        kf_sweep_spec *s_ = one_axis((f), (text));                                                 \
        VALUES(&s_->kernels[0].axes[0], "x", __VA_ARGS__);                                         \
        kf_sweep_destroy(&s_);                                                                     \
    } while (0)

static void test_values_and_ranges(void **state)
{
    const fixture *f = *state;
    AXIS_IS(f, "[0, 7, 1K, 3M, 2G, 8589934591G, 9223372036854775807]", 0, 7, 1024, 3 << 20,
            INT64_C(2) << 30, INT64_MAX - ((1 << 30) - 1), INT64_MAX);
    AXIS_IS(f, "{from: 1, to: 1K, mul: 2}", 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024);
    AXIS_IS(f, "{from: 3, to: 100, mul: 3}", 3, 9, 27, 81);
    AXIS_IS(f, "{from: 0, to: 10, step: 5}", 0, 5, 10);
    AXIS_IS(f, "{from: 0, to: 11, step: 5}", 0, 5, 10);
    AXIS_IS(f, "{from: 1K, to: 4K, step: 1K}", 1024, 2048, 3072, 4096);
    AXIS_IS(f, "{from: 7, to: 7, mul: 2}", 7);
    AXIS_IS(f, "[{from: 1, to: 4, mul: 2}, 100, {from: 5, to: 5, step: 1}]", 1, 2, 4, 100, 5);
    AXIS_IS(f, "64", 64);
    AXIS_IS(f, "\"12\"", 12);

    kf_sweep_spec *s = one_axis(f, "{from: 1, to: 9223372036854775807, mul: 2}");
    const kf_sweep_axis *ax = &s->kernels[0].axes[0];
    assert_int_equal(ax->nvalues, 63); /* 2^0 .. 2^62, and no overflow past it */
    assert_true(ax->values[62] == INT64_C(1) << 62);
    kf_sweep_destroy(&s);

    s = one_axis(f, "{from: 1, to: 100000, step: 1}"); /* exactly the limit */
    ax = &s->kernels[0].axes[0];
    assert_int_equal(ax->nvalues, 100000);
    assert_true(ax->values[0] == 1 && ax->values[99999] == 100000);
    kf_sweep_destroy(&s);
}

static void test_params_inherit(void **state)
{
    const fixture *f = *state;
    kf_sweep_spec *s = parse_ok(f, "kernels:\n"
                                   "  - foo\n"
                                   "  - {name: bar, params: {}}\n"
                                   "  - {name: gpu, params: {m: [3]}}\n"
                                   "params: {n: [1, 2, 3]}\n");
    assert_int_equal(s->kernels[0].naxes, 1);
    VALUES(&s->kernels[0].axes[0], "n", 1, 2, 3);
    assert_int_equal(s->kernels[1].naxes, 0); /* params: {} means none */
    assert_int_equal(kf_sweep_kernel_configs(&s->kernels[1]), 1);
    assert_int_equal(s->kernels[2].naxes, 1); /* its own replace the top level's */
    VALUES(&s->kernels[2].axes[0], "m", 3);
    /* Each kernel owns its copy. */
    assert_ptr_not_equal(s->kernels[0].axes, NULL);
    kf_sweep_destroy(&s);
}

static void test_lookup(void **state)
{
    const fixture *f = *state;
    char want[PATH_MAX], yaml[PATH_MAX + 64];
    kf_sweep_spec *s = parse_ok(f, "kernels: [both, gpu]\n");
    real(f->kernels, "host/both.c", want); /* host/ wins over cuda/ */
    assert_string_equal(s->kernels[0].path, want);
    assert_int_equal(s->kernels[0].cuda, 0);
    real(f->kernels, "cuda/gpu.cu", want);
    assert_string_equal(s->kernels[1].path, want);
    assert_int_equal(s->kernels[1].cuda, 1);
    kf_sweep_destroy(&s);

    /* An absolute path ignores base_dir; no kernels_dir is needed. */
    real(f->dir, "src/my.c", want);
    snprintf(yaml, sizeof yaml, "kernels:\n  - path: %s\n", want);
    kf_err err;
    assert_int_equal(
        kf_sweep_parse_string(yaml, strlen(yaml), "t.yaml", "/nonexistent", NULL, &s, &err), KF_OK);
    assert_string_equal(s->kernels[0].path, want);
    assert_string_equal(s->kernels[0].name, "my");
    kf_sweep_destroy(&s);

    /* A Python kernel needs a GPU slot when it says so on its own line;
     * shipped ones (kernels/python) are found by name. */
    s = parse_ok(f, "kernels:\n  - path: src/op.py\n  - path: src/host.py\n  - torch_softmax\n");
    assert_string_equal(s->kernels[0].name, "op");
    assert_int_equal(s->kernels[0].python, 1);
    assert_int_equal(s->kernels[0].cuda, 1);
    assert_int_equal(s->kernels[1].python, 1);
    assert_int_equal(s->kernels[1].cuda, 0); /* `devices =` is not `device =` */
    real(f->kernels, "python/torch_softmax.py", want);
    assert_string_equal(s->kernels[2].path, want);
    assert_int_equal(s->kernels[2].python, 1);
    assert_int_equal(s->kernels[2].cuda, 1);
    /* What each imports among the packages nodes are matched on. */
    assert_int_equal(s->kernels[0].py_needs, 1u << 1); /* torch */
    assert_int_equal(s->kernels[1].py_needs, 1u << 0); /* numpy */
    assert_int_equal(s->kernels[2].py_needs, 0);       /* the fixture's copy imports nothing */
    kf_sweep_destroy(&s);

    /* `import a, b as c`, `from a.b import`, an import inside a function;
     * not a comment, not a package whose name only starts like one. */
    s = parse_ok(f, "kernels:\n  - path: src/imports.py\n");
    assert_int_equal(s->kernels[0].py_needs, (1u << 0) | (1u << 2) | (1u << 3));
    assert_string_equal(kf_sweep_py_packages[2], "triton");
    kf_sweep_destroy(&s);

    /* A torch extension's files, in order (the first names the module);
     * the kernel then needs torch whether or not it imports it. */
    s = parse_ok(f, "kernels:\n  - path: src/ext.py\n");
    assert_int_equal(s->kernels[0].next, 3);
    assert_string_equal(s->kernels[0].ext[0], "ext_op.cpp");
    assert_string_equal(s->kernels[0].ext[1], "ext_k.cu");
    assert_string_equal(s->kernels[0].ext[2], "ext.h");
    assert_int_equal(s->kernels[0].py_needs, (1u << 0) | (1u << 1));
    kf_sweep_destroy(&s);

    /* Several baselines: each row is compared with the one that runs its
     * configuration; carried as one comma-separated string. */
    s = parse_ok(f, "kernels: [foo, bar, both]\nbaseline: [bar, both]\n");
    assert_string_equal(s->baseline, "bar,both");
    /* Whole names only: "bo" and "bar,both" are no baselines. */
    assert_true(kf_sweep_is_baseline(s->baseline, "bar"));
    assert_true(kf_sweep_is_baseline(s->baseline, "both"));
    assert_false(kf_sweep_is_baseline(s->baseline, "bo"));
    assert_false(kf_sweep_is_baseline(s->baseline, "foo"));
    assert_false(kf_sweep_is_baseline(s->baseline, "bar,both"));
    assert_false(kf_sweep_is_baseline(NULL, "bar"));
    kf_sweep_destroy(&s);

    /* A name with no kernels_dir cannot be found. */
    kf_sweep_spec dummy, *out = &dummy;
    const char *byname = "kernels: [foo]\n";
    assert_int_equal(
        kf_sweep_parse_string(byname, strlen(byname), "t.yaml", f->dir, NULL, &out, &err),
        KF_EINVAL);
    assert_ptr_equal(out, &dummy);
    assert_non_null(strstr(err.msg, "t.yaml:1:11: kernel 'foo' is named without a path"));
}

/* ---- errors ---- */

typedef struct bad_case {
    const char *yaml;
    size_t len; /* 0: strlen */
    int line, col;
    const char *needle;
} bad_case;

static const bad_case bad_cases[] = {
    {"- foo\n- bar\n", 0, 1, 1, "top level must be a mapping"},
    {"kernels: [foo]\nkernal: 1\n", 0, 2, 1,
     "unknown key 'kernal' at the top level; did you "
     "mean 'kernels'?"},
    {"kernels: [foo]\nbogus: 1\n", 0, 2, 1, "known keys: name, kernels, params, tasks"},
    {"kernels:\n  - name: foo\n    parms: {}\n", 0, 3, 5, "did you mean 'params'"},
    {"kernels: [foo]\nmeasure: {min_sample: 3}\n", 0, 2, 11, "did you mean 'min_samples'"},
    {"kernels: [foo]\nparams: {n: {from: 1, to: 4, mull: 2}}\n", 0, 2, 30, "did you mean 'mul'"},
    {"kernels: [foo]\nkernels: [foo]\n", 0, 2, 1, "appears twice at the top level (first at 1:1)"},
    {"kernels: [foo]\n? [a]\n: 1\n", 0, 2, 3, "a key must be a single value"},
    {"name: x\n", 0, 1, 1, "missing kernels:"},
    {"kernels: []\n", 0, 1, 10, "kernels is an empty list"},
    {"kernels: foo\n", 0, 1, 10, "kernels must be a list"},
    {"kernels:\n  - [foo]\n", 0, 2, 5, "a kernel entry must be a kernel name or a mapping"},
    {"kernels:\n  - flags: [-O2]\n", 0, 2, 5, "needs name: or path:"},
    {"kernels: [foo, nope]\n", 0, 1, 16, "unknown kernel 'nope'"},
    {"kernels: [foo, nope]\n", 0, 1, 16, "/kernels/host/nope.c, "},
    {"kernels: [foo, bar]\nbaseline: [bar, baz]\n", 0, 2, 17,
     "baseline 'baz' is not a kernel of this sweep"},
    {"kernels: [foo]\nbaseline: []\n", 0, 2, 11, "baseline is an empty list"},
    {"kernels: [../etc]\n", 0, 1, 11, "kernel name '../etc' is not valid"},
    {"kernels:\n  - path: src/missing.c\n", 0, 2, 11, "path 'src/missing.c' cannot be used"},
    {"kernels:\n  - path: src/notes.txt\n", 0, 2, 11, "does not end in .c, .cu or .py"},
    {"kernels:\n  - path: src/baddev.py\n", 0, 2, 11,
     "src/baddev.py:3: device must be written device = \"cuda\" or device = \"cpu\""},
    {"kernels:\n  - path: src/tol_inf.py\n", 0, 2, 11,
     "src/tol_inf.py:2: the kernel's check cannot fail, refused: tol_abs = inf, tol_rel = 1e-05: "
     "a non-finite tolerance"},
    {"kernels:\n  - path: src/tol_rel1.py\n", 0, 2, 11,
     "src/tol_rel1.py:3: the kernel's check cannot fail, refused: tol_rel = 1: an output of all "
     "zeros has relative error exactly 1"},
    {"kernels:\n  - path: src/tol_nan.py\n", 0, 2, 11, "src/tol_nan.py:4: the kernel's check"},
    {"kernels:\n  - path: src/ext_str.py\n", 0, 2, 11,
     "src/ext_str.py:2: the extension line is not a list"},
    {"kernels:\n  - path: src/ext_missing.py\n", 0, 2, 11,
     "src/ext_missing.py:3: extension file gone.cu is not a regular file beside the kernel"},
    {"kernels:\n  - path: src/ext_header.py\n", 0, 2, 11,
     "names 'ext.h', which comes first, so it names the module, but is a header"},
    {"kernels:\n  - path: src/ext_cpu.py\n", 0, 2, 11,
     "src/ext_cpu.py:1: the extension has CUDA sources but the kernel does not say device"},
    {"kernels:\n  - path: src/ext_slash.py\n", 0, 2, 11,
     "names '../ext_op.cpp', which is not a plain file name beside the kernel"},
    {"kernels:\n  - path: src/ext_twice.py\n", 0, 2, 11, "names 'ext_op.cpp' twice"},
    {"kernels:\n  - path: src/ext_two.py\n", 0, 2, 11,
     "src/ext_two.py:2: a second extension line (the first is line 1)"},
    {"kernels:\n  - path: src/ext_expr.py\n", 0, 2, 11,
     "the extension line has more after the list"},
    {"kernels:\n  - path: src/ext_module.py\n", 0, 2, 11,
     "its stem is the module's name, which must be a Python identifier"},
    {"kernels:\n  - path: src/link.c\n", 0, 2, 11, "which does not end in .c"},
    {"kernels:\n  - path: src/dir.c\n", 0, 2, 11, "is not a regular file"},
    {"kernels:\n  - path: src/loopa.c\n", 0, 2, 11, "Too many levels of symbolic links"},
    {"kernels:\n  - path: src/shadow.c\n", 0, 2, 11, "which does not end in .c"},
    {"kernels:\n  - path: /etc/shadow\n", 0, 2, 11, "does not end in .c, .cu or .py"},
    {"kernels:\n  - path: ../../../../../../../../etc/passwd\n", 0, 2, 11, "does not end in .c"},
    {"kernels:\n  - path: src/bad name.c\n", 0, 2, 11, "does not make a kernel name"},
    {"kernels:\n  - name: foo\n    flags: -O3\n", 0, 3, 12, "flags of kernel 'foo' must be a list"},
    {"kernels:\n  - name: foo\n    flags: ['']\n", 0, 3, 13, "a flag is empty"},
    {"kernels: [foo, foo]\n", 0, 1, 16, "kernel 'foo' is listed twice (first at 1:11)"},
    {"kernels:\n  - foo\n  - path: kernels/host/foo.c\n", 0, 3, 5, "listed twice (first at 2:5)"},
    {"kernels: [foo]\nparams: {n: [1, 2x]}\n", 0, 2, 17, "must be an integer"},
    {"kernels: [foo]\nparams: {n: [-4]}\n", 0, 2, 14, "must be at least 0, not -4"},
    {"kernels: [foo]\nparams: {n: [9223372036854775808]}\n", 0, 2, 14, "too large"},
    {"kernels: [foo]\nparams: {n: [8589934592G]}\n", 0, 2, 14, "too large"},
    {"kernels: [foo]\nparams: {n: [4k]}\n", 0, 2, 14, "must be an integer"},
    {"kernels: [foo]\nparams: {n: [1.5]}\n", 0, 2, 14, "must be an integer"},
    {"kernels: [foo]\nparams: {n: []}\n", 0, 2, 13, "axis 'n' is an empty list"},
    {"kernels: [foo]\nparams: {n: }\n", 0, 2, 13, "axis 'n' has no values"},
    {"kernels: [foo]\nparams: {n: [[1]]}\n", 0, 2, 14, "list inside a list"},
    {"kernels: [foo]\nparams: {1n: [1]}\n", 0, 2, 10, "not an identifier"},
    {"kernels: [foo]\nparams: [1, 2]\n", 0, 2, 9, "params must be a mapping"},
    {"kernels: [foo]\nparams: {n: [1], n: [2]}\n", 0, 2, 18, "axis 'n' is given twice"},
    {"kernels: [foo]\nparams: {n: [1, 2, 1K, 1024]}\n", 0, 2, 24,
     "value 1024 appears twice in axis 'n' (also at 2:20)"},
    {"kernels: [foo]\nparams: {n: {from: 1, to: 8, mul: 1}}\n", 0, 2, 35, "at least 2, not 1"},
    {"kernels: [foo]\nparams: {n: {from: 1, to: 8, step: 0}}\n", 0, 2, 36, "at least 1, not 0"},
    {"kernels: [foo]\nparams: {n: {from: 9, to: 8, step: 1}}\n", 0, 2, 27, "swap them"},
    {"kernels: [foo]\nparams: {n: {from: 0, to: 1M, step: 1}}\n", 0, 2, 13, "more than 100000"},
    {"kernels: [foo]\nparams: {n: {from: 1, to: 8, step: 1, mul: 2}}\n", 0, 2, 44,
     "both step: and mul:"},
    {"kernels: [foo]\nparams: {n: {from: 1, mul: 2}}\n", 0, 2, 13, "needs both from: and to:"},
    {"kernels: [foo]\nparams: {n: {from: 1, to: 2}}\n", 0, 2, 13, "needs step: or mul:"},
    {"kernels: [foo]\nparams: {n: {from: 0, to: 8, mul: 2}}\n", 0, 2, 20, "multiplies from 0"},
    {"kernels: [foo]\nparams: {a: {from: 1, to: 1000, step: 1}, b: {from: 1, to: 1001, step: "
     "1}}\n",
     0, 1, 11, "more than 1000000 configurations once kernel 'foo'"},
    {"kernels: [foo, bar]\nparams: {a: {from: 1, to: 1000, step: 1}, b: {from: 1, to: 600, "
     "step: 1}}\n",
     0, 1, 16, "kernel 'bar' is added (600000 before it, 600000 for it)"},
    {"kernels: [foo]\ntasks: [build, deploy]\n", 0, 2, 16,
     "unknown task 'deploy'; valid tasks are build, validate, profile"},
    {"kernels: [foo]\ntasks: []\n", 0, 2, 8, "tasks is an empty list"},
    {"kernels: [foo]\ntasks: [build, build]\n", 0, 2, 16, "task 'build' is listed twice"},
    {"kernels: [foo]\nnodes: some\n", 0, 2, 8, "nodes must be any or all"},
    {"kernels: [foo]\ntime_limit: soon\n", 0, 2, 13, "is not a duration"},
    {"kernels: [foo]\ntime_limit: 0s\n", 0, 2, 13, "must be longer than 0"},
    {"kernels: [foo]\nmemory_limit: 1M\n", 0, 2, 15, "memory_limit must be at least 67108864"},
    {"kernels: [foo]\nmemory_limit: lots\n", 0, 2, 15, "memory_limit must be an integer"},
    {"kernels: [foo]\nmeasure: {timeout: -1s}\n", 0, 2, 20, "must be longer than 0"},
    {"kernels: [foo]\nmeasure: {min_time: nan}\n", 0, 2, 21, "is not a duration"},
    {"kernels: [foo]\nmeasure: 3\n", 0, 2, 10, "measure must be a mapping"},
    {"kernels: [foo]\nmeasure: {min_samples: 0}\n", 0, 2, 24, "at least 1"},
    {"kernels: [foo]\nmeasure: {warmup: 0}\n", 0, 2, 19, "at least 1"},
    {"kernels: [foo]\nmeasure: {seeds: 0}\n", 0, 2, 18, "at least 1"},
    {"kernels: [foo]\nmeasure: {hot: maybe}\n", 0, 2, 16, "hot must be true or false"},
    {"kernels: [foo]\nmeasure: {max_noise: lots}\n", 0, 2, 22, "is not a number"},
    {"kernels: [foo]\nmeasure: {max_noise: 0}\n", 0, 2, 22, "must be above 0"},
    {"kernels: [foo]\nmeasure: {precision: 0%}\n", 0, 2, 22, "precision must be above 0"},
    {"kernels: [foo]\nmeasure: {precision: high}\n", 0, 2, 22, "precision 'high' is not a number"},
    {"kernels: [foo]\nmeasure: {min_span: -1s}\n", 0, 2, 21, "min_span must be longer than 0"},
    {"kernels: [foo]\nmeasure: {min_span: long}\n", 0, 2, 21, "min_span 'long' is not a duration"},
    {"kernels: [foo]\nmeasure: {throttle: drop}\n", 0, 2, 21, "throttle must be discard or keep"},
    {"kernels: [foo]\nmeasure: {thermal: cold}\n", 0, 2, 20, "thermal must be burst or sustained"},
    {"kernels: [foo]\nmeasure: {throttle_threshold: 120}\n", 0, 2, 31,
     "not a percentage in (0, 100]"},
    {"kernels: [foo]\nmeasure: {throttle_threshold: 0}\n", 0, 2, 31, "not a percentage"},
    {"kernels: [foo]\nmeasure: {throttle_recovery: 0s}\n", 0, 2, 30, "must be longer than 0"},
    {"kernels: [foo]\nattempts: 0\n", 0, 2, 11, "between 1 and 100, not 0"},
    {"kernels: [foo]\nattempts: 101\n", 0, 2, 11, "between 1 and 100, not 101"},
    {"kernels: [foo]\nbaseline: bar\n", 0, 2, 11, "baseline 'bar' is not a kernel of this sweep"},
    {"kernels: [foo]\nname: ''\n", 0, 2, 7, "name is empty"},
    {"kernels: [foo]\nname: "
     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
     0, 2, 7, "the sweep's name is 129 bytes; at most 128"},
    {"kernels:\n  - name: "
     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
     0, 2, 11, "is not valid"},
    {"kernels: [foo]\nname: [a]\n", 0, 2, 7, "name must be a single value"},
    {"kernels: [foo]\n---\nkernels: [bar]\n", 0, 3, 1, "a second YAML document"},
    {"", 0, 1, 1, "the file is empty"},
    {"# nothing here\n", 0, 1, 1, "the file is empty"},
    {"kernels: [foo\n", 0, 2, 1, "YAML syntax error"},
    {"kernels:\n  - foo\n - bar\n", 0, 3, 2, "YAML syntax error: did not find expected key"},
    {"kernels: *x\n", 0, 1, 10, "undefined alias"},
    {"\tkernels: [foo]\n", 0, 1, 1, "YAML syntax error"},
    {"kernels: [foo]\n\0x", 17, 2, 1, "contains a NUL byte"},
    {"kernels: [f\xffo]\n", 0, 1, 12, "not valid UTF-8"},
    {"kernels: [\"f\\0o\"]\n", 0, 1, 11, "contains a NUL character"},
    /* An alias back to an enclosing node must not send the walk round. */
    {"&a {kernels: [*a]}\n", 0, 1, 5, "unknown key 'kernels' in a kernel entry"},
};

static void test_errors(void **state)
{
    const fixture *f = *state;
    int failures = 0;
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const bad_case *b = &bad_cases[i];
        kf_sweep_spec dummy, *out = &dummy;
        kf_err err;
        kf_err_clear(&err);
        size_t len = b->len ? b->len : strlen(b->yaml);
        int rc = kf_sweep_parse_string(b->yaml, len, "t.yaml", f->dir, f->kernels, &out, &err);
        char prefix[64];
        snprintf(prefix, sizeof prefix, "t.yaml:%d:%d: ", b->line, b->col);
        if (rc != KF_EINVAL || out != &dummy || strncmp(err.msg, prefix, strlen(prefix)) != 0 ||
            !strstr(err.msg, b->needle) || err.code != KF_EINVAL) {
            print_error("case %zu:\n%s\n  want %s...%s\n  got  rc=%d %s\n", i, b->yaml, prefix,
                        b->needle, rc, err.msg);
            failures++;
        }
    }
    assert_int_equal(failures, 0);
}

static void test_too_many_axes(void **state)
{
    const fixture *f = *state;
    char yaml[1024] = "kernels: [foo]\nparams:\n";
    for (int i = 0; i < KF_SWEEP_MAX_AXES; i++)
        snprintf(yaml + strlen(yaml), sizeof yaml - strlen(yaml), "  a%d: [1, 2]\n", i);
    kf_sweep_spec *s = parse_ok(f, yaml); /* exactly the limit is fine */
    assert_int_equal(s->kernels[0].naxes, KF_SWEEP_MAX_AXES);
    assert_int_equal(kf_sweep_kernel_configs(&s->kernels[0]), 1 << KF_SWEEP_MAX_AXES);
    kf_sweep_destroy(&s);

    snprintf(yaml + strlen(yaml), sizeof yaml - strlen(yaml), "  extra: 1\n");
    kf_sweep_spec dummy, *out = &dummy;
    kf_err err;
    assert_int_equal(parse(f, yaml, &out, &err), KF_EINVAL);
    assert_ptr_equal(out, &dummy);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "t.yaml:%d:3: more than %d axes", KF_SWEEP_MAX_AXES + 3,
             KF_SWEEP_MAX_AXES);
    assert_memory_equal(err.msg, prefix, strlen(prefix));
}

static void test_flags_limit(void **state)
{
    const fixture *f = *state;
    char yaml[2048] = "kernels:\n  - name: foo\n    flags: [";
    for (int i = 0; i < 64; i++)
        snprintf(yaml + strlen(yaml), sizeof yaml - strlen(yaml), "%s-DF%02d", i ? ", " : "", i);
    char *end = yaml + strlen(yaml);
    strcpy(end, "]\n");
    kf_sweep_spec *s = parse_ok(f, yaml);
    assert_int_equal(s->kernels[0].nflags, 64);
    assert_string_equal(s->kernels[0].flags[63], "-DF63");
    kf_sweep_destroy(&s);

    strcpy(end, ", -DF64]\n"); /* item 64 starts at column 13 + 64 * 7 */
    kf_sweep_spec dummy, *out = &dummy;
    kf_err err;
    assert_int_equal(parse(f, yaml, &out, &err), KF_EINVAL);
    assert_ptr_equal(out, &dummy);
    assert_non_null(strstr(err.msg, "t.yaml:3:461: kernel 'foo' has more than 64 flags"));
}

/* A few hundred bytes of YAML aliases can stand for gigabytes of flags or
 * parameter values; the parse counts what it builds, alias uses included,
 * and stops at 8 MiB with the place, instead of building it. */
static void test_alias_expansion_bounded(void **state)
{
    const fixture *f = *state;
    kf_buf y = KF_BUF_INIT;
    /* 64 flags of 4000 bytes (256 KB), used by 4096 kernels: 1 GB built. */
    kf_buf_adds(&y, "kernels:\n  - {name: k0, path: src/my.c, flags: &f [");
    for (int i = 0; i < 64; i++) {
        kf_buf_adds(&y, i ? ", -D" : "-D");
        for (int j = 0; j < 3998; j++)
            kf_buf_addc(&y, 'X');
    }
    kf_buf_adds(&y, "]}\n");
    for (int i = 1; i < 4096; i++)
        kf_buf_addf(&y, "  - {name: k%d, path: src/my.c, flags: *f}\n", i);
    kf_sweep_spec dummy, *out = &dummy;
    kf_err err;
    assert_int_equal(kf_sweep_parse_string(y.data, y.len, "t.yaml", f->dir, f->kernels, &out, &err),
                     KF_EINVAL);
    assert_ptr_equal(out, &dummy);
    assert_non_null(strstr(err.msg, "expands to more than 8 MiB"));
    assert_non_null(strstr(err.msg, "t.yaml:2:")); /* inside the aliased list, at its 33rd use */
    kf_buf_release(&y);

    /* One axis of 100,000 values at the top, copied into 40 kernels. */
    kf_buf_adds(&y, "params: {n: {from: 1, to: 100000, step: 1}}\nkernels:\n");
    for (int i = 0; i < 40; i++)
        kf_buf_addf(&y, "  - {name: k%d, path: src/my.c}\n", i);
    kf_err_clear(&err);
    assert_int_equal(kf_sweep_parse_string(y.data, y.len, "t.yaml", f->dir, f->kernels, &out, &err),
                     KF_EINVAL);
    assert_non_null(strstr(err.msg, "expands to more than 8 MiB"));
    assert_non_null(strstr(err.msg, "t.yaml:12:5:")); /* k9: 11 copies of 800 KB */
    kf_buf_release(&y);

    /* A flag over 4096 bytes. */
    kf_buf_adds(&y, "kernels:\n  - name: foo\n    flags: [-D");
    for (int j = 0; j < 4096; j++)
        kf_buf_addc(&y, 'X');
    kf_buf_adds(&y, "]\n");
    kf_err_clear(&err);
    assert_int_equal(kf_sweep_parse_string(y.data, y.len, "t.yaml", f->dir, f->kernels, &out, &err),
                     KF_EINVAL);
    assert_non_null(
        strstr(err.msg, "t.yaml:3:13: a flag of kernel 'foo' is 4098 bytes; at most 4096"));
    kf_buf_release(&y);
}

/* Nesting 10,000 deep is refused at the second level, in the parse, with
 * the place: no recursion follows the depth of a hostile file. */
static void test_deep_nesting_refused(void **state)
{
    const fixture *f = *state;
    kf_buf y = KF_BUF_INIT;
    kf_buf_adds(&y, "kernels: [foo]\nparams: {n: ");
    for (int i = 0; i < 10000; i++)
        kf_buf_addc(&y, '[');
    kf_buf_addc(&y, '1');
    for (int i = 0; i < 10000; i++)
        kf_buf_addc(&y, ']');
    kf_buf_adds(&y, "}\n");
    kf_sweep_spec dummy, *out = &dummy;
    kf_err err;
    assert_int_equal(kf_sweep_parse_string(y.data, y.len, "t.yaml", f->dir, f->kernels, &out, &err),
                     KF_EINVAL);
    assert_ptr_equal(out, &dummy);
    assert_non_null(strstr(err.msg, "t.yaml:2:14: axis 'n' holds a list inside a list"));
    kf_buf_release(&y);
}

static void test_config_limit_inclusive(void **state)
{
    const fixture *f = *state;
    kf_sweep_spec *s = parse_ok(f, "kernels: [foo]\n"
                                   "params: {a: {from: 1, to: 1000, step: 1},\n"
                                   "         b: {from: 1, to: 1000, step: 1}}\n");
    assert_int_equal(kf_sweep_kernel_configs(&s->kernels[0]), KF_SWEEP_MAX_CONFIGS);
    int64_t v[2];
    assert_int_equal(kf_sweep_kernel_config(&s->kernels[0], KF_SWEEP_MAX_CONFIGS - 1, NULL, v), 2);
    assert_true(v[0] == 1000 && v[1] == 1000);
    kf_sweep_destroy(&s);
}

/* ---- seed files on disk ---- */

static void test_seed_files(void **state)
{
    kf_sweep_spec *s = NULL;
    kf_err err;
    kf_err_clear(&err);
    const char *full = SEEDS "/full.yaml", *kdir = SEEDS "/kernels";
    if (kf_sweep_parse_file(full, kdir, &s, &err) != KF_OK)
        fail_msg("%s", err.msg);
    assert_string_equal(s->file, full);
    assert_string_equal(s->name, "full-example");
    assert_int_equal(s->nkernels, 3);
    assert_string_equal(s->kernels[0].name, "saxpy");
    assert_int_equal(s->kernels[0].naxes, 1);
    VALUES(&s->kernels[0].axes[0], "n", 1 << 20, 4 << 20);
    assert_string_equal(s->kernels[1].name, "scale");
    assert_int_equal(s->kernels[1].cuda, 1);
    VALUES(&s->kernels[1].axes[1], "block", 32, 64, 128);
    assert_int_equal(kf_sweep_kernel_configs(&s->kernels[1]), 6);
    assert_string_equal(s->kernels[2].name, "saxpy_big");
    assert_string_equal(s->kernels[2].path, s->kernels[0].path);
    assert_int_equal(s->kernels[2].naxes, 0);
    assert_int_equal(s->nodes_all, 1);
    assert_int_equal(s->max_attempts, 5);
    assert_true(s->time_limit_s == 120.0);
    assert_int_equal(s->measure.batch, 8);
    FILE *fp = fopen(full, "rb");
    assert_non_null(fp);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    assert_string_equal(s->text, buf);
    kf_sweep_destroy(&s);

    if (kf_sweep_parse_file(SEEDS "/minimal.yaml", kdir, &s, &err) != KF_OK)
        fail_msg("%s", err.msg);
    assert_string_equal(s->name, "minimal");
    kf_sweep_destroy(&s);

    static const struct {
        const char *file, *want;
    } bad[] = {
        {"bad_syntax.yaml", ":3:2: YAML syntax error"},
        {"bad_unknown_key.yaml", ":5:3: unknown key 'min_tim' in measure; did you mean 'min_time'"},
        {"bad_range.yaml", ":4:34: mul: of axis 'n' must be at least 2"},
        {"bad_baseline.yaml", ":2:11: baseline 'triad' is not a kernel"},
        {"bad_value.yaml", ":2:18: a value of axis 'n' must be an integer"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char path[PATH_MAX], want[PATH_MAX + 128];
        snprintf(path, sizeof path, "%s/%s", SEEDS, bad[i].file);
        snprintf(want, sizeof want, "%s%s", path, bad[i].want);
        kf_sweep_spec dummy, *out = &dummy;
        assert_int_equal(kf_sweep_parse_file(path, kdir, &out, &err), KF_EINVAL);
        assert_ptr_equal(out, &dummy);
        if (strncmp(err.msg, want, strlen(want)) != 0)
            fail_msg("%s: want %s\ngot %s", bad[i].file, want, err.msg);
    }

    kf_sweep_spec dummy, *out = &dummy;
    assert_int_equal(kf_sweep_parse_file(SEEDS "/no-such.yaml", kdir, &out, &err), KF_EIO);
    assert_ptr_equal(out, &dummy);
    assert_non_null(strstr(err.msg, "no-such.yaml: cannot read the sweep file"));
}

/* Every prefix and many one-byte mutations of the full seed: each parse
 * must succeed or fail with a located KF_EINVAL, and leak nothing (ASan). */
static void test_mutations(void **state)
{
    FILE *fp = fopen(SEEDS "/full.yaml", "rb");
    assert_non_null(fp);
    char seed[4096], text[4096];
    size_t n = fread(seed, 1, sizeof seed, fp);
    fclose(fp);
    static const char subst[] = {'{', '}', '[', ':', '-', '\n', ' ', '*', '&', '\'', '\xff', '0'};
    size_t ok = 0, bad = 0;
    for (size_t i = 0; i <= n; i++) {
        for (size_t m = 0; m <= sizeof subst; m++) {
            size_t len = n;
            memcpy(text, seed, n);
            if (m == sizeof subst)
                len = i; /* the prefix */
            else if (i < n)
                text[i] = subst[m];
            else
                continue;
            kf_sweep_spec *s = NULL;
            kf_err err;
            kf_err_clear(&err);
            int rc = kf_sweep_parse_string(text, len, "t.yaml", SEEDS, SEEDS "/kernels", &s, &err);
            if (rc == KF_OK) {
                assert_non_null(s);
                kf_sweep_destroy(&s);
                ok++;
                continue;
            }
            if (rc != KF_EINVAL || strncmp(err.msg, "t.yaml:", 7) != 0)
                fail_msg("byte %zu -> %d: rc %d, %s", i, (int)m, rc, err.msg);
            assert_null(s);
            bad++;
        }
    }
    assert_true(ok > 0 && bad > 0);
}

/* The table of task kinds (common/taskkind.h) names the sweep's tasks: a
 * kind's bit is 1 << its value, the kinds a sweep may not ask for have
 * none, and a kind this kfleet does not know reads as a row that needs,
 * gates and reports nothing. */
static void test_task_kind_bits(void **state)
{
    (void)state;
    assert_int_equal(kf_task_kind_of(KFLEET__TASK_KIND__BUILD)->sweep_bit,
                     1u << KFLEET__TASK_KIND__BUILD);
    assert_int_equal(kf_task_kind_of(KFLEET__TASK_KIND__VALIDATE)->sweep_bit,
                     1u << KFLEET__TASK_KIND__VALIDATE);
    assert_int_equal(kf_task_kind_of(KFLEET__TASK_KIND__PROFILE)->sweep_bit,
                     1u << KFLEET__TASK_KIND__PROFILE);
    assert_int_equal(kf_task_kind_of(KFLEET__TASK_KIND__REFERENCE)->sweep_bit, 0);
    assert_int_equal(kf_task_kind_of(KFLEET__TASK_KIND__DOCTOR)->sweep_bit, 0);
    assert_int_equal(kf_task_kind_sweep_all(), (1u << KFLEET__TASK_KIND__BUILD) |
                                                   (1u << KFLEET__TASK_KIND__VALIDATE) |
                                                   (1u << KFLEET__TASK_KIND__PROFILE));
    assert_int_equal(kf_task_kind_of(KFLEET__TASK_KIND__PROFILE)->gated_by,
                     KFLEET__TASK_KIND__VALIDATE);
    assert_ptr_equal(kf_task_kind_named("validate"), kf_task_kind_of(KFLEET__TASK_KIND__VALIDATE));
    assert_null(kf_task_kind_named("sanitize"));
    assert_string_equal(kf_task_kind_name(KFLEET__TASK_KIND__PROFILE), "profile");
    assert_string_equal(kf_task_kind_name(99), "unknown");
    const kf_task_kind *u = kf_task_kind_at(99);
    assert_null(kf_task_kind_of(99));
    assert_int_equal(u->builds + u->runs_kernel + u->served + u->references + u->needs_reference +
                         (int)u->gated_by + (int)u->report + (int)u->sweep_bit,
                     0);
}

/* What the expansion relies on: a kind's gated_by row comes before it in
 * the table and is made per configuration as it is (sched_expand.c makes
 * a group's kinds in the table's order and sched_add_task looks back for
 * the gate), and the kinds a task group holds have ascending sweep bits
 * in the table's order (the coordinator's group check). */
static void test_task_kind_table_order(void **state)
{
    (void)state;
    unsigned last_group_bit = 0;
    size_t n = 0;
    for (size_t i = 0; kf_task_kinds[i].name; i++, n++) {
        const kf_task_kind *tk = &kf_task_kinds[i];
        assert_ptr_equal(kf_task_kind_of(tk->kind), tk);
        if (tk->gated_by) {
            const kf_task_kind *g = kf_task_kind_of(tk->gated_by);
            assert_non_null(g);
            assert_true(g < tk);
            assert_int_equal(g->per_config, tk->per_config);
        }
        if (tk->per_config && tk->sweep_bit) {
            assert_true(tk->sweep_bit > last_group_bit);
            last_group_bit = tk->sweep_bit;
        }
        assert_false(tk->builds && tk->runs_kernel);
        assert_false(tk->served && !tk->runs_kernel);
    }
    assert_int_equal(n, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_task_kind_bits),
        cmocka_unit_test(test_task_kind_table_order),
        cmocka_unit_test(test_full_file),
        cmocka_unit_test(test_min_span_off),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_cartesian_order),
        cmocka_unit_test(test_values_and_ranges),
        cmocka_unit_test(test_params_inherit),
        cmocka_unit_test(test_lookup),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_too_many_axes),
        cmocka_unit_test(test_flags_limit),
        cmocka_unit_test(test_alias_expansion_bounded),
        cmocka_unit_test(test_deep_nesting_refused),
        cmocka_unit_test(test_config_limit_inclusive),
        cmocka_unit_test(test_seed_files),
        cmocka_unit_test(test_mutations),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
