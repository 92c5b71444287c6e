/* test_sweep_problem — a sweep's problem: and candidates: (sweep_problem.c):
 * candidates run the problem's configurations, the seed policy is read,
 * and a candidate that declares tolerances, a reference, its own inputs or
 * seeds (Python or C), or lacks its entry point, is refused at submit with
 * its file, line and reason. */
#include "core/sweep.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[PATH_MAX];

static void write_file(const char *name, const char *content)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
}

static const char *const problem_py = "\"\"\"rmsnorm over rows.\"\"\"\n"
                                      "import numpy as np\n"
                                      "tol_abs = 1e-5\n"
                                      "tol_rel = 1e-6\n"
                                      "def setup(params, seed):\n"
                                      "    return {}\n"
                                      "def output(s):\n"
                                      "    return s['out']\n"
                                      "def reference(s):\n"
                                      "    return s['out']\n";

static int setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/kf-sweep-problem-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    write_file("problem.py", problem_py);
    write_file("fast.py", "import numpy as np\n"
                          "def run(s):\n"
                          "    np.multiply(s['x'], 2, out=s['out'])\n"
                          "    seed = 3  # local, inside run: not the module's\n");
    write_file("slow.py", "def run(s):\n    s['out'][:] = s['x'] * 2\n");
    write_file("cand.c", "#include \"kf_kernel.h\"\n"
                         "/* tol_abs in a comment is fine; so is \"tol_rel\" in a string */\n"
                         "static const char *why = \"no .reference here\";\n"
                         "static int run(void *s, const kf_view *in, size_t n, const kf_view *o,\n"
                         "               char *e, size_t el) { return 0; }\n"
                         "static const kf_candidate c = {.abi_version = 1, .run = run};\n"
                         "const kf_candidate *kf_candidate_get(void) { return &c; }\n");
    /* The refused ones. */
    write_file("tol.py", "def run(s):\n    pass\ntol_rel = 0.5\n");
    write_file("atol.py", "def run(s):\n    pass\natol = 1e-2\n");
    write_file("tolfn.py", "def run(s):\n    pass\n\ndef tolerances(params, dtype):\n"
                           "    return {'rtol': 1}\n");
    write_file("ctolfn.c", "#include \"kf_kernel.h\"\n"
                           "const kf_candidate *kf_candidate_get(void) { return 0; }\n"
                           "int kf_tolerances(const kf_params *p, kf_dtype o, kf_tol *t,\n"
                           "                  char *e, size_t n) { return 0; }\n");
    write_file("ref.py", "import numpy as np\n\ndef run(s):\n    pass\n\n"
                         "def reference(s):\n    return s['out']\n");
    write_file("own_inputs.py", "def setup(params, seed):\n    return {}\ndef run(s):\n    pass\n");
    write_file("seeds.py", "seeds = [1, 2, 3]\ndef run(s):\n    pass\n");
    write_file("norun.py", "def compute(s):\n    pass\n");
    write_file("whole.c", "#include \"kf_kernel.h\"\n\n\n"
                          "const kf_kernel *kf_kernel_get(void) { return 0; }\n");
    write_file("ctol.c", "#include \"kf_kernel.h\"\n"
                         "const kf_candidate *kf_candidate_get(void) { return 0; }\n"
                         "double tol_abs = 1.0;\n");
    write_file("cref.c", "#include \"kf_kernel.h\"\n"
                         "struct x { int (*reference)(void); };\n"
                         "static struct x y = {\n  .reference = 0 };\n"
                         "const kf_candidate *kf_candidate_get(void) { return 0; }\n");
    write_file("noentry.c", "int add(int a, int b) { return a + b; }\n");
    return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static int teardown(void **state)
{
    (void)state;
    nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
    return 0;
}

static int parse(const char *yaml, kf_sweep_spec **out, kf_err *err)
{
    kf_err_clear(err);
    return kf_sweep_parse_string(yaml, strlen(yaml), "t.yaml", dir, NULL, out, err);
}

