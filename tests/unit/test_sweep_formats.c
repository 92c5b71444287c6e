/* test_sweep_formats — KernelBench and GPU MODE problems as they are
 * (sweep_formats.c, issue 42): the format recognised or stated, the device
 * from the sweep, a KernelBench problem's sizes as params, GPU MODE's
 * task.yml read into the axis case and its files (../utils.py as
 * utils.py), each format's candidate entry point, and the refusals. */
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

static int setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/kf-sweep-formats-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/gm", dir);
    mkdir(sub, 0700);
    write_file("19_ReLU.py", "import torch\nimport torch.nn as nn\n\n"
                             "class Model(nn.Module):\n"
                             "    def forward(self, x):\n        return torch.relu(x)\n\n"
                             "batch_size = 4096\ndim = 393216\n\n"
                             "def get_inputs():\n    return [torch.rand(batch_size, dim)]\n\n"
                             "def get_init_inputs():\n    return []\n");
    write_file("relu_new.py", "import torch.nn as nn\n\nclass ModelNew(nn.Module):\n"
                              "    def forward(self, x):\n        return x.clamp_min(0)\n");
    write_file("run_only.py", "def run(s):\n    pass\n");
    write_file("cand.c", "const void *kf_candidate_get(void) { return 0; }\n");
    write_file("utils.py", "def make_match_reference(reference, **kwargs):\n    pass\n");
    write_file("gm/reference.py", "import torch\nfrom utils import make_match_reference\n"
                                  "def ref_kernel(data):\n    return data[0] + data[1]\n"
                                  "def generate_input(size, seed):\n    return None\n"
                                  "check_implementation = make_match_reference(ref_kernel)\n");
    write_file("gm/task.py", "input_t = tuple\n");
    write_file("gm/task.yml", "files:\n"
                              "  - {\"name\": \"submission.py\", \"source\": \"@SUBMISSION@\"}\n"
                              "  - {\"name\": \"task.py\", \"source\": \"task.py\"}\n"
                              "  - {\"name\": \"utils.py\", \"source\": \"../utils.py\"}\n"
                              "  - {\"name\": \"reference.py\", \"source\": \"reference.py\"}\n"
                              "  - {\"name\": \"eval.py\", \"source\": \"../eval.py\"}\n"
                              "tests:\n  - {\"size\": 127, \"seed\": 4242}\n"
                              "  - {\"size\": 128, \"seed\": 5236}\n"
                              "benchmarks:\n  - {\"size\": 1024, \"seed\": 31232}\n");
    write_file("gm/submission.py", "def custom_kernel(data):\n    return data[0] + data[1]\n");
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

static void test_kernelbench(void **state)
{
    (void)state;
    kf_sweep_spec *s = NULL;
    kf_err err;
    /* Recognised without format:, on the GPU by default, one configuration. */
    int rc = parse("problem: 19_ReLU.py\n"
                   "candidates: [{path: 19_ReLU.py, name: torch}, relu_new.py]\n",
                   &s, &err);
    if (rc != KF_OK)
        fail_msg("parse: %s", err.msg);
    assert_int_equal(s->problem->format, KF_FORMAT_KERNELBENCH);
    assert_true(s->problem->cuda);
    assert_int_equal(s->problem->naxes, 0);
    for (size_t i = 0; i < s->nkernels; i++) {
        assert_int_equal(s->kernels[i].format, KF_FORMAT_KERNELBENCH);
        assert_true(s->kernels[i].cuda); /* the problem's device */
    }
    kf_sweep_destroy(&s);
    /* Stated, on the CPU, its sizes overridden by params:. */
    rc = parse("problem: {path: 19_ReLU.py, format: kernelbench, device: cpu,\n"
               "          params: {batch_size: [16], dim: [1024, 2048]}}\n"
               "candidates: [relu_new.py]\n",
               &s, &err);
    if (rc != KF_OK)
        fail_msg("parse: %s", err.msg);
    assert_false(s->problem->cuda);
    assert_false(s->kernels[0].cuda);
    assert_int_equal(kf_sweep_kernel_configs(&s->kernels[0]), 2);
    kf_sweep_destroy(&s);
}

