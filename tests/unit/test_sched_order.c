/* sched_order: the dispatcher offers the longest expected task first
 * (coordinator/daemon/sched_order.c), on the coordinator with no sockets
 * that test_sched drives (sched_fixture.h) and a real store: the expected
 * time from an earlier sweep's durations, from a passed validation for its
 * profile, or from the parameters within a kernel; gating still holds,
 * ties keep submission order, and after a restart the order is planned
 * again from the store to the same order. One agent with one CPU slot, so
 * every dispatch is one choice that the test can see. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cli/client.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"
#include "core/sweep.h"
#include "daemon/coord_int.h"
#include "daemon/sched_int.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_fixture.h"

static const char *const VP = "name: vp\n"
                              "kernels:\n"
                              "  - name: triad\n"
                              "    params: {n: [1K, 4K, 2K]}\n"
                              "tasks: [validate, profile]\n";

static const char *const V3 = "name: v3\n"
                              "kernels:\n"
                              "  - name: triad\n"
                              "    params: {n: [1K, 2K, 4K]}\n"
                              "tasks: [validate]\n";

/* An agent's result that says how long the attempt ran. */
static void result_s(kf_coord *c, const char *id, uint64_t task, uint32_t attempt, double s)
{
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    Kfleet__Result r = KFLEET__RESULT__INIT;
    r.task_id = task;
    r.attempt = attempt;
    r.state = KFLEET__TASK_STATE__SUCCEEDED;
    r.error = "";
    r.elapsed_s = s;
    r.finished_ns = kf_now_ns();
    env.body_case = KFLEET__ENVELOPE__BODY_RESULT;
    env.result = &r;
    frame(c, id, &env);
}

/* The one assignment queued since the last call: its kind and n. */
static sent one(kf_coord *c, int kind, int64_t n)
{
    sent s[4];
    assert_int_equal(drain(c, s, 4), 1);
    assert_int_equal(s[0].kind, kind);
    ktask *t = sched_task(c, s[0].task, NULL);
    assert_non_null(t);
    if (n) {
        assert_int_equal(t->rec->n_params, 1);
        assert_int_equal(t->rec->params[0]->value, n);
    }
    return s[0];
}

/* The one assignment queued is of this kind and n (0: any), and it ends
 * after `seconds`; returns it. */
static sent step(kf_coord *c, int kind, int64_t n, double seconds)
{
    sent s = one(c, kind, n);
    result_s(c, s.agent, s.task, s.attempt, seconds);
    return s;
}

/* The build of the sweep's kernel, done. */
static void build(kf_coord *c)
{
    step(c, KFLEET__TASK_KIND__BUILD, 0, 0.5);
}

/* No history: the biggest configuration's validation first (its chain,
 * validate + profile, is expected longest); a profile never before its
 * validation; a passed validation sets its profile's expectation (1.2 x),
 * which then goes before or after the other validations by that. */
static void test_longest_first_and_gating(void **state)
{
    (void)state;
    kf_coord *c = coord();
    reg(c, "a1", 1, 0);
    submit(c, VP);
    build(c);
    /* 4K first; it runs 1 ms: its profile (1.2 ms expected) then waits
     * behind the validation of 2K (2 x 2K/geomean = 2 s expected). */
    step(c, KFLEET__TASK_KIND__VALIDATE, 4096, 0.001);
    /* 2K runs 100 s: its profile (120 s) before the last validation. */
    step(c, KFLEET__TASK_KIND__VALIDATE, 2048, 100);
    step(c, KFLEET__TASK_KIND__PROFILE, 2048, 1);
    /* 1K's profile (1.2 x 10 s) goes before 4K's (1.2 ms). */
    step(c, KFLEET__TASK_KIND__VALIDATE, 1024, 10);
    step(c, KFLEET__TASK_KIND__PROFILE, 1024, 1);
    step(c, KFLEET__TASK_KIND__PROFILE, 4096, 1);
    assert_int_equal(c->nsweeps, 0);
    done(&c);
}

/* Equal expectations keep submission order: two kernels alike, each
 * kernel's single configuration its middle one. */
static void test_ties_keep_submission_order(void **state)
{
    (void)state;
    kf_coord *c = coord();
    reg(c, "a1", 1, 0);
    uint32_t id = submit(c, "name: ties\n"
                            "kernels:\n"
                            "  - name: triad\n"
                            "    params: {n: [1K]}\n"
                            "  - name: matmul\n"
                            "    params: {n: [64]}\n"
                            "tasks: [validate]\n");
    ksweep *sw = sched_sweep(c, id);
    assert_non_null(sw);
    assert_true(sched_order_expected(sw, 0) == sched_order_expected(sw, 1));
    build(c);
    sent s = one(c, KFLEET__TASK_KIND__VALIDATE, 1024);
    assert_int_equal((uint32_t)s.task, 0);
    result_s(c, "a1", s.task, s.attempt, 1);
    build(c);
    s = one(c, KFLEET__TASK_KIND__VALIDATE, 64);
    assert_int_equal((uint32_t)s.task, 1);
    done(&c);
}

