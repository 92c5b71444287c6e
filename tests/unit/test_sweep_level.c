/* test_sweep_level — a whole level in one sweep (sweep_level.c, issue 42):
 * problems: a directory of problems (source files and problem directories
 * alike), candidates matched per problem by name through {name} and globs,
 * a sweep per problem with the sweep's settings and the baseline it has,
 * and a problem without candidates a line in `missing`, not an error. The
 * level is tests/data/level (level.yaml: relu.py, scale/, tanh.py). */
#include "core/sweep.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEVEL KF_SOURCE_DIR "/tests/data/level"

static int parse(const char *yaml, int keep, kf_sweep_spec **out, kf_err *err)
{
    kf_sweep_parse_opts po = {keep, NULL, NULL};
    kf_err_clear(err);
    return kf_sweep_parse_string_opts(yaml, strlen(yaml), "l.yaml", LEVEL, KF_SOURCE_DIR "/kernels",
                                      &po, out, err);
}

static const kf_sweep_kernel *cand(const kf_sweep_spec *p, const char *name)
{
    for (size_t i = 0; i < p->nkernels; i++)
        if (strcmp(p->kernels[i].name, name) == 0)
            return &p->kernels[i];
    return NULL;
}

static void test_level_file(void **state)
{
    (void)state;
    kf_sweep_spec *s = NULL;
    kf_err err;
    kf_sweep_parse_opts po = {1, NULL, NULL};
    if (kf_sweep_parse_file_opts(LEVEL "/level.yaml", KF_SOURCE_DIR "/kernels", &po, &s, &err))
        fail_msg("parse: %s", err.msg);
    assert_int_equal(s->nkernels, 0);
    assert_null(s->problem);
    assert_int_equal(s->nparts, 2); /* tanh has no candidate */
    const kf_sweep_spec *relu = s->parts[0], *scale = s->parts[1];
    assert_string_equal(relu->name, "lvl.relu");
    assert_string_equal(scale->name, "lvl.scale");
    /* A source file is a problem named by its stem; a directory with
     * problem.py one named by the directory. */
    assert_string_equal(relu->problem->name, "relu");
    assert_non_null(strstr(relu->problem->path, "/problems/relu.py"));
    assert_string_equal(scale->problem->name, "scale");
    assert_non_null(strstr(scale->problem->path, "/problems/scale/problem.py"));
    /* {name} in a path, and a glob's matches named by their stems. */
    assert_int_equal(relu->nkernels, 3);
    assert_non_null(strstr(cand(relu, "base")->path, "/base/relu.py"));
    assert_non_null(cand(relu, "np_where"));
    assert_non_null(cand(relu, "bad_ref")->refused);
    assert_int_equal(scale->nkernels, 4);
    assert_non_null(strstr(cand(scale, "base")->path, "/base/scale.py"));
    assert_null(cand(scale, "add")->refused);
    assert_non_null(strstr(cand(scale, "bad_tol")->refused, "of problem 'scale' declares a "
                                                            "tolerance (atol)"));
    assert_non_null(cand(scale, "bad_norun")->refused);
    /* The sweep's settings in every part; the problem's params for every
     * candidate; the seed policy of problems:. */
    for (size_t i = 0; i < 2; i++) {
        const kf_sweep_spec *p = s->parts[i];
        assert_string_equal(p->baseline, "base");
        assert_int_equal(p->seed_pool, 2);
        assert_true(p->measure.timeout_s == 1.0);
        assert_true(p->refused_fail);
        assert_non_null(p->text);
        for (size_t k = 0; k < p->nkernels; k++) {
            assert_true(p->kernels[k].candidate);
            assert_int_equal(kf_sweep_kernel_configs(&p->kernels[k]), 1);
            assert_string_equal(p->kernels[k].axes[0].name, "n");
        }
    }
    /* tanh: a line per pattern that missed, and that it is not run. */
    assert_int_equal(s->nmissing, 3);
    assert_non_null(strstr(s->missing[0], "problem 'tanh': no candidate at 'base/tanh.py'"));
    assert_int_equal(strncmp(s->missing[0], LEVEL "/level.yaml:10:5: ", strlen(LEVEL) + 17), 0);
    assert_non_null(strstr(s->missing[1], "no candidate at 'cands/tanh/*.py'"));
    assert_non_null(strstr(s->missing[2], "problem 'tanh'"));
    assert_non_null(strstr(s->missing[2], "the problem is not run"));
    kf_sweep_destroy(&s);

    /* Without keeping them, the three refusals stop it (each named, the
     * sweep's file in the count). */
    if (kf_sweep_parse_file(LEVEL "/level.yaml", KF_SOURCE_DIR "/kernels", &s, &err) != KF_EINVAL)
        fail_msg("the refused candidates did not stop the level");
    assert_non_null(strstr(err.msg, "refused"));
}

