/* Tests for coordinator/report/verify.c against a real LMDB store: a clean sweep
 * passes; a task without its terminal record, a profile missing a sample,
 * and a terminal result stored again as a late record are each a violation;
 * a genuine late result of a superseded attempt is not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "report/verify.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char dir[64];

static int rm_cb(const char *p, const struct stat *s, int f, struct FTW *w)
{
    (void)s;
    (void)f;
    (void)w;
    return remove(p);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/kf-test-verify.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

/* Sweep 1: task 0 a validate, task 1 a profile with 3 samples; both
 * succeeded on attempt 2 (attempt 1 was superseded). */
static void put_sweep(kf_txn *t)
{
    Kfleet__Sweep sw = KFLEET__SWEEP__INIT;
    sw.sweep_id = 1;
    sw.name = "v";
    assert_int_equal(kf_store_put_sweep(t, &sw), 0);
    for (uint32_t i = 0; i < 2; i++) {
        Kfleet__Task task = KFLEET__TASK__INIT;
        task.task_id = kf_task_id(1, i);
        task.sweep_id = 1;
        task.kind = i ? KFLEET__TASK_KIND__PROFILE : KFLEET__TASK_KIND__VALIDATE;
        task.state = KFLEET__TASK_STATE__SUCCEEDED;
        task.attempts = 2;
        assert_int_equal(kf_store_put_task(t, &task), 0);
        Kfleet__Result r = KFLEET__RESULT__INIT;
        r.task_id = task.task_id;
        r.attempt = 2;
        r.state = KFLEET__TASK_STATE__SUCCEEDED;
        r.agent_id = "a";
        r.finished_ns = 1000 + i;
        r.sample_count = i ? 3 : 0;
        int dup = 0;
        assert_int_equal(kf_store_put_result(t, &r, &dup), 0);
    }
    for (uint32_t s = 0; s < 3; s++) {
        Kfleet__Sample sm = KFLEET__SAMPLE__INIT;
        sm.seq = s;
        int dup = 0;
        assert_int_equal(kf_store_put_sample(t, kf_task_id(1, 1), 2, &sm, &dup), 0);
    }
}

static uint32_t violations(kf_txn *t)
{
    kf_verify_summary sum;
    kf_buf problems = KF_BUF_INIT;
    assert_int_equal(kf_verify_sweep(t, 1, &sum, &problems), 0);
    kf_buf_release(&problems);
    return sum.violations;
}

static void test_late_records(void **state)
{
    (void)state;
    kf_err err;
    kf_store *s = NULL;
    kf_txn *t = NULL;
    assert_int_equal(kf_store_open(dir, 0, &s, &err), 0);
    assert_int_equal(kf_store_begin(s, 0, &t, &err), 0);
    put_sweep(t);
    assert_int_equal(violations(t), 0);

    /* A superseded attempt's late result: allowed. */
    Kfleet__Result late = KFLEET__RESULT__INIT;
    late.task_id = kf_task_id(1, 0);
    late.attempt = 1;
    late.state = KFLEET__TASK_STATE__SUCCEEDED;
    late.agent_id = "b";
    late.finished_ns = 900;
    late.superseded = 1;
    int dup = 0;
    assert_int_equal(kf_store_put_late(t, &late, &dup), 0);
    assert_int_equal(violations(t), 0);

    /* The terminal result again, as a late record: a duplicate. */
    late.attempt = 2;
    late.agent_id = "a";
    late.finished_ns = 1000;
    assert_int_equal(kf_store_put_late(t, &late, &dup), 0);
    assert_int_equal(violations(t), 1);
    kf_store_abort(&t);
    kf_store_close(&s);
}

static void test_missing(void **state)
{
    (void)state;
    kf_err err;
    kf_store *s = NULL;
    kf_txn *t = NULL;
    assert_int_equal(kf_store_open(dir, 0, &s, &err), 0);
    assert_int_equal(kf_store_begin(s, 0, &t, &err), 0);
    put_sweep(t);
    /* A fourth sample the agent never announced: extra. */
    Kfleet__Sample sm = KFLEET__SAMPLE__INIT;
    sm.seq = 3;
    int dup = 0;
    assert_int_equal(kf_store_put_sample(t, kf_task_id(1, 1), 2, &sm, &dup), 0);
    assert_int_equal(violations(t), 1);
    /* A task that ended without a terminal record. */
    Kfleet__Task task = KFLEET__TASK__INIT;
    task.task_id = kf_task_id(1, 2);
    task.sweep_id = 1;
    task.state = KFLEET__TASK_STATE__FAILED;
    assert_int_equal(kf_store_put_task(t, &task), 0);
    assert_int_equal(violations(t), 2);
    kf_store_abort(&t);
    kf_store_close(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_late_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
