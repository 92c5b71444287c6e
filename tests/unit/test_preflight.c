/* test_preflight — the node checks: the parser on recorded output, every
 * reason of the check with the numbers in its message, the summary line, and
 * the script itself run for real with `sh -s -- DIR` (dash on Debian):
 *
 *   - on this machine (no GPU): absence of nvidia-smi reported, not fatal;
 *   - with tiny fake nvidia-smi/nvcc scripts first in PATH that print what an
 *     H100 box prints (the only fakes: external tools, so that the script's
 *     own parsing of their output is exercised);
 *   - on a 1 MiB tmpfs (then remounted read-only): refused with the free
 *     space in the message, then as not writable. Skipped where mount is not
 *     allowed. */
#include "fleet/preflight.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define MiB (1024ULL * 1024)
#define GiB (1024ULL * MiB)

/* Recorded on a 2× H100 SXM node (RunPod, driver 580.95.05). */
static const char h100_query[] = "0, NVIDIA H100 80GB HBM3, 580.95.05, 81559\n"
                                 "1, NVIDIA H100 80GB HBM3, 580.95.05, 81559\n";
static const char h100_header[] =
    "Tue Nov 11 10:12:01 2025       \n"
    "+------------------------------------------------------------------------------------"
    "-----+\n"
    "| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0    "
    " |\n"
    "+-----------------------------------------+------------------------+-------------------"
    "---+\n"
    "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. "
    "ECC |\n"
    "|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    "
    "0 |\n";
static const char nvcc_128[] = "nvcc: NVIDIA (R) Cuda compiler driver\n"
                               "Copyright (c) 2005-2025 NVIDIA Corporation\n"
                               "Built on Fri_Feb_21_20:23:50_PST_2025\n"
                               "Cuda compilation tools, release 12.8, V12.8.93\n"
                               "Build cuda_12.8.r12.8/compiler.35583870_0\n";

typedef struct fixture {
    char dir[PATH_MAX];
    char bin[PATH_MAX]; /* the fakes */
    char mnt[PATH_MAX]; /* the tmpfs, when mounted */
    int mounted;
    char script[PATH_MAX];
} fixture;