/* A glob of problem directories ({dir}: each one's own), a list of
 * paths, and a plain candidate every problem gets. */
static void test_globs_and_dirs(void **state)
{
    (void)state;
    kf_sweep_spec *s = NULL;
    kf_err err;
    int rc = parse("problems: {path: [\"problems/s*\", problems/relu.py], params: {n: 64}}\n"
                   "candidates:\n"
                   "  - \"base/{name}.py\"\n"
                   "  - {path: \"cands/{name}/a*.py\", name: first}\n"
                   "refused: fail\n",
                   0, &s, &err);
    if (rc)
        fail_msg("parse: %s", err.msg);
    assert_int_equal(s->nparts, 2);
    assert_string_equal(s->parts[0]->name, "l.scale"); /* the file's stem names the level */
    assert_string_equal(s->parts[1]->problem->name, "relu");
    /* base/scale.py is named by its directory: scale is the problem's. */
    assert_non_null(cand(s->parts[0], "base"));
    assert_non_null(cand(s->parts[0], "add")); /* a glob: its stem, not name: */
    assert_null(s->parts[0]->baseline);
    /* relu has no cands/relu/a*.py: a line, and still runs with base. */
    assert_int_equal(s->parts[1]->nkernels, 1);
    assert_int_equal(s->nmissing, 1);
    assert_non_null(strstr(s->missing[0], "problem 'relu': no candidate at 'cands/relu/a*.py'"));
    kf_sweep_destroy(&s);

    /* {dir}: a problem directory's own. */
    rc = parse("problems: {path: problems/scale, params: {n: 64}}\n"
               "candidates: [\"{dir}/../../cands/{name}/add.py\"]\n",
               0, &s, &err);
    if (rc)
        fail_msg("parse: %s", err.msg);
    assert_int_equal(s->nparts, 1);
    assert_non_null(cand(s->parts[0], "add"));
    kf_sweep_destroy(&s);
}

static void test_level_errors(void **state)
{
    (void)state;
    static const struct {
        const char *yaml, *needle;
    } bad[] = {
        {"problems: nowhere/*\ncandidates: [x.py]\n", "l.yaml:1:11: problems: 'nowhere/*' "
                                                      "matches nothing"},
        {"problems: base/\n", "problems: needs candidates:"},
        {"problems: problems/\nproblem: problems/relu.py\ncandidates: [a.py]\n",
         "problems: with problem: in one sweep"},
        {"problems: {params: {n: 1}}\ncandidates: [\"{name}.py\"]\n", "problems: needs path:"},
        {"problems: {path: problems/, params: {n: 1}}\ncandidates: [\"base/{name}.py\"]\n"
         "baseline: torch\n",
         "baseline 'torch' is not a candidate of any problem"},
        {"problems: {path: problems/, params: {n: 1}}\n"
         "candidates: [\"base/{name}.py\", \"base/{name}.py\"]\n",
         "problem 'relu' gets two candidates named 'base'"},
        {"problems: [problems/relu.py, problems/relu.py]\ncandidates: [\"base/{name}.py\"]\n",
         "two problems are named 'relu'"},
        {"problems: level.yaml\ncandidates: [\"base/{name}.py\"]\n", "names no problem"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        kf_sweep_spec dummy, *s = &dummy;
        kf_err err;
        int rc = parse(bad[i].yaml, 1, &s, &err);
        if (rc != KF_EINVAL || s != &dummy || !strstr(err.msg, bad[i].needle))
            fail_msg("case %zu: want ...%s, got rc=%d %s", i, bad[i].needle, rc, err.msg);
    }
    /* Every problem left without a candidate: parsed, no part, all said. */
    kf_sweep_spec *s = NULL;
    kf_err err;
    if (parse("problems: {path: problems/, params: {n: 1}}\ncandidates: [\"gen/{name}_*.py\"]\n", 0,
              &s, &err))
        fail_msg("parse: %s", err.msg);
    assert_int_equal(s->nparts, 0);
    assert_int_equal(s->nmissing, 6);
    kf_sweep_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_level_file),
        cmocka_unit_test(test_globs_and_dirs),
        cmocka_unit_test(test_level_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
