/* Tests for agent/runner/doctor.c on a machine without a GPU: the host ceiling is
 * measured through the real `kfleet-agent --doctor` child, a GPU doctor on
 * a node without a driver says why it measured nothing on the device (and
 * still measures the host), and a binary that
 * is not a doctor is an error rather than a zero ceiling. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "runner/doctor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define AGENT KF_BINARY_DIR "/kfleet-agent"

static void test_host(void **state)
{
    (void)state;
    kf_doctor d;
    kf_err err;
    assert_int_equal(kf_doctor_run(AGENT, 0, NULL, 60, &d, &err), KF_OK);
    assert_true(d.copy_gbps > 0.1); /* any machine copies faster than 100 MB/s */
    assert_true(d.bf16_tflops == 0);
    /* The host ceiling a host kernel is judged against: on a CPU node the
     * same measurement. */
    assert_true(d.host_copy_gbps == d.copy_gbps);
    /* The host's FLOP ceiling (issue 43), parsed from the child's line: any
     * CPU of the last twenty years does a GFLOP/s per core with 4-wide
     * vectors, and none does 100 TFLOP/s; no GPU rate on the host. */
    assert_true(d.host_gflops > 1 && d.host_gflops < 1e5);
    assert_true(d.f32_tflops == 0 && d.tf32_tflops == 0 && d.f64_tflops == 0);
    assert_string_equal(d.error, "");
}

static void test_gpu_without_driver(void **state)
{
    (void)state;
    if (access("/dev/nvidiactl", F_OK) == 0)
        skip(); /* a GPU machine: the error path does not apply */
    kf_doctor d;
    kf_err err;
    assert_int_equal(kf_doctor_run(AGENT, 1, "0", 60, &d, &err), KF_OK);
    assert_true(d.copy_gbps == 0);
    assert_non_null(strstr(d.error, "libcuda.so.1"));
    /* The host is measured on a GPU node too, driver or not (issue 29). */
    assert_true(d.host_copy_gbps > 0.1);
    assert_true(d.host_gflops > 1);
    /* Asked for the harness's compiled modules (runner/cubins.h) without
     * a driver: the line still comes, and no file is written for runners
     * to trust (they compile their PTX). */
    char dir[] = "/tmp/kf-test-doctor-XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/harness-cubins", dir);
    kf_doctor_child c;
    assert_int_equal(kf_doctor_start_cubins(AGENT, 1, "0", path, &c, &err), KF_OK);
    assert_int_equal(kf_doctor_finish(&c, 60, &d, &err), KF_OK);
    assert_non_null(strstr(d.error, "libcuda.so.1"));
    assert_int_not_equal(access(path, F_OK), 0);
    rmdir(dir);
}

static void test_not_a_doctor(void **state)
{
    (void)state;
    kf_doctor d;
    kf_err err;
    assert_int_equal(kf_doctor_run("/bin/true", 0, NULL, 10, &d, &err), KF_EIO);
    assert_non_null(strstr(err.msg, "without a measurement"));
    assert_string_equal(d.error, err.msg);
    assert_int_equal(kf_doctor_run("/nonexistent/kfleet-agent", 0, NULL, 10, &d, &err), KF_EIO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host),
        cmocka_unit_test(test_gpu_without_driver),
        cmocka_unit_test(test_not_a_doctor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
