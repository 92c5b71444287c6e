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

/* Stores a reference for every seed of problem `hash`'s pool (3 seeds and
 * the 2 held out for the profile) for the configuration of params. */
static void store_refs(kf_coord *c, const char *hash, Kfleet__Param **params, size_t np)
{
    kf_txn *txn;
    assert_int_equal(coord_txn(c, &txn), KF_OK);
    Kfleet__SeedPool *pool = NULL;
    int renewed = 1;
    assert_int_equal(kf_problem_seed_pool(txn, hash, kf_problem_pool_size(3), 86400.0, kf_now_ns(),
                                          &pool, &renewed),
                     KF_OK);
    assert_int_equal(renewed, 0);
    uint8_t key[KF_STORE_CONFIG_KEY];
    for (size_t i = 0; i < pool->n_seeds; i++) {
        Kfleet__Reference r = KFLEET__REFERENCE__INIT;
        r.problem_hash = (char *)hash;
        r.seed = pool->seeds[i];
        r.params = params;
        r.n_params = np;
        kf_problem_config_key(params, np, key);
        r.config_key.data = key;
        r.config_key.len = sizeof key;
        char digest[65];
        snprintf(digest, sizeof digest, "%064llx", (unsigned long long)pool->seeds[i]);
        r.digest = digest;
        r.count = 2;
        int dup = 1;
        assert_int_equal(kf_problem_store_ref(txn, pool, &r, &dup), KF_OK);
        assert_int_equal(dup, 0);
    }
    kfleet__seed_pool__free_unpacked(pool, NULL);
}

static const char *const RMSNORM = KF_SOURCE_DIR "/examples/problems/rmsnorm-cpu/sweep.yaml";

/* A problem sweep (docs/problems.md): one reference task per
 * configuration, first; each candidate's validate waits for its
 * configuration's reference, and is skipped when it fails; a second sweep
 * of the problem makes no reference task for a configuration whose
 * references are stored. */
static void test_problem_reference_tasks(void **state)
{
    (void)state;
    kf_coord *c = coord();
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
    store_refs(c, sw->rec->kernels[3]->hash, sw->tasks[0].rec->params, sw->tasks[0].rec->n_params);
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

    /* On an agent with numpy: the problem's build, for the reference
     * tasks, and no candidate's build or validate before its reference. */
    reg_numpy(c, "a1", 2);
    c->dispatch_needed = 1;
    turn(c);
    sent s[16];
    size_t n = drain(c, s, 16);
    assert_int_equal(n, 1);
    assert_int_equal(s[0].kind, KFLEET__TASK_KIND__BUILD);
    assert_int_equal(sched_task(c, s[0].task, NULL)->rec->kernel_index, 3);
    result(c, "a1", s[0].task, s[0].attempt, KFLEET__TASK_STATE__SUCCEEDED);
    n = drain(c, s, 16);
    assert_int_equal(n, 2);
    assert_int_equal(s[0].kind, KFLEET__TASK_KIND__REFERENCE);
    assert_int_equal(s[1].kind, KFLEET__TASK_KIND__REFERENCE);
    /* Configuration 0's reference is computed, configuration 1's fails:
     * from then on only configuration 0's candidate tasks (and builds). */
    uint64_t r0 = s[0].task, r1 = s[1].task;
    if (sched_task(c, r0, NULL)->rec->config_index != 0) {
        r0 = s[1].task;
        r1 = s[0].task;
    }
    result(c, "a1", r0, 1, KFLEET__TASK_STATE__SUCCEEDED);
    result(c, "a1", r1, 1, KFLEET__TASK_STATE__FAILED);
    int skipped = 0;
    for (uint32_t i = 2; i < sw->ntasks; i++) {
        ktask *t = &sw->tasks[i];
        if (t->rec->config_index == 1) {
            assert_int_equal(t->rec->state, KFLEET__TASK_STATE__SKIPPED);
            assert_non_null(strstr(t->rec->error,
                                   "reference for this configuration was not computed (FAILED)"));
            skipped++;
        }
    }
    assert_int_equal(skipped, 3 * 2);
    size_t validated = 0;
    for (int round = 0; round < 20; round++) {
        c->dispatch_needed = 1;
        turn(c);
        n = drain(c, s, 16);
        for (size_t i = 0; i < n; i++) {
            ktask *t = sched_task(c, s[i].task, NULL);
            assert_int_not_equal(s[i].kind, KFLEET__TASK_KIND__REFERENCE);
            if (s[i].kind != KFLEET__TASK_KIND__BUILD)
                assert_int_equal(t->rec->config_index, 0);
            validated += s[i].kind == KFLEET__TASK_KIND__VALIDATE;
            result(c, "a1", s[i].task, s[i].attempt, KFLEET__TASK_STATE__SUCCEEDED);
        }
    }
    assert_int_equal(validated, 3);  /* each candidate's, configuration 0 */
    assert_null(sched_sweep(c, id)); /* all ended: the sweep is finished */

    done(&c);
}

