/* test_cupti — the CUPTI timer's reading of activity records (cupti.c) as
 * far as no GPU is needed: records laid out as CUPTI lays them, at the
 * offsets cupti.h names, and the span a sample gets from them. The records
 * of a real run are read on the GPU machine (bench/gpu/run.sh targets3:
 * the profile's `timer` and `event_median_s`). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "runner/cupti.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OURS "_kf0123456789abcdef"

/* One record of kind, [start, end] ns, and for kernels a name. */
static void rec(kf_cupti_acc *acc, uint32_t kind, uint64_t start, uint64_t end, const char *name)
{
    uint8_t r[216] = {0};
    memcpy(r, &kind, sizeof kind);
    memcpy(r + KF_CUPTI_REC_START, &start, sizeof start);
    memcpy(r + KF_CUPTI_REC_END, &end, sizeof end);
    memcpy(r + KF_CUPTI_REC_KERNEL_NAME, &name, sizeof name);
    kf_cupti_acc_take(acc, r, OURS);
}

/* A sample as the runner lays it out: the last sample's spot check (a
 * copy), the flush, the blocker, a stamp, the kernel's memset and two
 * kernels (one on another stream, ending last), the closing stamp. Its
 * span is the kernel's work only: first start to last end. */
static void test_span_of_a_sample(void **state)
{
    (void)state;
    kf_cupti_acc *acc = calloc(1, sizeof *acc);
    rec(acc, KF_CUPTI_KIND_MEMCPY, 100, 180, NULL);
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 200, 400, "kf_flush" OURS);
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 410, 900, "kf_block" OURS);
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 905, 910, "kf_stamp" OURS);
    rec(acc, KF_CUPTI_KIND_MEMSET, 1000, 1100, NULL);
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 1102, 5000, "_Z9tr_kernelILi1EEvPKf");
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 2000, 6000, "side_stream_kernel");
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 5010, 5020, "kf_stamp" OURS);
    rec(acc, 42, 7000, 9000, NULL); /* another kind: not the sample's work */
    assert_int_equal(kf_cupti_acc_span(acc), 6000 - 1000);
    kf_cupti_acc_reset(acc);
    assert_int_equal(kf_cupti_acc_span(acc), 0);
    free(acc);
}

/* A kernel cannot name itself out of its time: only the runner's random
 * suffix marks the runner's kernels, so a "kf_stamp" or "kf_block" of the
 * kernel's (or one with another suffix) is the kernel's work, and is no
 * sample start either. */
static void test_kernel_cannot_hide(void **state)
{
    (void)state;
    kf_cupti_acc *acc = calloc(1, sizeof *acc);
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 410, 900, "kf_block" OURS);
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 1000, 2000, "kf_block");
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 2000, 8000, "kf_stamp_kf00000000deadbeef");
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 8000, 9000, "kf_stamp" OURS);
    assert_int_equal(kf_cupti_acc_span(acc), 8000 - 1000);
    assert_int_equal(acc->blocker_start, 410);
    free(acc);
}

/* Work the kernel puts on a stream of its own starts at once, while the
 * runner's L2 flush still runs and before the blocker: it is the sample's
 * all the same (a kernel cannot hide work there). The guard's poison, before
 * the flush, is not. A hot sample (no flush) begins with its blocker. */
static void test_side_stream_before_the_blocker(void **state)
{
    (void)state;
    kf_cupti_acc *acc = calloc(1, sizeof *acc);
    rec(acc, KF_CUPTI_KIND_MEMSET, 100, 150, NULL); /* the guard's poison */
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 200, 400, "kf_flush" OURS);
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 250, 3000, "hidden_on_its_own_stream");
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 410, 900, "kf_block" OURS);
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 905, 910, "kf_stamp" OURS);
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 920, 1000, "the_timed_kernel");
    assert_int_equal(kf_cupti_acc_span(acc), 3000 - 250);
    kf_cupti_acc_reset(acc);
    assert_int_equal(acc->flush_start, 0);
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 100, 150, "the_last_spot_check");
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 410, 900, "kf_block" OURS);
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 920, 1000, "the_timed_kernel");
    assert_int_equal(kf_cupti_acc_span(acc), 80);
    free(acc);
}

/* The burst protocol's rest (thermal.h) is spent with the blocker spinning,
 * after the flush: a kernel whose own thread computes the next output
 * during the rest, on a stream of its own, and whose timed launch only
 * copies it, is timed from that work's start, rest and all; cold or hot. */
static void test_work_during_the_rest(void **state)
{
    (void)state;
    kf_cupti_acc *acc = calloc(1, sizeof *acc);
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 200, 400, "kf_flush" OURS);
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 410, 2400000, "kf_block" OURS); /* the rest */
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 1000, 2000000, "precompute_while_resting");
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 2400010, 2400100, "copy_the_answer");
    assert_int_equal(kf_cupti_acc_span(acc), 2400100 - 1000);
    kf_cupti_acc_reset(acc);
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 410, 2400000, "kf_block" OURS); /* hot */
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 1000, 2000000, "precompute_while_resting");
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 2400010, 2400100, "copy_the_answer");
    assert_int_equal(kf_cupti_acc_span(acc), 2400100 - 1000);
    free(acc);
}

/* What cannot be told gives 0 (the sample keeps its events' time): no
 * blocker seen, no work after it, more records than kept. */