static void test_gpumode(void **state)
{
    (void)state;
    kf_sweep_spec *s = NULL;
    kf_err err;
    int rc = parse("problem: gm/reference.py\ncandidates: [gm/submission.py]\n", &s, &err);
    if (rc != KF_OK)
        fail_msg("parse: %s", err.msg);
    kf_sweep_kernel *p = s->problem;
    assert_int_equal(p->format, KF_FORMAT_GPUMODE);
    assert_true(p->cuda);
    /* Two tests and a benchmark: case 0, 1, 2, every candidate runs them. */
    assert_int_equal(p->naxes, 1);
    assert_string_equal(p->axes[0].name, "case");
    assert_int_equal(p->axes[0].nvalues, 3);
    assert_int_equal(kf_sweep_kernel_configs(&s->kernels[0]), 3);
    /* task.py and utils.py (read from ../utils.py) and task.yml travel;
     * the submission, eval.py and reference.py itself do not. */
    assert_int_equal(p->nfiles, 3);
    assert_string_equal(p->files[0], "task.py");
    assert_null(p->file_src[0]);
    assert_string_equal(p->files[1], "utils.py");
    assert_string_equal(p->file_src[1], "../utils.py");
    assert_string_equal(p->files[2], "task.yml");
    kf_sweep_destroy(&s);
    /* params: names cases. */
    rc = parse("problem: {path: gm/reference.py, device: cpu, params: {case: [2]}}\n"
               "candidates: [gm/submission.py]\n",
               &s, &err);
    if (rc != KF_OK)
        fail_msg("parse: %s", err.msg);
    assert_int_equal(s->problem->axes[0].nvalues, 1);
    assert_false(s->kernels[0].cuda);
    kf_sweep_destroy(&s);
}

static const struct {
    const char *yaml, *needle;
} refusals[] = {
    {"problem: {path: 19_ReLU.py, format: gpumode}\ncandidates: [relu_new.py]\n",
     "19_ReLU.py is stated to be a gpumode problem but defines no top-level 'def "
     "generate_input'"},
    {"problem: {path: 19_ReLU.py, format: triton}\ncandidates: [relu_new.py]\n",
     "unknown problem format 'triton'; write kfleet, kernelbench or gpumode"},
    {"problem: {path: 19_ReLU.py, device: gpu}\ncandidates: [relu_new.py]\n",
     "device is 'gpu'; write cuda or cpu"},
    {"problem: 19_ReLU.py\ncandidates: [run_only.py]\n",
     "candidate 'run_only' defines no entry point, refused; a kernelbench candidate defines class "
     "ModelNew"},
    {"problem: gm/reference.py\ncandidates: [relu_new.py]\n",
     "a gpumode candidate defines custom_kernel(data)"},
    {"problem: 19_ReLU.py\ncandidates: [cand.c]\n",
     "candidate 'cand' defines no entry point, refused; a kernelbench candidate defines class "
     "ModelNew"},
    {"problem: {path: gm/reference.py, format: kernelbench}\ncandidates: [relu_new.py]\n",
     "defines no top-level 'class Model'"},
};

static void test_refusals(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof refusals / sizeof *refusals; i++) {
        kf_sweep_spec *s = NULL;
        kf_err err;
        int rc = parse(refusals[i].yaml, &s, &err);
        if (rc == KF_OK)
            fail_msg("accepted: %s", refusals[i].yaml);
        if (!strstr(err.msg, refusals[i].needle))
            fail_msg("%s\n  got: %s\n  want: %s", refusals[i].yaml, err.msg, refusals[i].needle);
        assert_non_null(strstr(err.msg, "t.yaml:"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernelbench),
        cmocka_unit_test(test_gpumode),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