static void write_file(const char *path, const char *content, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    strcpy(f->dir, "/tmp/kf-preflight-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->bin, sizeof f->bin, "%s/bin", f->dir);
    snprintf(f->mnt, sizeof f->mnt, "%s/mnt", f->dir);
    snprintf(f->script, sizeof f->script, "%s/preflight.sh", f->dir);
    if (mkdir(f->bin, 0700) || mkdir(f->mnt, 0700))
        return -1;
    write_file(f->script, kf_preflight_script(), 0600);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (f->mounted)
        umount(f->mnt);
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    int rc = system(cmd);
    free(f);
    return rc == 0 ? 0 : -1;
}

/* Runs the script as the launcher does (`sh -s -- WORKDIR`, script on stdin)
 * in a clean environment; returns its stdout (caller frees). */
static char *run_script(fixture *f, const char *path_env, const char *extra_env,
                        const char *workdir)
{
    char cmd[4 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "env -i PATH='%s' HOME='%s' %s sh -s -- '%s' < '%s'", path_env,
             f->dir, extra_env, workdir, f->script);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 65536, len = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    size_t n;
    while ((n = fread(out + len, 1, cap - 1 - len, p)) > 0)
        len += n;
    out[len] = '\0';
    assert_int_equal(pclose(p), 0);
    return out;
}

static void parse_ok(const char *out, kf_preflight *pf)
{
    kf_err err = {0};
    int rc = kf_preflight_parse(out, strlen(out), pf, &err);
    if (rc)
        fail_msg("parse: %d %s\n--- output:\n%s", rc, err.msg, out);
}

static void expect_reason(const kf_preflight *pf, uint64_t min_free, int need_gpu, const char *has)
{
    kf_err err = {0};
    int rc = kf_preflight_check(pf, min_free, need_gpu, &err);
    if (rc != KF_EINVAL || !strstr(err.msg, has))
        fail_msg("want KF_EINVAL with '%s', got %d '%s'", has, rc, err.msg);
}

static void expect_pass(const kf_preflight *pf, uint64_t min_free, int need_gpu)
{
    kf_err err = {0};
    int rc = kf_preflight_check(pf, min_free, need_gpu, &err);
    if (rc)
        fail_msg("want a pass, got %d '%s'", rc, err.msg);
}

/* ---- parse, check, summary on recorded output ---- */

static const char recorded[] = "Welcome to a chatty .bashrc\n" /* before the marker: ignored */
                               "kf_preflight=1\n"
                               "workdir=/workspace/kfleet\r\n"
                               "workdir_ok=1\n"
                               "writable=1\n"
                               "fs_total_kb=104857600\n"
                               "fs_free_kb=43201331\n"
                               "arch=x86_64\n"
                               "glibc=2.35\n"
                               "os=Ubuntu 22.04.4 LTS\n"
                               "nvidia_smi=/usr/bin/nvidia-smi\n"
                               "gpu=0, NVIDIA H100 80GB HBM3, 580.95.05, 81559\n"
                               "gpu=1, NVIDIA H100 80GB HBM3, 580.95.05, 81559\n"
                               "driver_cuda=13.0\n"
                               "nvcc=/usr/local/cuda/bin/nvcc\n"
                               "nvcc_version=12.8\n"
                               "future_key=whatever\n"
                               "kf_preflight_end=1\n"
                               "trailing noise\n";

static void test_parse_recorded(void **state)
{
    kf_preflight pf;
    parse_ok(recorded, &pf);
    assert_string_equal(pf.workdir, "/workspace/kfleet");
    assert_null(pf.workdir_error);
    assert_int_equal(pf.writable, 1);
    assert_int_equal(pf.have_fs, 1);
    assert_int_equal(pf.fs_total_bytes, 100 * GiB);
    assert_int_equal(pf.fs_free_bytes, 43201331ULL * 1024);
    assert_string_equal(pf.arch, "x86_64");
    assert_string_equal(pf.glibc, "2.35");
    assert_string_equal(pf.os, "Ubuntu 22.04.4 LTS");
    assert_int_equal(pf.ngpus, 2);
    assert_int_equal(pf.gpus[1].index, 1);
    assert_string_equal(pf.gpus[1].name, "NVIDIA H100 80GB HBM3");
    assert_int_equal(pf.gpus[1].mem_mib, 81559);
    assert_string_equal(pf.driver, "580.95.05");
    assert_string_equal(pf.driver_cuda, "13.0");
    assert_string_equal(pf.nvcc_version, "12.8");
    char s[256];
    kf_preflight_summary(&pf, s, sizeof s);
    assert_string_equal(s, "2\xc3\x97 NVIDIA H100 80GB HBM3, driver 580.95 (CUDA 13.0), nvcc 12.8, "
                           "41.2 GiB free, x86_64");
    char tiny[8];
    kf_preflight_summary(&pf, tiny, sizeof tiny);
    assert_int_equal(strlen(tiny), 7);
    expect_pass(&pf, 2 * GiB, 1);
    expect_reason(&pf, 50 * GiB, 1,
                  "work dir /workspace/kfleet: 41.2 GiB free of 100.0 GiB, need 50.0 GiB "
                  "(free space or pass --min-free)");
    kf_preflight_free(&pf);
    assert_null(pf.gpus);
    kf_preflight_free(&pf); /* twice is fine */
}

static void test_check_reasons(void **state)
{
    static const char bad[] = "kf_preflight=1\n"
                              "workdir=/workspace/kfleet\n"
                              "writable=0\n"
                              "fs_total_kb=1048576\n"
                              "fs_free_kb=421888\n"
                              "arch=ppc64le\n"
                              "nvidia_smi=/usr/bin/nvidia-smi\n"
                              "gpu=0, Tesla V100-SXM2-16GB, 535.104.05, 16384\n"
                              "driver_cuda=12.2\n"
                              "nvcc=/usr/local/cuda/bin/nvcc\n"
                              "nvcc_version=13.0\n"
                              "kf_preflight_end=1\n";
    kf_preflight pf;
    parse_ok(bad, &pf);
    kf_err err = {0};
    assert_int_equal(kf_preflight_check(&pf, 2 * GiB, 1, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "work dir /workspace/kfleet is not writable"));
    assert_non_null(strstr(err.msg, "work dir /workspace/kfleet: 412 MiB free of 1.0 GiB, need "
                                    "2.0 GiB (free space or pass --min-free)"));
    assert_non_null(strstr(err.msg, "nvcc 13.0 builds for CUDA 13.0 but driver 535.104 supports "
                                    "CUDA 12.2 and the node has no forward-compatibility "
                                    "libraries: the kernels it builds will not load; install "
                                    "NVIDIA's cuda-compat-13-0 package (datacenter GPUs), an "
                                    "older toolkit, or a newer driver"));
    assert_non_null(strstr(err.msg, "CPU arch ppc64le"));
    assert_null(strstr(err.msg, "no GPU")); /* it has one */
    kf_preflight_free(&pf);

    /* The same nvcc on a driver that runs it, or a node without a driver
     * (nothing to compare with, as agent/runner/build.c) passes that test. */
    parse_ok("kf_preflight=1\nworkdir=/w\nwritable=1\narch=aarch64\nnvcc=/x/nvcc\n"
             "nvcc_version=13.0\nkf_preflight_end=1\n",
             &pf);
    expect_pass(&pf, 0, 0);
    expect_reason(&pf, 1, 0, "df reported no free space figure");
    expect_reason(&pf, 0, 1, "no GPU: nvidia-smi is not installed");
    kf_preflight_free(&pf);
    parse_ok("kf_preflight=1\nworkdir=/w\nwritable=1\narch=x86_64\nnvidia_smi=/bin/nvidia-smi\n"
             "nvidia_smi_error=NVIDIA-SMI has failed because it couldn't communicate with the "
             "NVIDIA driver.\nkf_preflight_end=1\n",
             &pf);
    expect_reason(&pf, 0, 1, "no GPU: nvidia-smi failed: NVIDIA-SMI has failed");
    expect_pass(&pf, 0, 0);
    char s[128];
    kf_preflight_summary(&pf, s, sizeof s);
    assert_string_equal(s, "no GPU, no nvcc, x86_64");
    kf_preflight_free(&pf);
    parse_ok("kf_preflight=1\nworkdir=/w\nwritable=1\narch=x86_64\npython=3.12.3\n"
             "python_packages=numpy 2.5.2, torch 2.11.0\nkf_preflight_end=1\n",
             &pf);
    kf_preflight_summary(&pf, s, sizeof s);
    assert_string_equal(s, "no GPU, no nvcc, x86_64, python 3.12.3 (numpy 2.5.2, torch 2.11.0)");
    kf_preflight_free(&pf);
    parse_ok("kf_preflight=1\nworkdir=/w\nworkdir_error=mkdir: Permission denied\nwritable=0\n"
             "arch=x86_64\nkf_preflight_end=1\n",
             &pf);
    expect_reason(&pf, 0, 0, "work dir /w: cannot create it (mkdir: Permission denied)");
    kf_preflight_free(&pf);
}

static void test_parse_errors(void **state)
{
    kf_preflight pf;
    kf_err err = {0};
    assert_int_equal(kf_preflight_parse("", 0, &pf, &err), KF_EPROTO);
    assert_non_null(strstr(err.msg, "no kf_preflight=1 line"));
    kf_preflight_free(&pf);
    const char *cut = "kf_preflight=1\nworkdir=/w\n";
    assert_int_equal(kf_preflight_parse(cut, strlen(cut), &pf, &err), KF_EPROTO);
    assert_non_null(strstr(err.msg, "ends early"));
    kf_preflight_free(&pf);
    const char *junk = "kf_preflight=1\nworkdir=/w\nsomething odd\nkf_preflight_end=1\n";
    assert_int_equal(kf_preflight_parse(junk, strlen(junk), &pf, &err), KF_EPROTO);
    assert_non_null(strstr(err.msg, "line 3 is not key=value ('something odd')"));
    kf_preflight_free(&pf);
    const char *nums = "kf_preflight=1\nfs_total_kb=12x\nfs_free_kb=99999999999999999999\n"
                       "gpu=weird\nkf_preflight_end=1";
    assert_int_equal(kf_preflight_parse(nums, strlen(nums), &pf, &err), KF_OK);
    assert_int_equal(pf.have_fs, 0); /* not numbers: no figure rather than a wrong one */
    assert_int_equal(pf.ngpus, 1);
    assert_string_equal(pf.gpus[0].name, "weird");
    kf_preflight_free(&pf);

    char b[16];
    kf_preflight_bytes(0, b, sizeof b);
    assert_string_equal(b, "0 B");
    kf_preflight_bytes(412 * MiB, b, sizeof b);
    assert_string_equal(b, "412 MiB");
    kf_preflight_bytes(GiB, b, sizeof b);
    assert_string_equal(b, "1.0 GiB");
    kf_preflight_bytes(UINT64_MAX, b, sizeof b);
    assert_string_equal(b, "16.0 EiB");
}

/* ---- the script, for real ---- */

static void test_script_here(void **state)
{
    fixture *f = *state;
    char wd[PATH_MAX];
    snprintf(wd, sizeof wd, "%s/a/b/kfleet", f->dir);
    /* No nvidia-smi in this PATH, and CUDA_HOME points nowhere: no nvcc. */
    char *out = run_script(f, "/usr/bin:/bin", "CUDA_HOME=/nonexistent", wd);
    kf_preflight pf;
    parse_ok(out, &pf);
    struct stat st;
    assert_int_equal(stat(wd, &st), 0); /* mkdir -p */
    assert_true(S_ISDIR(st.st_mode));
    assert_string_equal(pf.workdir, wd);
    assert_int_equal(pf.writable, 1);
    assert_int_equal(pf.have_fs, 1);
    assert_true(pf.fs_free_bytes > 0 && pf.fs_free_bytes <= pf.fs_total_bytes);
    assert_string_equal(pf.arch, "x86_64");
    assert_string_equal(pf.glibc, gnu_get_libc_version());
    assert_non_null(pf.os);
    assert_null(pf.nvidia_smi);
    assert_int_equal(pf.ngpus, 0);
    assert_null(pf.nvcc);
    /* The node's python3 and its packages (Debian's has numpy in the test
     * build), read without importing them. */
    if (access("/usr/bin/python3", X_OK) == 0) {
        assert_non_null(pf.python);
        assert_true(strncmp(pf.python, "3.", 2) == 0);
        char sum[512];
        kf_preflight_summary(&pf, sum, sizeof sum);
        char want[64];
        snprintf(want, sizeof want, ", python %s (", pf.python);
        if (!strstr(sum, want))
            fail_msg("summary '%s' lacks '%s'", sum, want);
        if (system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") == 0 &&
            (!pf.python_packages || !strstr(pf.python_packages, "numpy ")))
            fail_msg("python3 has numpy but python_packages is '%s'",
                     pf.python_packages ? pf.python_packages : "(null)");
    }
    expect_pass(&pf, MiB, 0);
    expect_reason(&pf, MiB, 1, "no GPU: nvidia-smi is not installed");
    kf_preflight_free(&pf);
    free(out);

    /* "~/..." is expanded by the node's shell, from its HOME. */
    out = run_script(f, "/usr/bin:/bin", "", "~/kf");
    parse_ok(out, &pf);
    snprintf(wd, sizeof wd, "%s/kf", f->dir);
    assert_string_equal(pf.workdir, wd);
    assert_int_equal(stat(wd, &st), 0);
    /* The toolkit's usual place is found without PATH, as over ssh. */
    if (access("/usr/local/cuda/bin/nvcc", X_OK) == 0) {
        assert_string_equal(pf.nvcc, "/usr/local/cuda/bin/nvcc");
        assert_non_null(pf.nvcc_version);
    }
    kf_preflight_free(&pf);
    free(out);

    /* A work dir that cannot be made: reported, the rest still runs. */
    out = run_script(f, "/usr/bin:/bin", "", "/proc/kf-no/kfleet");
    parse_ok(out, &pf);
    assert_non_null(pf.workdir_error);
    assert_int_equal(pf.writable, 0);
    assert_non_null(pf.arch);
    expect_reason(&pf, 0, 0, "work dir /proc/kf-no/kfleet: cannot create it (mkdir: ");
    kf_preflight_free(&pf);
    free(out);
}

static void fake(fixture *f, const char *name, const char *body)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", f->bin, name);
    write_file(path, body, 0755);
}