static void test_problem_and_candidates(void **state)
{
    (void)state;
    kf_sweep_spec *s = NULL;
    kf_err err;
    int rc = parse("problem: {path: problem.py, params: {rows: [64, 128], cols: [256]},\n"
                   "          seeds: 5, renew: 2h}\n"
                   "candidates: [fast.py, {path: slow.py, name: slow_one}, cand.c]\n"
                   "baseline: slow_one\n",
                   &s, &err);
    if (rc != KF_OK)
        fail_msg("parse: %s", err.msg);
    assert_non_null(s->problem);
    assert_string_equal(s->problem->name, "problem");
    assert_true(s->problem->python);
    assert_int_equal(s->problem->naxes, 2);
    assert_int_equal(s->seed_pool, 5);
    assert_true(s->seed_renew_s == 7200.0);
    assert_int_equal(s->nkernels, 3);
    assert_string_equal(s->kernels[0].name, "fast");
    assert_string_equal(s->kernels[1].name, "slow_one");
    assert_string_equal(s->kernels[2].name, "cand");
    for (size_t i = 0; i < s->nkernels; i++) {
        assert_true(s->kernels[i].candidate);
        /* Every candidate runs the problem's configurations. */
        assert_int_equal(kf_sweep_kernel_configs(&s->kernels[i]), 2);
        assert_string_equal(s->kernels[i].axes[0].name, "rows");
    }
    assert_string_equal(s->baseline, "slow_one");
    kf_sweep_destroy(&s);

    /* The default policy, and top-level params for the problem. */
    rc = parse("params: {n: [1K]}\nproblem: problem.py\ncandidates: [fast.py]\n", &s, &err);
    if (rc != KF_OK)
        fail_msg("parse: %s", err.msg);
    assert_int_equal(s->seed_pool, KF_SWEEP_DEFAULT_SEED_POOL);
    assert_true(s->seed_renew_s == KF_SWEEP_DEFAULT_SEED_RENEW_S);
    assert_int_equal(s->kernels[0].naxes, 1);
    assert_int_equal(s->kernels[0].axes[0].values[0], 1024);
    kf_sweep_destroy(&s);

    /* A plain sweep has no problem. */
    rc = parse("kernels: [{path: cand.c}]\n", &s, &err);
    assert_int_equal(rc, KF_OK);
    assert_null(s->problem);
    assert_false(s->kernels[0].candidate);
    kf_sweep_destroy(&s);
}

typedef struct refused {
    const char *yaml;
    const char *needle; /* the file:line and the reason */
} refused;

static const refused refusals[] = {
    {"problem: problem.py\ncandidates: [tol.py]\n",
     "tol.py:3:1: candidate 'tol' declares a tolerance (tol_rel), refused"},
    {"problem: problem.py\ncandidates: [atol.py]\n",
     "atol.py:3:1: candidate 'atol' declares a tolerance (atol), refused"},
    {"problem: problem.py\ncandidates: [tolfn.py]\n",
     "tolfn.py:4:5: candidate 'tolfn' declares its tolerances (tolerances), refused"},
    {"problem: problem.py\ncandidates: [ctolfn.c]\n",
     "ctolfn.c:3:5: candidate 'ctolfn' declares its tolerances (kf_tolerances)"},
    {"problem: problem.py\ncandidates: [fast.py, ref.py]\n",
     "ref.py:6:5: candidate 'ref' declares a reference (reference), refused"},
    {"problem: problem.py\ncandidates: [own_inputs.py]\n",
     "own_inputs.py:1:5: candidate 'own_inputs' makes its own inputs"},
    {"problem: problem.py\ncandidates: [seeds.py]\n",
     "seeds.py:1:1: candidate 'seeds' declares seeds (seeds)"},
    {"problem: problem.py\ncandidates: [norun.py]\n", "candidate 'norun' defines no run"},
    {"problem: problem.py\ncandidates: [whole.c]\n",
     "whole.c:4:18: candidate 'whole' is a whole kernel (kf_kernel_get"},
    {"problem: problem.py\ncandidates: [ctol.c]\n",
     "ctol.c:3:8: candidate 'ctol' declares a tolerance (tol_abs)"},
    {"problem: problem.py\ncandidates: [cref.c]\n",
     "cref.c:4:4: candidate 'cref' declares a reference (reference)"},
    {"problem: problem.py\ncandidates: [noentry.c]\n", "defines no kf_candidate_get"},
    {"problem: problem.py\n", "a problem without candidates:"},
    {"problem: problem.py\ncandidates: []\n", "candidates must be a non-empty list"},
    {"problem: problem.py\nkernels: [cand.c]\ncandidates: [fast.py]\n",
     "kernels: and problem: in one sweep"},
    {"problem: problem.py\ncandidates: [{path: fast.py, params: {n: [1]}}]\n",
     "has params: of its own"},
    {"problem: problem.py\ncandidates: [fast.py, {path: slow.py, name: fast}]\n", "listed twice"},
    {"problem: {path: problem.py, seeds: 0}\ncandidates: [fast.py]\n", "seeds"},
    {"problem: {path: problem.py, renew: -1s}\ncandidates: [fast.py]\n",
     "renew must be longer than 0"},
};