/* While a configuration's reference is computed, a free CPU slot builds
 * the candidates' kernels (each once on the agent), and runs no
 * candidate's validate; once the reference is stored, the validates go
 * out without a build before them. */
static void test_candidates_built_while_the_reference_runs(void **state)
{
    (void)state;
    kf_coord *c = coord();
    uint32_t id = submit_path(c, RMSNORM);
    ksweep *sw = sched_sweep(c, id);
    reg_numpy(c, "a1", 3); /* 3 CPU slots: 2 for the references, 1 free */
    c->dispatch_needed = 1;
    turn(c);
    sent s[16];
    size_t n = drain(c, s, 16);
    assert_int_equal(n, 1);
    assert_int_equal(s[0].kind, KFLEET__TASK_KIND__BUILD); /* the problem's */
    result(c, "a1", s[0].task, s[0].attempt, KFLEET__TASK_STATE__SUCCEEDED);
    n = drain(c, s, 16);
    assert_int_equal(n, 3);
    uint64_t refs[2];
    size_t nref = 0, nbuild = 0;
    uint32_t built[3] = {0};
    for (size_t i = 0; i < n; i++) {
        ktask *t = sched_task(c, s[i].task, NULL);
        if (s[i].kind == KFLEET__TASK_KIND__REFERENCE) {
            refs[nref++] = s[i].task;
            continue;
        }
        assert_int_equal(s[i].kind, KFLEET__TASK_KIND__BUILD);
        assert_true(t->rec->kernel_index < 3); /* a candidate's kernel */
        built[t->rec->kernel_index]++;
        nbuild++;
        result(c, "a1", s[i].task, s[i].attempt, KFLEET__TASK_STATE__SUCCEEDED);
    }
    assert_int_equal(nref, 2);
    assert_int_equal(nbuild, 1);
    /* The references still running: the free slot builds the other two
     * candidates, one after the other, and nothing else. */
    for (int round = 0; round < 4; round++) {
        c->dispatch_needed = 1;
        turn(c);
        n = drain(c, s, 16);
        for (size_t i = 0; i < n; i++) {
            ktask *t = sched_task(c, s[i].task, NULL);
            assert_int_equal(s[i].kind, KFLEET__TASK_KIND__BUILD);
            built[t->rec->kernel_index]++;
            result(c, "a1", s[i].task, s[i].attempt, KFLEET__TASK_STATE__SUCCEEDED);
        }
    }
    for (int k = 0; k < 3; k++)
        assert_int_equal(built[k], 1);
    for (uint32_t i = 0; i < sw->ntasks; i++) /* the candidates' validates and profiles */
        if (sw->tasks[i].rec->kind == KFLEET__TASK_KIND__VALIDATE ||
            sw->tasks[i].rec->kind == KFLEET__TASK_KIND__PROFILE)
            assert_int_equal(sw->tasks[i].rec->state, KFLEET__TASK_STATE__PENDING);
    /* Stored: the candidates' validates, no build before them. */
    result(c, "a1", refs[0], 1, KFLEET__TASK_STATE__SUCCEEDED);
    result(c, "a1", refs[1], 1, KFLEET__TASK_STATE__SUCCEEDED);
    c->dispatch_needed = 1;
    turn(c);
    n = drain(c, s, 16);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(s[i].kind, KFLEET__TASK_KIND__VALIDATE);
    sched_cancel_sweep(c, sw, "test");
    turn(c);
    done(&c);
}