/* A fake tool printing `text` (via a here-doc, so any bytes pass). */
static void fake_printing(fixture *f, const char *name, const char *when_query,
                          const char *otherwise, int rc)
{
    char body[8192];
    snprintf(body, sizeof body,
             "#!/bin/sh\n"
             "case \"$1\" in --query-gpu=*|--version)\ncat <<'EOF'\n%sEOF\n;;\n*)\ncat <<'EOF'\n%s"
             "EOF\n;;\nesac\nexit %d\n",
             when_query, otherwise, rc);
    fake(f, name, body);
}

static void test_script_fakes(void **state)
{
    fixture *f = *state;
    char path_env[PATH_MAX + 32], wd[PATH_MAX];
    snprintf(path_env, sizeof path_env, "%s:/usr/bin:/bin", f->bin);
    snprintf(wd, sizeof wd, "%s/kfleet", f->dir);
    fake_printing(f, "nvidia-smi", h100_query, h100_header, 0);
    fake_printing(f, "nvcc", nvcc_128, "", 0);
    char *out = run_script(f, path_env, "", wd);
    kf_preflight pf;
    parse_ok(out, &pf);
    char smi[PATH_MAX + 16];
    snprintf(smi, sizeof smi, "%s/nvidia-smi", f->bin);
    assert_string_equal(pf.nvidia_smi, smi);
    assert_int_equal(pf.ngpus, 2);
    assert_string_equal(pf.gpus[0].name, "NVIDIA H100 80GB HBM3");
    assert_int_equal(pf.gpus[1].index, 1);
    assert_int_equal(pf.gpus[0].mem_mib, 81559);
    assert_string_equal(pf.driver, "580.95.05");
    assert_string_equal(pf.driver_cuda, "13.0");
    assert_string_equal(pf.nvcc_version, "12.8");
    char s[256];
    kf_preflight_summary(&pf, s, sizeof s);
    const char *want = "2\xc3\x97 NVIDIA H100 80GB HBM3, driver 580.95 (CUDA 13.0), nvcc 12.8, ";
    if (strncmp(s, want, strlen(want)) != 0)
        fail_msg("summary '%s'", s);
    expect_pass(&pf, MiB, 1);
    kf_preflight_free(&pf);
    free(out);

    /* An old driver and a new toolkit. */
    fake_printing(f, "nvidia-smi", "0, NVIDIA H100 80GB HBM3, 535.104.05, 81559\n",
                  "| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2   |\n",
                  0);
    fake_printing(f, "nvcc", "Cuda compilation tools, release 13.0, V13.0.88\n", "", 0);
    out = run_script(f, path_env, "", wd);
    parse_ok(out, &pf);
    expect_reason(&pf, MiB, 1,
                  "nvcc 13.0 builds for CUDA 13.0 but driver 535.104 supports CUDA 12.2 and the "
                  "node has no forward-compatibility libraries: the kernels it builds will not "
                  "load; install NVIDIA's cuda-compat-13-0 package");
    assert_null(pf.nvcc_compat);
    kf_preflight_free(&pf);
    free(out);

    /* The same with the toolkit's forward-compat libraries beside its bin/:
     * found, shown, and the node passes (its runners load them). */
    char compat[PATH_MAX + 16], lib[PATH_MAX + 32];
    snprintf(compat, sizeof compat, "%s/compat", f->dir);
    snprintf(lib, sizeof lib, "%s/libcuda.so.1", compat);
    assert_int_equal(mkdir(compat, 0700), 0);
    FILE *lf = fopen(lib, "w");
    assert_non_null(lf);
    fclose(lf);
    out = run_script(f, path_env, "", wd);
    parse_ok(out, &pf);
    assert_non_null(pf.nvcc_compat);
    assert_string_equal(pf.nvcc_compat, compat);
    expect_pass(&pf, MiB, 1);
    char sum[512];
    kf_preflight_summary(&pf, sum, sizeof sum);
    assert_non_null(strstr(sum, "nvcc 13.0, forward compat "));
    assert_non_null(strstr(sum, compat));
    kf_preflight_free(&pf);
    free(out);
    assert_int_equal(unlink(lib), 0);
    assert_int_equal(rmdir(compat), 0);

    /* A driver that does not answer: nvidia-smi's complaint, on one line. */
    fake_printing(f, "nvidia-smi",
                  "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
                  "Make sure that the latest NVIDIA driver is installed and running.\n",
                  "", 9);
    out = run_script(f, path_env, "", wd);
    parse_ok(out, &pf);
    assert_int_equal(pf.ngpus, 0);
    assert_non_null(strstr(pf.gpu_error, "communicate with the NVIDIA driver. Make sure"));
    expect_reason(&pf, 0, 1, "no GPU: nvidia-smi failed: NVIDIA-SMI has failed");
    kf_preflight_free(&pf);
    free(out);
}

