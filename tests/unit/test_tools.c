/* Tests for agent/runner/tools.c's reading of ncu's CSV: quoted kernel names with
 * commas, thousands separators, notes and the application's own output
 * between the rows, values that are not numbers, the median per kernel and
 * the per-run total across kernels. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "runner/tools.h"

#include <math.h>
#include <string.h>

static const Kfleet__Metric *find(Kfleet__Metric **m, size_t n, const char *kernel,
                                  const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(m[i]->kernel, kernel) == 0 && strcmp(m[i]->name, name) == 0)
            return m[i];
    return NULL;
}

static void test_parse(void **state)
{
    (void)state;
    const char *csv =
        "==PROF== Connected to process 4242 (/opt/kfleet-agent)\n"
        "some output of the application\n"
        "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\","
        "\"Stream\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
        "\"0\",\"4242\",\"kfleet-agent\",\"h\",\"copy_kernel(int4 *, const int4 *, "
        "unsigned long)\",\"1\",\"7\",\"Command line profiler metrics\","
        "\"gpu__time_duration.sum\",\"ns\",\"1,000\"\n"
        "\"1\",\"4242\",\"kfleet-agent\",\"h\",\"copy_kernel(int4 *, const int4 *, "
        "unsigned long)\",\"1\",\"7\",\"Command line profiler metrics\","
        "\"gpu__time_duration.sum\",\"ns\",\"3,000\"\n"
        "\"2\",\"4242\",\"kfleet-agent\",\"h\",\"copy_kernel(int4 *, const int4 *, "
        "unsigned long)\",\"1\",\"7\",\"Command line profiler metrics\","
        "\"gpu__time_duration.sum\",\"ns\",\"2,000\"\n"
        "\"3\",\"4242\",\"kfleet-agent\",\"h\",\"zero \"\"grid\"\"\",\"1\",\"7\","
        "\"Command line profiler metrics\",\"gpu__time_duration.sum\",\"ns\",\"500\"\n"
        "\"3\",\"4242\",\"kfleet-agent\",\"h\",\"zero \"\"grid\"\"\",\"1\",\"7\","
        "\"Command line profiler metrics\",\"dram__bytes.sum\",\"byte\",\"n/a\"\n"
        "==PROF== Disconnected from process 4242\n";
    Kfleet__Metric **m = NULL;
    size_t n = 0;
    kf_err err;
    assert_int_equal(kf_tools_parse_ncu_csv(csv, 3, &m, &n, &err), KF_OK);
    assert_int_equal(n, 3); /* two kernels, one per-run total; the n/a row is dropped */
    const Kfleet__Metric *c =
        find(m, n, "copy_kernel(int4 *, const int4 *, unsigned long)", "gpu__time_duration.sum");
    assert_non_null(c);
    assert_true(fabs(c->value - 2000) < 1e-9); /* median of 1000, 3000, 2000 */
    assert_int_equal(c->launches, 3);
    assert_string_equal(c->unit, "ns");
    const Kfleet__Metric *z = find(m, n, "zero \"grid\"", "gpu__time_duration.sum");
    assert_non_null(z);
    assert_true(fabs(z->value - 500) < 1e-9);
    const Kfleet__Metric *run = find(m, n, "(per run)", "gpu__time_duration.sum");
    assert_non_null(run);
    assert_true(fabs(run->value - (6000 + 500) / 3.0) < 1e-9);
    assert_int_equal(run->launches, 4);
    kf_tools_free_metrics(m, n);
}

static void test_no_rows(void **state)
{
    (void)state;
    Kfleet__Metric **m = NULL;
    size_t n = 0;
    kf_err err;
    assert_int_equal(
        kf_tools_parse_ncu_csv("==PROF== No kernels were profiled.\n", 5, &m, &n, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "no metric rows"));
    assert_int_equal(kf_tools_parse_ncu_csv(NULL, 5, &m, &n, &err), KF_EINVAL);
    assert_null(m);
}

/* The sanitizer's verdict shows its first error block, verbatim, not the
 * tail of its log (host frames of the runner). */
static void test_first_error_block(void **state)
{
    (void)state;
    static const char log[] =
        "========= COMPUTE-SANITIZER\n"
        "========= Invalid __global__ write of size 4 bytes\n"
        "=========     at oob_kernel(float *, int)+0x70 in fault.cu:42\n"
        "=========     by thread (0,0,0) in block (1023,0,0)\n"
        "=========     Address 0x7f1c2a001000 is out of bounds\n"
        "=========     and is 4 bytes after the nearest allocation at 0x7f1c2a000000 of size 4096\n"
        "=========     Saved host backtrace up to driver entry point at kernel launch time\n"
        "=========     Host Frame: [0x2f4c5] in libcuda.so.1\n"
        "=========     Host Frame: _start [0x1234] in kfleet-agent\n"
        "=========\n"
        "========= Invalid __global__ write of size 4 bytes\n"
        "=========     by thread (1,0,0) in block (1023,0,0)\n"
        "=========\n"
        "========= ERROR SUMMARY: 2 errors\n";
    char out[1200];
    kf_tools_first_error_block(log, out, sizeof out);
    assert_non_null(strstr(out, "Invalid __global__ write of size 4 bytes"));
    assert_non_null(strstr(out, "by thread (0,0,0) in block (1023,0,0)"));
    assert_non_null(strstr(out, "is out of bounds"));
    assert_non_null(strstr(out, "ERROR SUMMARY: 2 errors"));
    assert_null(strstr(out, "Host Frame")); /* not the tail */
    assert_null(strstr(out, "(1,0,0)"));    /* only the first block */
    kf_tools_first_error_block("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n",
                               out, sizeof out);
    assert_string_equal(out, "========= ERROR SUMMARY: 0 errors");
    kf_tools_first_error_block("========= COMPUTE-SANITIZER\n========= RACECHECK SUMMARY: 0 "
                               "hazards displayed (0 errors, 0 warnings)\n",
                               out, sizeof out);
    assert_non_null(strstr(out, "RACECHECK SUMMARY"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_parse), cmocka_unit_test(test_no_rows),
                                       cmocka_unit_test(test_first_error_block)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