/* Runs sweep V3 to its end on a1, each validation taking the seconds its
 * n says (1K: 5 s, 2K: 0.1 s, 4K: 0.2 s), whatever order it comes in. */
static void run_v3(kf_coord *c)
{
    submit(c, V3);
    sent s[4];
    for (int k = 0; k < 8 && c->nsweeps; k++) {
        size_t n = drain(c, s, 4);
        assert_int_equal(n, 1);
        const ktask *t = sched_task(c, s[0].task, NULL);
        int64_t v = t->rec->n_params ? t->rec->params[0]->value : 0;
        result_s(c, "a1", s[0].task, s[0].attempt, v == 1024 ? 5 : v == 2048 ? 0.1 : 0.2);
    }
    assert_int_equal(c->nsweeps, 0);
}

/* An earlier sweep's durations of the same kernel and configurations set
 * the order, against what the parameters alone say (4K, 2K, 1K); after a
 * restart before any dispatch the order is planned again, the same. */
static void test_priors_and_restart(void **state)
{
    (void)state;
    kf_coord *c = coord();
    reg(c, "a1", 1, 0);
    run_v3(c);
    /* Submitted with no agent: nothing dispatched before the restart. */
    c->agents[0]->lost = 1;
    uint32_t id = submit(c, V3);
    ksweep *sw = sched_sweep(c, id);
    assert_true(sched_order_expected(sw, 0) == 5.0);
    assert_true(sched_order_expected(sw, 1) == 0.1);
    sent s[4];
    assert_int_equal(drain(c, s, 4), 0);
    c = reopen(c);
    sw = sched_sweep(c, id);
    assert_non_null(sw);
    assert_true(sched_order_expected(sw, 0) == 5.0);
    assert_true(sched_order_expected(sw, 2) == 0.2);
    reg(c, "a1", 1, 0); /* its build is in the store: straight to work */
    step(c, KFLEET__TASK_KIND__VALIDATE, 1024, 5);
    step(c, KFLEET__TASK_KIND__VALIDATE, 4096, 0.2);
    step(c, KFLEET__TASK_KIND__VALIDATE, 2048, 0.1);
    assert_int_equal(c->nsweeps, 0);
    done(&c);
}

/* Answers each assignment queued, one at a time, until none comes or max
 * are answered: a task of sweep S with n = 1K, 2K, 4K lasts d[S][0..2]
 * seconds (a build 0.5 s). */
static void run_for(kf_coord *c, const double d[][3], int max)
{
    sent s[4];
    for (int k = 0; k < max; k++) {
        size_t n = drain(c, s, 4);
        if (!n)
            return;
        assert_int_equal(n, 1);
        const ktask *t = sched_task(c, s[0].task, NULL);
        int64_t v = t->rec->n_params ? t->rec->params[0]->value : 0;
        const double *ds = d[kf_task_sweep(s[0].task)];
        result_s(c, "a1", s[0].task, s[0].attempt,
                 v == 1024   ? ds[0]
                 : v == 2048 ? ds[1]
                 : v == 4096 ? ds[2]
                             : 0.5);
    }
}

/* The newest earlier sweep's duration wins, configuration by
 * configuration, whether the coordinator read it from the store or kept
 * it from an earlier submit (sched_priors.c): sweep 2, still open when
 * sweep 3 is submitted, gives sweep 3 the one duration it has (1K) and
 * sweep 1 the rest; once sweep 2 has finished, sweep 4 gets all of its
 * (2K, 4K; 1K from sweep 3), not what it held when it was first read. */