static void test_candidate_contract_refused(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < sizeof refusals / sizeof *refusals; i++) {
        kf_sweep_spec dummy, *out = &dummy;
        kf_err err;
        int rc = parse(refusals[i].yaml, &out, &err);
        if (rc != KF_EINVAL || out != &dummy || !strstr(err.msg, refusals[i].needle) ||
            strncmp(err.msg, "t.yaml:", 7) != 0) {
            print_error("case %zu:\n%s  want ...%s\n  got  rc=%d %s\n", i, refusals[i].yaml,
                        refusals[i].needle, rc, err.msg);
            failures++;
        }
    }
    assert_int_equal(failures, 0);
}

/* Every refused candidate is named, not only the first (issue 42): each
 * message to on_refused, the error their count; without a listener the
 * first and "more". */
struct heard {
    size_t n;
    char msgs[4][1024];
};

static void hear(void *ctx, const char *msg)
{
    struct heard *h = ctx;
    if (h->n < 4)
        snprintf(h->msgs[h->n], sizeof h->msgs[h->n], "%s", msg);
    h->n++;
}

static const char *const three_bad = "problem: problem.py\n"
                                     "candidates: [fast.py, tol.py, ref.py, slow.py, norun.py]\n";

static void test_every_refusal_named(void **state)
{
    (void)state;
    struct heard h = {0, {""}};
    kf_sweep_parse_opts po = {0, hear, &h};
    kf_sweep_spec dummy, *s = &dummy;
    kf_err err;
    kf_err_clear(&err);
    int rc = kf_sweep_parse_string_opts(three_bad, strlen(three_bad), "t.yaml", dir, NULL, &po, &s,
                                        &err);
    assert_int_equal(rc, KF_EINVAL);
    assert_ptr_equal(s, &dummy);
    assert_int_equal(h.n, 3);
    assert_non_null(strstr(h.msgs[0], "t.yaml:2:23: "));
    assert_non_null(strstr(h.msgs[0], "tol.py:3:1: candidate 'tol' declares a tolerance"));
    assert_non_null(strstr(h.msgs[1], "ref.py:6:5: candidate 'ref' declares a reference"));
    assert_non_null(strstr(h.msgs[2], "candidate 'norun' defines no run"));
    assert_non_null(strstr(err.msg, "t.yaml: 3 candidates refused (each named above)"));
    assert_non_null(strstr(err.msg, "--keep-going"));

    /* No listener: the first, and that there are more. */
    rc = parse(three_bad, &s, &err);
    assert_int_equal(rc, KF_EINVAL);
    assert_non_null(strstr(err.msg, "tol.py:3:1: candidate 'tol'"));
    assert_non_null(strstr(err.msg, "(and more candidates refused)"));
}

/* refused: fail (or opts.keep_going) keeps them, each with its reason. */
static void test_refused_kept(void **state)
{
    (void)state;
    char yaml[256];
    snprintf(yaml, sizeof yaml, "%srefused: fail\n", three_bad);
    for (int how = 0; how < 2; how++) {
        kf_sweep_parse_opts po = {how, NULL, NULL};
        kf_sweep_spec *s = NULL;
        kf_err err;
        const char *text = how ? three_bad : yaml;
        if (kf_sweep_parse_string_opts(text, strlen(text), "t.yaml", dir, NULL, &po, &s, &err))
            fail_msg("parse: %s", err.msg);
        assert_int_equal(s->nkernels, 5);
        assert_true(s->refused_fail);
        const char *want[5] = {NULL, "declares a tolerance", "declares a reference", NULL,
                               "defines no run"};
        for (size_t i = 0; i < 5; i++) {
            if (!want[i]) {
                assert_null(s->kernels[i].refused);
                continue;
            }
            assert_non_null(s->kernels[i].refused);
            assert_non_null(strstr(s->kernels[i].refused, want[i]));
            assert_int_equal(strncmp(s->kernels[i].refused, "t.yaml:2:", 9), 0);
        }
        kf_sweep_destroy(&s);
    }
    /* Only stop and fail; and only where there are candidates. */
    kf_sweep_spec *s = NULL;
    kf_err err;
    assert_int_equal(parse("problem: problem.py\ncandidates: [fast.py]\nrefused: skip\n", &s, &err),
                     KF_EINVAL);
    assert_non_null(strstr(err.msg, "refused must be stop or fail"));
    assert_int_equal(parse("kernels: [{path: cand.c}]\nrefused: fail\n", &s, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "refused: is about candidates"));
}