static void test_script_tmpfs(void **state)
{
    fixture *f = *state;
    if (mount("tmpfs", f->mnt, "tmpfs", 0, "size=1m") != 0) {
        print_message("skipped: cannot mount a tmpfs here (%s)\n", strerror(errno));
        skip();
    }
    f->mounted = 1;
    char wd[PATH_MAX];
    snprintf(wd, sizeof wd, "%s/kfleet", f->mnt);
    char *out = run_script(f, "/usr/bin:/bin", "", wd);
    kf_preflight pf;
    parse_ok(out, &pf);
    assert_int_equal(pf.fs_total_bytes, MiB);
    assert_int_equal(pf.writable, 1);
    char want[PATH_MAX + 128];
    snprintf(want, sizeof want,
             "work dir %s: 1 MiB free of 1 MiB, need 2.0 GiB (free space or pass --min-free)", wd);
    kf_err err = {0};
    assert_int_equal(kf_preflight_check(&pf, 2 * GiB, 0, &err), KF_EINVAL);
    if (strcmp(err.msg, want) != 0)
        fail_msg("got '%s'\nwant '%s'", err.msg, want);
    expect_pass(&pf, 512 * 1024, 0);
    kf_preflight_free(&pf);
    free(out);

    /* Read-only: not writable, said so. */
    assert_int_equal(mount("tmpfs", f->mnt, "tmpfs", MS_REMOUNT | MS_RDONLY, "size=1m"), 0);
    out = run_script(f, "/usr/bin:/bin", "", wd);
    parse_ok(out, &pf);
    assert_int_equal(pf.writable, 0);
    snprintf(want, sizeof want, "work dir %s is not writable", wd);
    expect_reason(&pf, 0, 0, want);
    kf_preflight_free(&pf);
    free(out);
    assert_int_equal(umount(f->mnt), 0);
    f->mounted = 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_recorded),
        cmocka_unit_test(test_check_reasons),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test_setup_teardown(test_script_here, setup, teardown),
        cmocka_unit_test_setup_teardown(test_script_fakes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_script_tmpfs, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
