/* Tests for agent/runner/compat.c: a toolkit newer than the driver is
 * bridged only by a directory that holds the toolkit's libcuda.so.1, found
 * where NVIDIA's cuda-compat package puts it (beside the toolkit's bin/) or
 * where KF_CUDA_COMPAT says; without one the refusal names both versions and
 * the package. Driver versions are simulated, as CI has no driver. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "runner/compat.h"
#include "common/util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct fixture {
    char dir[PATH_MAX]; /* a fake toolkit root, like /usr/local/cuda-13.0 */
    char compat[PATH_MAX + 8];
    char lib[PATH_MAX + 32];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/kf-compat-XXXXXX");
    if (!f || !mkdtemp(f->dir))
        return -1;
    snprintf(f->compat, sizeof f->compat, "%s/compat", f->dir);
    snprintf(f->lib, sizeof f->lib, "%s/libcuda.so.1", f->compat);
    unsetenv("KF_CUDA_COMPAT");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    unlink(f->lib);
    rmdir(f->compat);
    rmdir(f->dir);
    unsetenv("KF_CUDA_COMPAT");
    free(f);
    return 0;
}

static void make_lib(fixture *f)
{
    assert_int_equal(mkdir(f->compat, 0700), 0);
    FILE *fp = fopen(f->lib, "w");
    assert_non_null(fp);
    fclose(fp);
}

static void test_versions_and_package(void **state)
{
    (void)state;
    assert_true(kf_version_cmp("13.0", "12.8") > 0);
    assert_true(kf_version_cmp("12.10", "12.9") > 0);
    assert_int_equal(kf_version_cmp("13.0", "13.0"), 0);
    char pkg[64];
    kf_compat_package("13.0", pkg, sizeof pkg);
    assert_string_equal(pkg, "cuda-compat-13-0");
    kf_compat_package("12.8", pkg, sizeof pkg);
    assert_string_equal(pkg, "cuda-compat-12-8");
}

/* A driver as new as the toolkit, or an unknown one, needs nothing. */
static void test_no_gap(void **state)
{
    fixture *f = *state;
    char dir[PATH_MAX] = "x";
    kf_err err = {0};
    assert_int_equal(kf_compat_check(f->dir, "13.0", "13.0", NULL, dir, sizeof dir, &err), KF_OK);
    assert_string_equal(dir, "");
    assert_int_equal(kf_compat_check(f->dir, "12.8", "13.0", NULL, dir, sizeof dir, &err), KF_OK);
    assert_int_equal(kf_compat_check(f->dir, "13.0", "", NULL, dir, sizeof dir, &err), KF_OK);
    assert_int_equal(kf_compat_check(f->dir, "", "12.4", NULL, dir, sizeof dir, &err), KF_OK);
    assert_string_equal(dir, "");
}

/* An older driver without the libraries: refused, saying what to install. */
static void test_gap_refused(void **state)
{
    fixture *f = *state;
    char dir[PATH_MAX];
    kf_err err = {0};
    assert_int_equal(kf_compat_check(f->dir, "13.0", "12.4", NULL, dir, sizeof dir, &err),
                     KF_EUNAVAIL);
    assert_string_equal(dir, "");
    assert_non_null(strstr(err.msg, "nvcc builds for CUDA 13.0"));
    assert_non_null(strstr(err.msg, "driver runs CUDA 12.4 at most"));
    assert_non_null(strstr(err.msg, "cuda-compat-13-0"));
    assert_non_null(strstr(err.msg, f->compat)); /* where it looked */
    assert_non_null(strstr(err.msg, "/usr/local/cuda-13.0/compat"));
    /* A directory without libcuda.so.1 is not the libraries. */
    assert_int_equal(mkdir(f->compat, 0700), 0);
    assert_int_equal(kf_compat_check(f->dir, "13.0", "12.4", NULL, dir, sizeof dir, &err),
                     KF_EUNAVAIL);
}

/* The toolkit's own compat/ bridges the gap and is what runners load. */
static void test_gap_bridged(void **state)
{
    fixture *f = *state;
    make_lib(f);
    char dir[PATH_MAX];
    kf_err err = {0};
    assert_int_equal(kf_compat_check(f->dir, "13.0", "12.4", NULL, dir, sizeof dir, &err), KF_OK);
    assert_string_equal(dir, f->compat);
}

/* KF_CUDA_COMPAT names the only directory considered: the user's choice
 * wins over the toolkit's, and a wrong one is refused, not skipped. */
static void test_env_override(void **state)
{
    fixture *f = *state;
    make_lib(f);
    char dir[PATH_MAX];
    kf_err err = {0};
    setenv("KF_CUDA_COMPAT", "/nonexistent/compat", 1);
    assert_int_equal(kf_compat_check(f->dir, "13.0", "12.4", NULL, dir, sizeof dir, &err),
                     KF_EUNAVAIL);
    assert_non_null(strstr(err.msg, "/nonexistent/compat"));
    setenv("KF_CUDA_COMPAT", f->compat, 1);
    assert_int_equal(kf_compat_check("/nonexistent", "13.0", "12.4", NULL, dir, sizeof dir, &err),
                     KF_OK);
    assert_string_equal(dir, f->compat);
}

/* Libraries from the node's own driver branch (or an older one) cannot
 * help: the driver refuses them, so kfleet does too, up front, naming
 * both driver versions (as on the H100: compat 580.95.05, driver 580.159.04). */
static void test_branch(void **state)
{
    fixture *f = *state;
    char real[PATH_MAX + 32];
    assert_int_equal(mkdir(f->compat, 0700), 0);
    snprintf(real, sizeof real, "%s/libcuda.so.580.95.05", f->compat);
    FILE *fp = fopen(real, "w");
    assert_non_null(fp);
    fclose(fp);
    assert_int_equal(symlink("libcuda.so.580.95.05", f->lib), 0);
    char v[64], dir[PATH_MAX];
    kf_compat_lib_version(f->compat, v, sizeof v);
    assert_string_equal(v, "580.95.05");
    kf_err err = {0};
    assert_int_equal(kf_compat_check(f->dir, "13.0", "12.8", "580.159.04", dir, sizeof dir, &err),
                     KF_EUNAVAIL);
    assert_string_equal(dir, "");
    assert_non_null(strstr(err.msg, "(driver 580.95.05) are not from a newer branch than the "
                                    "node's driver 580.159.04"));
    assert_non_null(strstr(err.msg, "cuda-compat-13-0"));
    /* A 570 driver: the 580 libraries are newer, and used. */
    assert_int_equal(kf_compat_check(f->dir, "13.0", "12.8", "570.124.06", dir, sizeof dir, &err),
                     KF_OK);
    assert_string_equal(dir, f->compat);
    unlink(real);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_versions_and_package),
        cmocka_unit_test_setup_teardown(test_no_gap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gap_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gap_bridged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_env_override, setup, teardown),
        cmocka_unit_test_setup_teardown(test_branch, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
