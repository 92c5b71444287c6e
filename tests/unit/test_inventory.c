/* test_inventory — the node inventory: host facts are filled, GPUs are
 * absent (not an error) where there is no driver or KF_FAKE_NO_GPU=1, the
 * nvcc banner parser, and kf_inventory_free's NULLing. */
#include "common/inventory.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct fixture {
    char dir[64];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    strcpy(f->dir, "/tmp/kf-inv-XXXXXX");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    rmdir(f->dir);
    free(f);
    return 0;
}

/* Whether this machine has a CUDA driver at all; decides what a real probe
 * must find. dlclose is safe here because cuInit was never called. */
static int have_libcuda(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return 0;
    dlclose(h);
    return 1;
}

static void check_host_fields(const Kfleet__AgentInfo *info, const char *dir)
{
    assert_string_equal(info->agent_id, "node-7");
    assert_string_equal(info->workdir, dir);
    assert_string_equal(info->version, KF_VERSION);
    assert_true(info->cpu_count >= 1);
    assert_true(info->memory_bytes > 0);
    assert_true(info->workdir_free_bytes > 0);
    assert_true(info->hostname[0] != '\0');
    assert_true(info->arch[0] != '\0');
    assert_int_equal(info->pid, (uint32_t)getpid());
    assert_int_equal(info->cpu_slots, 1);
    assert_int_equal(info->gpu_slots, info->n_gpus);
    assert_non_null(info->cpu_model);
    assert_non_null(info->cc_version);
    assert_non_null(info->nvcc_version);
    assert_non_null(info->driver_version);
}

static void test_collect_host(void **state)
{
    fixture *f = *state;
    Kfleet__AgentInfo *info = NULL;
    kf_err err;
    kf_err_clear(&err);
    assert_int_equal(kf_inventory_collect("node-7", f->dir, &info, &err), KF_OK);
    assert_non_null(info);
    check_host_fields(info, f->dir);
    if (!have_libcuda()) {
        /* This machine's case: no driver → no GPUs, no versions. */
        assert_int_equal(info->n_gpus, 0);
        assert_int_equal(info->gpu_slots, 0);
        assert_int_equal(info->cuda_driver_version, 0);
    }
    for (size_t i = 0; i < info->n_gpus; i++) {
        const Kfleet__GpuInfo *g = info->gpus[i];
        assert_int_equal(g->index, i);
        assert_int_equal(strlen(g->uuid), 40);
        assert_memory_equal(g->uuid, "GPU-", 4);
        assert_true(g->cc_major >= 3);
        assert_true(g->memory_bytes > 0);
        assert_true(g->sm_count > 0);
        assert_true(g->name[0] != '\0');
    }
    if (info->n_gpus > 0) {
        assert_true(info->cuda_driver_version >= 3000);
        assert_true(info->driver_version[0] != '\0');
    }
    kf_inventory_free(&info);
    assert_null(info);
}

static void test_collect_fake_no_gpu(void **state)
{
    fixture *f = *state;
    Kfleet__AgentInfo *info = NULL;
    assert_int_equal(setenv("KF_FAKE_NO_GPU", "1", 1), 0);
    int rc = kf_inventory_collect("node-7", f->dir, &info, NULL);
    unsetenv("KF_FAKE_NO_GPU");
    assert_int_equal(rc, KF_OK);
    check_host_fields(info, f->dir);
    assert_int_equal(info->n_gpus, 0);
    assert_null(info->gpus);
    assert_int_equal(info->gpu_slots, 0);
    assert_int_equal(info->cuda_driver_version, 0);
    assert_string_equal(info->driver_version, "");
    kf_inventory_free(&info);
    assert_null(info);
}

/* A missing work dir is a failed probe, not a failed collection. */
static void test_collect_missing_workdir(void **state)
{
    (void)state;
    Kfleet__AgentInfo *info = NULL;
    assert_int_equal(setenv("KF_FAKE_NO_GPU", "1", 1), 0);
    int rc = kf_inventory_collect("a", "/nonexistent/kf-inv", &info, NULL);
    unsetenv("KF_FAKE_NO_GPU");
    assert_int_equal(rc, KF_OK);
    assert_int_equal(info->workdir_free_bytes, 0);
    assert_true(info->cpu_count >= 1);
    kf_inventory_free(&info);
}