static void test_untold_is_zero(void **state)
{
    (void)state;
    kf_cupti_acc *acc = calloc(1, sizeof *acc);
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 1000, 2000, "work");
    assert_int_equal(kf_cupti_acc_span(acc), 0);
    kf_cupti_acc_reset(acc);
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 500, 600, "work"); /* before the sample */
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 700, 900, "kf_block" OURS);
    assert_int_equal(kf_cupti_acc_span(acc), 0);
    kf_cupti_acc_reset(acc);
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 0, 10, "kf_block" OURS);
    for (uint64_t i = 0; i <= KF_CUPTI_MAX_RECORDS; i++)
        rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 100 + i, 101 + i, "many");
    assert_true(acc->overflow);
    assert_int_equal(kf_cupti_acc_span(acc), 0);
    free(acc);
}

/* Opening: where libcupti loads (this machine's CUDA toolkit, if any) it
 * opens once per process; where it does not, it says so. Never a crash
 * without a GPU. */
static void test_open(void **state)
{
    (void)state;
    kf_cupti *cp = NULL, *second = NULL;
    kf_err err = {0};
    int rc = kf_cupti_open(&cp, OURS, &err);
    if (rc != KF_OK) {
        assert_int_equal(rc, KF_EUNAVAIL);
        assert_true(strstr(err.msg, "libcupti") != NULL);
        assert_null(cp);
        return;
    }
    assert_int_equal(kf_cupti_open(&second, OURS, &err), KF_EUNAVAIL);
    assert_null(second);
    assert_int_equal(kf_cupti_sample_ns(cp), 0); /* not recording */
    kf_cupti_close(&cp);
    assert_null(cp);
    assert_int_equal(kf_cupti_open(&cp, OURS, &err), KF_OK); /* closed: opens again */
    kf_cupti_close(&cp);
}

/* What ran (issue 43 item 4): two samples' launches tallied by name, the
 * runner's own kernels and what ran before a sample (the guard's poison,
 * the last sample's spot checks) left out; copies and memsets named as
 * such; a kernel that names itself like the runner's is counted. */
static void test_launches_by_name(void **state)
{
    (void)state;
    kf_cupti_acc *acc = calloc(1, sizeof *acc);
    for (uint64_t t = 0; t < 2; t++) {
        uint64_t o = t * 100000;
        rec(acc, KF_CUPTI_KIND_MEMSET, o + 100, o + 150, NULL); /* poison: before the sample */
        rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, o + 200, o + 400, "kf_flush" OURS);
        rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, o + 410, o + 900, "kf_block" OURS);
        rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, o + 1000, o + 4000, "sm90_xmma_gemm_f32f32");
        rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, o + 4000, o + 4500, "my_softmax_kernel");
        rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, o + 4500, o + 4700, "my_softmax_kernel");
        rec(acc, KF_CUPTI_KIND_MEMCPY, o + 4700, o + 4800, NULL);
        rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, o + 4800, o + 4900, "kf_block");
        kf_cupti_acc_tally(acc);
        kf_cupti_acc_reset(acc);
    }
    size_t seen = 0;
    for (size_t i = 0; i < acc->nnames; i++) {
        const kf_cupti_launch *l = &acc->names[i];
        if (strcmp(l->name, "sm90_xmma_gemm_f32f32") == 0) {
            assert_int_equal(l->count, 2);
            assert_int_equal(l->ns, 6000);
            seen++;
        } else if (strcmp(l->name, "my_softmax_kernel") == 0) {
            assert_int_equal(l->count, 4);
            assert_int_equal(l->ns, 1400);
            seen++;
        } else if (strcmp(l->name, "(copy)") == 0) {
            assert_int_equal(l->count, 2);
            seen++;
        } else if (strcmp(l->name, "kf_block") == 0) { /* not ours: no suffix */
            assert_int_equal(l->count, 2);
            seen++;
        } else {
            /* the poison memset was taken as a record but is no sample's */
            assert_string_equal(l->name, "(memset)");
            assert_int_equal(l->count, 0);
        }
    }
    assert_int_equal(seen, 4);
    /* Past 32 names the rest are one entry, and the table never overflows. */
    kf_cupti_acc_forget_launches(acc);
    rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 410, 900, "kf_block" OURS);
    for (int k = 0; k < 100; k++) {
        char name[32];
        snprintf(name, sizeof name, "generated_%d", k);
        rec(acc, KF_CUPTI_KIND_CONCURRENT_KERNEL, 1000 + (uint64_t)k * 10, 1005 + (uint64_t)k * 10,
            name);
    }
    kf_cupti_acc_tally(acc);
    assert_true(acc->nnames <= KF_CUPTI_MAX_NAMES + 3);
    uint64_t total = 0, other = 0;
    for (size_t i = 0; i < acc->nnames; i++) {
        total += acc->names[i].count;
        if (strcmp(acc->names[i].name, "(other kernels)") == 0)
            other = acc->names[i].count;
    }
    assert_int_equal(total, 100);
    assert_true(other >= 100 - KF_CUPTI_MAX_NAMES - 2);
    free(acc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_span_of_a_sample),
        cmocka_unit_test(test_kernel_cannot_hide),
        cmocka_unit_test(test_launches_by_name),
        cmocka_unit_test(test_side_stream_before_the_blocker),
        cmocka_unit_test(test_work_during_the_rest),
        cmocka_unit_test(test_untold_is_zero),
        cmocka_unit_test(test_open),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