static void test_priors_newest_open_then_finished(void **state)
{
    (void)state;
    static const double d[5][3] = {
        {0, 0, 0}, {5, 0.1, 0.2}, {0.3, 7, 0.05}, {0.9, 0, 0}, {0, 0, 0}};
    kf_coord *c = coord();
    reg(c, "a1", 1, 0);
    run_v3(c); /* sweep 1 */
    uint32_t id2 = submit(c, V3);
    ksweep *sw = sched_sweep(c, id2);
    assert_true(sched_order_expected(sw, 0) == 5.0); /* sweep 1's */
    run_for(c, d, 1);                                /* 1K, its longest */
    uint32_t id3 = submit_yaml(c, "name: v1\n"
                                  "kernels:\n"
                                  "  - name: triad\n"
                                  "    params: {n: [1K, 2K, 4K]}\n"
                                  "tasks: [validate]\n");
    sw = sched_sweep(c, id3);
    assert_true(sched_order_expected(sw, 0) == 0.3); /* sweep 2's, still open */
    assert_true(sched_order_expected(sw, 1) == 0.1); /* sweep 1's */
    assert_true(sched_order_expected(sw, 2) == 0.2);
    /* Sweep 3 runs only 1K: the agent fails its others. */
    run_for(c, d, 2); /* sweep 2's 2K and 4K */
    assert_int_equal(c->nsweeps, 1);
    sent s[4];
    for (int k = 0; k < 3 && c->nsweeps; k++) {
        assert_int_equal(drain(c, s, 4), 1);
        const ktask *t = sched_task(c, s[0].task, NULL);
        if (t->rec->params[0]->value == 1024)
            result_s(c, "a1", s[0].task, s[0].attempt, d[3][0]);
        else
            result(c, "a1", s[0].task, s[0].attempt, KFLEET__TASK_STATE__FAILED);
    }
    assert_int_equal(c->nsweeps, 0);
    uint32_t id4 = submit(c, V3);
    sw = sched_sweep(c, id4);
    assert_true(sched_order_expected(sw, 0) == 0.9);  /* sweep 3's */
    assert_true(sched_order_expected(sw, 1) == 7.0);  /* sweep 2's, finished */
    assert_true(sched_order_expected(sw, 2) == 0.05); /* sweep 2's */
    /* After a restart (nothing kept), the same. */
    c->agents[0]->lost = 1;
    c = reopen(c);
    sw = sched_sweep(c, id4);
    assert_true(sched_order_expected(sw, 0) == 0.9);
    assert_true(sched_order_expected(sw, 1) == 7.0);
    assert_true(sched_order_expected(sw, 2) == 0.05);
    done(&c);
}

/* A profile's expectation from its passed validation (1.2 x 50 s) puts it
 * before the next validation (2K: 1 + 1 s); after a restart it is read
 * back from the stored result, the same. */
static void test_restart_keeps_validation_estimate(void **state)
{
    (void)state;
    kf_coord *c = coord();
    reg(c, "a1", 1, 0);
    uint32_t id = submit(c, VP);
    build(c);
    sent v = step(c, KFLEET__TASK_KIND__VALIDATE, 4096, 50);
    sent p = one(c, KFLEET__TASK_KIND__PROFILE, 4096);
    uint32_t prof = (uint32_t)p.task;
    ksweep *sw = sched_sweep(c, id);
    assert_int_equal(sw->tasks[prof].gate, (int32_t)(uint32_t)v.task);
    assert_true(sched_order_expected(sw, prof) == 60.0);
    double before[6];
    for (uint32_t i = 0; i < 6; i++)
        before[i] = sched_order_expected(sw, i);
    c = reopen(c);
    sw = sched_sweep(c, id);
    assert_non_null(sw);
    assert_true(sched_order_expected(sw, prof) == 60.0);
    /* The others too, though the sweep now holds its build task. */
    assert_true(sw->ntasks > 6);
    for (uint32_t i = 0; i < 6; i++)
        assert_true(sched_order_expected(sw, i) == before[i]);
    done(&c);
}

/* A requeued task (its agent lost) comes back in its place in the order,
 * before the shorter ones still pending. */
static void test_requeue_keeps_priority(void **state)
{
    (void)state;
    kf_coord *c = coord();
    reg(c, "a1", 1, 0);
    submit(c, V3);
    build(c);
    sent s = one(c, KFLEET__TASK_KIND__VALIDATE, 4096);
    assert_int_equal(s.attempt, 1);
    c->agents[0]->last_seen_mono = kf_mono_ns() - 60000000000ull; /* silent: lost */
    sched_check_agents(c);
    c->dispatch_needed = 1;
    turn(c);
    sent x[4];
    drain(c, x, 4); /* the cancel */
    reg(c, "a1", 1, 0);
    s = one(c, KFLEET__TASK_KIND__VALIDATE, 4096);
    assert_int_equal(s.attempt, 2);
    done(&c);
}

/* A GPU agent whose GPU is busy still takes CPU work in the sweep's order:
 * a host kernel's build and validation, then the build of the next CUDA
 * kernel ahead of its GPU; with nothing of that left, nothing (the walk
 * is skipped); the GPU then takes the next in the order. */
