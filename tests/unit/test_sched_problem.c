/* sched, for a problem sweep (docs/problems.md): its reference tasks
 * made at submit before every candidate task, the candidates' tasks held
 * until their configuration's reference is computed and skipped when it
 * fails, stored references reused by a later sweep, and the secret seeds
 * sent with a reference task and with no other. */
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
#include "core/problem.h"

#include "sched_fixture.h"

static const char *const RMSNORM = KF_SOURCE_DIR "/examples/problems/rmsnorm-cpu/sweep.yaml";

/* A problem sweep (docs/problems.md): one reference task per
 * configuration, first; each candidate's validate waits for its
 * configuration's reference, and is skipped when it fails; a second sweep
 * of the problem makes no reference task for a configuration whose
 * references are stored. */
static void test_problem_reference_tasks(void **state)
{
    (void)state;
    uint8_t key_buf[KF_STORE_CONFIG_KEY];
    kf_coord *c = coord();
    c->cfg.accept_problems = 1;
    const char *yaml = RMSNORM;
    uint32_t id = submit_path(c, yaml);
    ksweep *sw = sched_sweep(c, id);
    /* 2 configurations (rows 256, 1024) x 3 candidates x validate, profile,
     * and the 2 reference tasks of the problem (kernel 3) first. */
    assert_int_equal(sw->ntasks, 2 + 3 * 2 * 2);
    assert_int_equal(sw->rec->task_count, sw->ntasks);
    for (uint32_t i = 0; i < 2; i++) {
        assert_int_equal(sw->tasks[i].rec->kind, KFLEET__TASK_KIND__REFERENCE);
        assert_int_equal(sw->tasks[i].rec->kernel_index, 3);
        assert_int_equal(sw->tasks[i].rec->config_index, i);
        assert_int_equal(sw->tasks[i].ref_gate, -1);
    }
    for (uint32_t i = 2; i < sw->ntasks; i++)
        assert_int_equal(sw->tasks[i].ref_gate, (int32_t)sw->tasks[i].rec->config_index);

    /* Configuration 0's references stored for every seed of the pool: a
     * second sweep of the problem makes a reference task for
     * configuration 1 only, and its configuration-0 tasks wait for none
     * (it is then cancelled, to leave the first sweep alone below). */
    kf_txn *txn;
    assert_int_equal(coord_txn(c, &txn), KF_OK);
    Kfleet__SeedPool *pool = NULL;
    int renewed = 1;
    const char *hash = sw->rec->kernels[3]->hash;
    assert_int_equal(kf_problem_seed_pool(txn, hash, 3, 86400.0, kf_now_ns(), &pool, &renewed),
                     KF_OK);
    assert_int_equal(renewed, 0);
    assert_int_equal(pool->n_seeds, 3);
    double vals[2] = {1.0, 2.0};
    for (size_t i = 0; i < pool->n_seeds; i++) {
        Kfleet__Reference r = KFLEET__REFERENCE__INIT;
        r.problem_hash = (char *)hash;
        r.seed = pool->seeds[i];
        r.params = sw->tasks[0].rec->params;
        r.n_params = sw->tasks[0].rec->n_params;
        kf_problem_config_key(r.params, r.n_params, key_buf);
        r.config_key.data = key_buf;
        r.config_key.len = sizeof key_buf;
        r.values.data = (uint8_t *)vals;
        r.values.len = sizeof vals;
        r.count = 2;
        int dup = 1;
        assert_int_equal(kf_problem_store_ref(txn, pool, &r, &dup), KF_OK);
        assert_int_equal(dup, 0);
    }
    kfleet__seed_pool__free_unpacked(pool, NULL);
    turn(c);
    uint32_t id2 = submit_path(c, yaml);
    assert_int_not_equal(id2, id);
    ksweep *sw2 = sched_sweep(c, id2);
    assert_int_equal(sw2->ntasks, 1 + 3 * 2 * 2);
    assert_int_equal(sw2->tasks[0].rec->kind, KFLEET__TASK_KIND__REFERENCE);
    assert_int_equal(sw2->tasks[0].rec->config_index, 1);
    for (uint32_t i = 1; i < sw2->ntasks; i++)
        assert_int_equal(sw2->tasks[i].ref_gate, sw2->tasks[i].rec->config_index == 1 ? 0 : -1);
    sched_cancel_sweep(c, sw2, "test");
    turn(c);

    /* On a CPU agent with no numpy nothing runs: the problem's reference
     * tasks need numpy, and the C candidate's (kernel 2) tasks, its build
     * with them, wait for the references. */
    reg(c, "a1", 2, 0);
    c->dispatch_needed = 1;
    turn(c);
    sent s[16];
    assert_int_equal(drain(c, s, 16), 0);
    /* Configuration 0's reference is computed, configuration 1's fails. */
    sched_finish(c, sw, &sw->tasks[0], KFLEET__TASK_STATE__SUCCEEDED, NULL);
    sched_finish(c, sw, &sw->tasks[1], KFLEET__TASK_STATE__FAILED, "reference: all zeros");
    c->dispatch_needed = 1;
    turn(c);
    size_t n = drain(c, s, 16);
    assert_int_equal(n, 1);
    assert_int_equal(s[0].kind, KFLEET__TASK_KIND__BUILD);
    result(c, "a1", s[0].task, s[0].attempt, KFLEET__TASK_STATE__SUCCEEDED);
    c->dispatch_needed = 1;
    turn(c);
    n = drain(c, s, 16);
    assert_int_equal(n, 1); /* the C candidate's validate of configuration 0 only */
    assert_int_equal(s[0].kind, KFLEET__TASK_KIND__VALIDATE);
    assert_int_equal(sched_task(c, s[0].task, NULL)->rec->config_index, 0);
    int skipped = 0;
    for (uint32_t i = 2; i < sw->ntasks; i++) {
        ktask *t = &sw->tasks[i];
        if (t->rec->config_index == 1) {
            assert_int_equal(t->rec->state, KFLEET__TASK_STATE__SKIPPED);
            assert_non_null(strstr(t->rec->error, "reference for this configuration was not "
                                                  "computed (FAILED): reference: all zeros"));
            skipped++;
        }
    }
    assert_int_equal(skipped, 3 * 2);

    done(&c);
}