static void test_collect_bad_args(void **state)
{
    fixture *f = *state;
    Kfleet__AgentInfo *info = (Kfleet__AgentInfo *)1;
    kf_err err;
    kf_err_clear(&err);
    assert_int_equal(kf_inventory_collect(NULL, f->dir, &info, &err), KF_EINVAL);
    assert_null(info);
    assert_int_equal(err.code, KF_EINVAL);
    assert_true(err.msg[0] != '\0');
    assert_int_equal(kf_inventory_collect("a", NULL, &info, NULL), KF_EINVAL);
    assert_int_equal(kf_inventory_collect("a", f->dir, NULL, NULL), KF_EINVAL);
}

static void test_free_null(void **state)
{
    (void)state;
    Kfleet__AgentInfo *info = NULL;
    kf_inventory_free(&info);
    kf_inventory_free(NULL);
    assert_null(info);
}

/* Labels the agent adds by the header's contract (malloc'd) are freed too;
 * ASan's leak check fails this test otherwise. */
static void test_free_caller_labels(void **state)
{
    fixture *f = *state;
    Kfleet__AgentInfo *info = NULL;
    assert_int_equal(setenv("KF_FAKE_NO_GPU", "1", 1), 0);
    int rc = kf_inventory_collect("a", f->dir, &info, NULL);
    unsetenv("KF_FAKE_NO_GPU");
    assert_int_equal(rc, KF_OK);
    info->labels = calloc(2, sizeof *info->labels);
    assert_non_null(info->labels);
    info->labels[0] = strdup("rack=3");
    info->labels[1] = strdup("fast");
    info->n_labels = 2;
    kf_inventory_free(&info);
    assert_null(info);
}

/* The job that carries an agent is what its provider's launch hands over
 * (KF_JOB_ID and KF_JOB_PROVIDER), both or neither: no provider's own
 * variable is read, and an id without its provider names nothing. */
static void test_collect_job(void **state)
{
    fixture *f = *state;
    const struct {
        const char *id, *prov, *want_id, *want_prov;
    } cases[] = {
        {"4242", "tiny", "4242", "tiny"},
        {"4242", NULL, "", ""},
        {NULL, "tiny", "", ""},
        {"123456789012345678901234567890123", "tiny", "", ""}, /* too long to be one */
        {NULL, NULL, "", ""},
    };
    assert_int_equal(setenv("KF_FAKE_NO_GPU", "1", 1), 0);
    assert_int_equal(setenv("SLURM_JOB_ID", "77", 1), 0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsetenv("KF_JOB_ID");
        unsetenv("KF_JOB_PROVIDER");
        if (cases[i].id)
            assert_int_equal(setenv("KF_JOB_ID", cases[i].id, 1), 0);
        if (cases[i].prov)
            assert_int_equal(setenv("KF_JOB_PROVIDER", cases[i].prov, 1), 0);
        Kfleet__AgentInfo *info = NULL;
        assert_int_equal(kf_inventory_collect("a", f->dir, &info, NULL), KF_OK);
        assert_string_equal(info->job_id, cases[i].want_id);
        assert_string_equal(info->job_provider, cases[i].want_prov);
        kf_inventory_free(&info);
    }
    unsetenv("KF_JOB_ID");
    unsetenv("KF_JOB_PROVIDER");
    unsetenv("SLURM_JOB_ID");
    unsetenv("KF_FAKE_NO_GPU");
}

/* A record stored before job_id had its name (field 25 was slurm_job_id)
 * reads as the job's id, with no provider: the number did not change. */
static void test_old_record_job_id(void **state)
{
    (void)state;
    /* agent_id = "a" (field 1), then field 25, wire type 2: tag 0xca 0x01. */
    static const uint8_t old[] = {0x0a, 0x01, 'a', 0xca, 0x01, 0x02, '4', '2'};
    Kfleet__AgentInfo *a = kfleet__agent_info__unpack(NULL, sizeof old, old);
    assert_non_null(a);
    assert_string_equal(a->agent_id, "a");
    assert_string_equal(a->job_id, "42");
    assert_string_equal(a->job_provider, "");
    kfleet__agent_info__free_unpacked(a, NULL);
}