static void test_gpu_busy_cpu_work(void **state)
{
    (void)state;
    kf_coord *c = coord();
    reg(c, "g1", 1, 1);
    submit(c, "name: mixed\nkernels:\n"
              "  - path: " KF_SOURCE_DIR "/kernels/cuda/copy.cu\n"
              "    params: {bytes: [1M, 4M]}\n"
              "  - name: triad\n    params: {n: [1K]}\n"
              "  - path: " KF_SOURCE_DIR "/kernels/cuda/voxelize.cu\n"
              "    params: {points: [1M], grid: [128]}\n"
              "tasks: [validate]\n");
    build(c); /* copy's, for copy 4M (expected 2 s) */
    sent s[4];
    assert_int_equal(drain(c, s, 4), 2);
    sent gpu = s[0].kind == KFLEET__TASK_KIND__VALIDATE ? s[0] : s[1];
    sent tb = s[0].kind == KFLEET__TASK_KIND__VALIDATE ? s[1] : s[0];
    assert_int_equal(sched_task(c, gpu.task, NULL)->rec->params[0]->value, 4 << 20);
    assert_int_equal(tb.kind, KFLEET__TASK_KIND__BUILD); /* triad's, on the CPU */
    result_s(c, "g1", tb.task, tb.attempt, 0.5);
    step(c, KFLEET__TASK_KIND__VALIDATE, 1024, 0.5);
    step(c, KFLEET__TASK_KIND__BUILD, 0, 0.5); /* voxelize's, ahead of the GPU */
    assert_int_equal(drain(c, s, 4), 0);
    c->dispatch_needed = 1;
    turn(c);
    assert_int_equal(drain(c, s, 4), 0);
    result_s(c, "g1", gpu.task, gpu.attempt, 1);
    /* No chain is long (3 x the median, 1 s): copy 1M (0.5 s) before
     * voxelize (1 s), since copy is the kernel with the most expected time
     * (2.5 s) and the GPU stays on it (its runner kept); then voxelize. */
    sent v = one(c, KFLEET__TASK_KIND__VALIDATE, 1 << 20);
    assert_int_equal(sched_task(c, v.task, NULL)->rec->kernel_index, 0);
    result_s(c, "g1", v.task, v.attempt, 0.5);
    v = one(c, KFLEET__TASK_KIND__VALIDATE, 0);
    assert_int_equal(sched_task(c, v.task, NULL)->rec->kernel_index, 2);
    done(&c);
}

/* Long chains (3 x the median or more) first, longest first, whatever
 * their kernel; the rest kernel by kernel, the kernel with the most
 * expected time first, so that a GPU switches kernels (a new runner and
 * CUDA context each time) as seldom as the order allows. triad's 64M is
 * 22.6 x its geometric mean (expected 22.6 s; matmul's about 1 s each):
 * long; then matmul's six (about 6 s in all) before triad's other three
 * (2.5 s), each kernel's biggest first. */
static void test_long_first_then_by_kernel(void **state)
{
    (void)state;
    kf_coord *c = coord();
    reg(c, "a1", 1, 0);
    submit(c, "name: groups\n"
              "kernels:\n"
              "  - name: triad\n"
              "    params: {n: [512K, 1M, 2M, 64M]}\n"
              "  - name: matmul\n"
              "    params: {n: [60, 61, 62, 63, 64, 65]}\n"
              "tasks: [validate]\n");
    build(c); /* triad's, for its long 64M */
    step(c, KFLEET__TASK_KIND__VALIDATE, 64 << 20, 0.1);
    build(c); /* matmul's: the heavier kernel of the rest */
    for (int i = 0; i < 6; i++) {
        sent v = step(c, KFLEET__TASK_KIND__VALIDATE, 65 - i, 0.1);
        assert_int_equal(sched_task(c, v.task, NULL)->rec->kernel_index, 1);
    }
    step(c, KFLEET__TASK_KIND__VALIDATE, 2 << 20, 0.1);
    step(c, KFLEET__TASK_KIND__VALIDATE, 1 << 20, 0.1);
    step(c, KFLEET__TASK_KIND__VALIDATE, 512 << 10, 0.1);
    assert_int_equal(c->nsweeps, 0);
    done(&c);
}

int main(void)
{
    kf_log_setup("test", KF_LOG_OFF);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_longest_first_and_gating),
        cmocka_unit_test(test_ties_keep_submission_order),
        cmocka_unit_test(test_priors_and_restart),
        cmocka_unit_test(test_priors_newest_open_then_finished),
        cmocka_unit_test(test_restart_keeps_validation_estimate),
        cmocka_unit_test(test_requeue_keeps_priority),
        cmocka_unit_test(test_gpu_busy_cpu_work),
        cmocka_unit_test(test_long_first_then_by_kernel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