/* A problem sweep's messages speak of candidates (issue 42). */
static void test_candidate_words(void **state)
{
    (void)state;
    kf_sweep_spec *s = NULL;
    kf_err err;
    assert_int_equal(
        parse("problem: problem.py\ncandidates: [fast.py]\nbaseline: problem\n", &s, &err),
        KF_EINVAL);
    assert_non_null(strstr(err.msg, "baseline 'problem' is not a candidate of this sweep; name "
                                    "one of the candidates listed under candidates:"));
    assert_null(strstr(err.msg, "kernels"));
}

/* The shipped examples (examples/problems/) keep the format and the
 * candidate contract: every candidate is accepted as one. */
static void test_examples(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        size_t ncand, nconfigs;
        const char *baseline;
    } ex[] = {
        {KF_SOURCE_DIR "/examples/problems/rmsnorm-cpu/sweep.yaml", 3, 2, "numpy_naive"},
        {KF_SOURCE_DIR "/examples/problems/softmax/sweep.yaml", 4, 2, "torch_softmax"},
    };
    for (size_t i = 0; i < sizeof ex / sizeof *ex; i++) {
        kf_sweep_spec *s = NULL;
        kf_err err;
        kf_err_clear(&err);
        if (kf_sweep_parse_file(ex[i].file, KF_SOURCE_DIR "/kernels", &s, &err) != KF_OK)
            fail_msg("%s: %s", ex[i].file, err.msg);
        assert_non_null(s->problem);
        assert_int_equal(s->nkernels, ex[i].ncand);
        assert_string_equal(s->baseline, ex[i].baseline);
        for (size_t k = 0; k < s->nkernels; k++) {
            assert_true(s->kernels[k].candidate);
            assert_int_equal(kf_sweep_kernel_configs(&s->kernels[k]), ex[i].nconfigs);
        }
        kf_sweep_destroy(&s);
    }
}

/* A Python candidate that says no device runs where its problem does: one
 * on a CUDA problem went to a CPU slot and failed cuInit there, a wrong
 * diagnosis (issue 42's newcomer items). One that says cpu keeps it. */
static void test_candidate_device_is_the_problems(void **state)
{
    (void)state;
    write_file("gpu_problem.py", "import torch\n\ndevice = \"cuda\"\ntol_abs = 1e-6\n"
                                 "tol_rel = 1e-6\n\ndef setup(params, seed):\n    return {}\n\n"
                                 "def output(s):\n    return None\n\n"
                                 "def reference(s):\n    return None\n");
    write_file("on_cpu.py", "device = \"cpu\"\n\ndef run(s):\n    pass\n");
    kf_sweep_spec *s = NULL;
    kf_err err;
    int rc = parse("problem: {path: gpu_problem.py, params: {n: [1]}}\n"
                   "candidates: [slow.py, on_cpu.py]\n",
                   &s, &err);
    if (rc != KF_OK)
        fail_msg("parse: %s", err.msg);
    assert_true(s->problem->cuda);
    assert_string_equal(s->kernels[0].name, "slow");
    assert_true(s->kernels[0].cuda);
    assert_string_equal(s->kernels[1].name, "on_cpu");
    assert_false(s->kernels[1].cuda);
    kf_sweep_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_problem_and_candidates),
        cmocka_unit_test(test_candidate_contract_refused),
        cmocka_unit_test(test_examples),
        cmocka_unit_test(test_every_refusal_named),
        cmocka_unit_test(test_refused_kept),
        cmocka_unit_test(test_candidate_words),
        cmocka_unit_test(test_candidate_device_is_the_problems),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