/* A reference task is sent the problem's secret seeds (the pool's, all
 * missing at first), after the problem's build; a candidate's validate or
 * profile is sent the problem, the seeds with a stored reference and those
 * references, on an agent that has built the problem as well as the
 * candidate. */
static void test_reference_task_seeds(void **state)
{
    (void)state;
    kf_coord *c = coord();
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
    assert_int_equal(kf_problem_seed_pool(txn, sw->rec->kernels[3]->hash, kf_problem_pool_size(3),
                                          86400.0, kf_now_ns(), &pool, &renewed),
                     KF_OK);
    assert_int_equal(renewed, 0);
    /* The validation's 3 seeds and the 2 held out for the profile. */
    assert_int_equal(pool->n_seeds, 5);
    uint64_t pool_seeds[5];
    memcpy(pool_seeds, pool->seeds, sizeof pool_seeds);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(s[i].kind, KFLEET__TASK_KIND__REFERENCE);
        assert_int_equal(s[i].nseeds, 5);
        for (size_t k = 0; k < 5; k++)
            assert_true(s[i].seeds[k] == pool->seeds[k]);
    }
    kfleet__seed_pool__free_unpacked(pool, NULL);
    /* Both references done (stored here as the agent's Result would
     * have them), and a second agent: the candidates' builds, validations
     * and profiles follow; a candidate's validate or profile carries the
     * 3 seeds and their references, on an agent with the problem built. */
    const char *hash = sw->rec->kernels[3]->hash;
    for (uint32_t k = 0; k < 2; k++)
        store_refs(c, hash, sw->tasks[k].rec->params, sw->tasks[k].rec->n_params);
    result(c, "p1", s[0].task, s[0].attempt, KFLEET__TASK_STATE__SUCCEEDED);
    result(c, "p1", s[1].task, s[1].attempt, KFLEET__TASK_STATE__SUCCEEDED);
    reg_numpy(c, "p2", 2);
    int problem_built[2] = {1, 0}; /* p1 built it for the reference tasks */
    size_t judged = 0, problem_builds_p2 = 0, baseline_made = 0;
    uint32_t submitted = sw->ntasks; /* the sweep as submitted: tasks made later come after */
    for (int round = 0; round < 20; round++) {
        c->dispatch_needed = 1;
        turn(c);
        n = drain(c, s, 16);
        for (size_t i = 0; i < n; i++) {
            int on = strcmp(s[i].agent, "p2") == 0;
            ktask *t = sched_task(c, s[i].task, NULL);
            assert_int_not_equal(s[i].kind, KFLEET__TASK_KIND__REFERENCE);
            if (s[i].kind == KFLEET__TASK_KIND__BUILD) {
                assert_int_equal(s[i].nseeds, 0);
                if (t->rec->kernel_index == 3) {
                    problem_built[on] = 1;
                    problem_builds_p2 += on;
                }
            } else {
                assert_true(problem_built[on]);
                assert_string_equal(s[i].problem_hash, hash);
                /* A validation's seeds are the pool's first 3; a
                 * profile's the 2 held out from it, never one of those. */
                int prof = s[i].kind == KFLEET__TASK_KIND__PROFILE;
                size_t want = prof ? 2 : 3, from = prof ? 3 : 0;
                assert_int_equal(s[i].nseeds, want);
                assert_int_equal(s[i].nrefs, want);
                for (size_t k = 0; k < want; k++)
                    assert_true(s[i].seeds[k] == pool_seeds[from + k]);
                /* The baseline (numpy_naive, kernel 0) on each agent that
                 * runs a candidate's profile of its configuration
                 * (sched_baseline.c): made for that agent, pinned to it. */
                if ((uint32_t)s[i].task >= submitted) {
                    assert_int_equal(t->rec->kernel_index, 0);
                    assert_string_equal(t->rec->pin_agent, s[i].agent);
                    baseline_made++;
                } else {
                    judged++;
                }
            }
            result(c, s[i].agent, s[i].task, s[i].attempt, KFLEET__TASK_STATE__SUCCEEDED);
        }
    }
    assert_int_equal(judged, 3 * 2 * 2); /* 3 candidates x 2 configurations x validate, profile */
    assert_int_equal(baseline_made % 2, 0); /* a validate and a profile each */
    assert_int_equal(problem_builds_p2, 1);
    done(&c);
}