/* A reference task is sent the problem's secret seeds (the pool's, all
 * missing at first), after the problem's build; no candidate task is sent
 * any seed. */
static void test_reference_task_seeds(void **state)
{
    (void)state;
    kf_coord *c = coord();
    c->cfg.accept_problems = 1;
    reg_numpy(c, "p1", 2);
    uint32_t id = submit_path(c, RMSNORM);
    ksweep *sw = sched_sweep(c, id);
    sent s[16];
    size_t n = drain(c, s, 16);
    assert_int_equal(n, 1); /* the problem's build, for its reference tasks */
    assert_int_equal(s[0].kind, KFLEET__TASK_KIND__BUILD);
    assert_int_equal(sched_task(c, s[0].task, NULL)->rec->kernel_index, 3);
    assert_int_equal(s[0].nseeds, 0);
    result(c, "p1", s[0].task, s[0].attempt, KFLEET__TASK_STATE__SUCCEEDED);
    c->dispatch_needed = 1;
    turn(c);
    n = drain(c, s, 16);
    assert_int_equal(n, 2); /* both configurations' references, on the 2 slots */
    kf_txn *txn;
    assert_int_equal(coord_txn(c, &txn), KF_OK);
    Kfleet__SeedPool *pool = NULL;
    int renewed = 1;
    assert_int_equal(kf_problem_seed_pool(txn, sw->rec->kernels[3]->hash, 3, 86400.0, kf_now_ns(),
                                          &pool, &renewed),
                     KF_OK);
    assert_int_equal(renewed, 0);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(s[i].kind, KFLEET__TASK_KIND__REFERENCE);
        assert_int_equal(s[i].nseeds, 3);
        for (size_t k = 0; k < 3; k++)
            assert_true(s[i].seeds[k] == pool->seeds[k]);
    }
    kfleet__seed_pool__free_unpacked(pool, NULL);
    /* Configuration 0's reference done: the candidates' builds and
     * validations follow, none with a seed. */
    result(c, "p1", s[0].task, s[0].attempt, KFLEET__TASK_STATE__SUCCEEDED);
    result(c, "p1", s[1].task, s[1].attempt, KFLEET__TASK_STATE__SUCCEEDED);
    size_t seen = 0;
    for (int round = 0; round < 8; round++) {
        c->dispatch_needed = 1;
        turn(c);
        n = drain(c, s, 16);
        for (size_t i = 0; i < n; i++) {
            assert_int_not_equal(s[i].kind, KFLEET__TASK_KIND__REFERENCE);
            assert_int_equal(s[i].nseeds, 0);
            result(c, "p1", s[i].task, s[i].attempt, KFLEET__TASK_STATE__SUCCEEDED);
            seen++;
        }
    }
    assert_true(seen >= 3 + 3 * 2); /* 3 builds, 3 candidates' validations of 2 configurations */
    done(&c);
}

int main(void)
{
    kf_log_setup("test", KF_LOG_OFF);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_problem_reference_tasks),
        cmocka_unit_test(test_reference_task_seeds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