static const char nvcc_banner[] = "nvcc: NVIDIA (R) Cuda compiler driver\n"
                                  "Copyright (c) 2005-2025 NVIDIA Corporation\n"
                                  "Built on Wed_Aug_20_01:58:59_PM_PDT_2025\n"
                                  "Cuda compilation tools, release 13.0, V13.0.88\n"
                                  "Build cuda_13.0.r13.0/compiler.36424714_0\n";

static void test_parse_nvcc(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(kf_inventory_parse_nvcc(nvcc_banner, out, sizeof out), KF_OK);
    assert_string_equal(out, "13.0, V13.0.88");

    /* CRLF output and a last line without newline. */
    assert_int_equal(
        kf_inventory_parse_nvcc("x\r\nCuda compilation tools, release 12.4, V12.4.131\r\n", out,
                                sizeof out),
        KF_OK);
    assert_string_equal(out, "12.4, V12.4.131");
    assert_int_equal(
        kf_inventory_parse_nvcc("Cuda compilation tools, release 11.8, V11.8.89", out, sizeof out),
        KF_OK);
    assert_string_equal(out, "11.8, V11.8.89");

    /* An earlier line that says "release " loses to the compilation-tools line. */
    assert_int_equal(kf_inventory_parse_nvcc("Built for release engineering\n"
                                             "Cuda compilation tools, release 12.0, V12.0.76\n",
                                             out, sizeof out),
                     KF_OK);
    assert_string_equal(out, "12.0, V12.0.76");

    /* Truncation keeps a terminated prefix. */
    char tiny[5];
    assert_int_equal(kf_inventory_parse_nvcc(nvcc_banner, tiny, sizeof tiny), KF_OK);
    assert_string_equal(tiny, "13.0");

    strcpy(out, "stale");
    assert_int_equal(kf_inventory_parse_nvcc("bash: nvcc: command not found\n", out, sizeof out),
                     KF_ENOTFOUND);
    assert_string_equal(out, "");
    assert_int_equal(kf_inventory_parse_nvcc("", out, sizeof out), KF_ENOTFOUND);
    assert_int_equal(kf_inventory_parse_nvcc(NULL, out, sizeof out), KF_ENOTFOUND);
    assert_int_equal(kf_inventory_parse_nvcc("release \n", out, sizeof out), KF_ENOTFOUND);
}

/* The real nvcc, where this machine has one (PATH or /usr/local/cuda/bin). */
static void test_nvcc_version_live(void **state)
{
    (void)state;
    char out[64];
    int rc = kf_inventory_nvcc_version(out, sizeof out);
    if (access("/usr/local/cuda/bin/nvcc", X_OK) != 0) {
        skip();
    }
    assert_int_equal(rc, KF_OK);
    assert_true(out[0] >= '1' && out[0] <= '9');
    assert_non_null(strstr(out, ", V"));

    /* With an empty PATH the fallback location still finds it. */
    const char *old = getenv("PATH");
    char *saved = old ? strdup(old) : NULL;
    setenv("PATH", "/nonexistent", 1);
    char out2[64];
    rc = kf_inventory_nvcc_version(out2, sizeof out2);
    if (saved) {
        setenv("PATH", saved, 1);
        free(saved);
    }
    assert_int_equal(rc, KF_OK);
    assert_string_equal(out, out2);
}

static void test_cc_version_live(void **state)
{
    (void)state;
    char out[256];
    if (kf_inventory_cc_version(out, sizeof out) != KF_OK)
        skip(); /* no cc on PATH */
    assert_true(out[0] != '\0');
    assert_null(strchr(out, '\n'));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_collect_host, setup, teardown),
        cmocka_unit_test_setup_teardown(test_collect_fake_no_gpu, setup, teardown),
        cmocka_unit_test(test_collect_missing_workdir),
        cmocka_unit_test_setup_teardown(test_collect_bad_args, setup, teardown),
        cmocka_unit_test(test_free_null),
        cmocka_unit_test_setup_teardown(test_free_caller_labels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_collect_job, setup, teardown),
        cmocka_unit_test(test_old_record_job_id),
        cmocka_unit_test(test_parse_nvcc),
        cmocka_unit_test(test_nvcc_version_live),
        cmocka_unit_test(test_cc_version_live),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