static void unmark_problem(Kfleet__SubmitRequest *r)
{
    r->sweep->kernels[r->sweep->n_kernels - 1]->problem = 0;
}

static void drop_seed_pool(Kfleet__SubmitRequest *r)
{
    r->sweep->seed_pool = 0;
}

static void refuse_second(Kfleet__SubmitRequest *sub)
{
    sub->sweep->kernels[1]->refused = strdup("t.yaml:3:5: x.py:2:1: candidate 'x' declares a "
                                             "reference (reference), refused");
}

/* A refused candidate kept by `refused: fail` (KernelRef.refused): its
 * tasks end failed at submit with the refusal, its profile too (not
 * skipped as "did not pass"), and nothing of it is built or run, while
 * the other candidates' tasks wait for their references as usual. */
static void test_refused_candidate_failed_rows(void **state)
{
    (void)state;
    kf_coord *c = coord();
    uint32_t id = submit_edited(c, RMSNORM, refuse_second);
    assert_int_not_equal(id, 0);
    ksweep *sw = sched_sweep(c, id);
    assert_int_equal(sw->ntasks, 2 + 3 * 2 * 2);
    size_t failed = 0;
    for (uint32_t i = 0; i < sw->ntasks; i++) {
        ktask *t = &sw->tasks[i];
        if (t->rec->kernel_index == 1) {
            assert_int_equal(t->rec->state, KFLEET__TASK_STATE__FAILED);
            assert_non_null(strstr(t->rec->error, "refused at submit: t.yaml:3:5: x.py:2:1: "
                                                  "candidate 'x' declares a reference"));
            failed++;
        } else {
            assert_int_equal(t->rec->state, KFLEET__TASK_STATE__PENDING);
        }
    }
    assert_int_equal(failed, 2 * 2); /* validate and profile of 2 configurations */
    reg_numpy(c, "a1", 4);
    for (int round = 0; round < 20; round++) {
        c->dispatch_needed = 1;
        turn(c);
        sent s[16];
        size_t n = drain(c, s, 16);
        for (size_t i = 0; i < n; i++) {
            assert_int_not_equal(sched_task(c, s[i].task, NULL)->rec->kernel_index, 1);
            result(c, "a1", s[i].task, s[i].attempt, KFLEET__TASK_STATE__SUCCEEDED);
        }
    }
    assert_null(sched_sweep(c, id)); /* every other task ran: the sweep finished */
    done(&c);
}

/* A request shaped otherwise than kf_client_build_submit makes a problem
 * sweep is refused whole: candidates without their problem, or no seed
 * pool. */
static void test_malformed_problem_sweep_refused(void **state)
{
    (void)state;
    kf_coord *c = coord();
    assert_int_equal(submit_edited(c, RMSNORM, unmark_problem), 0);
    assert_int_equal(submit_edited(c, RMSNORM, drop_seed_pool), 0);
    assert_int_not_equal(submit_edited(c, RMSNORM, NULL), 0);
    done(&c);
}

int main(void)
{
    kf_log_setup("test", KF_LOG_OFF);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_problem_reference_tasks),
        cmocka_unit_test(test_candidates_built_while_the_reference_runs),
        cmocka_unit_test(test_reference_task_seeds),
        cmocka_unit_test(test_malformed_problem_sweep_refused),
        cmocka_unit_test(test_refused_candidate_failed_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
