/* rows_fixture — a store written by hand for the tests of the rows as a
 * consumer reads them (test_report_stream.c, test_report_rank.c; its
 * helpers and teardown also serve test_report_problem.c): sweep 1,
 * baseline "base", kernels base, cand, bad, one configuration n=1024 on
 * agent n1.
 *   base: validated and profiled (2, 3, 4 ms: median 3 ms)
 *   cand: validated; its profile running, or ended (1.5 ms x 3: speedup 2)
 *   bad:  validation failed, profile skipped
 * Include after cmocka.h and report headers; defines dir, store, SWEEP. */
#ifndef KF_TEST_ROWS_FIXTURE_H
#define KF_TEST_ROWS_FIXTURE_H

#include "core/store.h"

#include <ftw.h>
#include <stdlib.h>
#include <string.h>

#define SWEEP 1
static char dir[64];
static kf_store *store;

static inline int rm_cb(const char *p, const struct stat *s, int f, struct FTW *w)
{
    (void)s, (void)f, (void)w;
    return remove(p);
}

/* Task idx of sweep, n=1024, pinned to `pin` ("": none), run on agent. */
static inline void put_task_on(kf_txn *t, uint32_t sweep, uint32_t idx, Kfleet__TaskKind kind,
                               uint32_t kernel, Kfleet__TaskState st, const char *pin,
                               const char *agent)
{
    Kfleet__Param pn = KFLEET__PARAM__INIT;
    Kfleet__Param *params[1] = {&pn};
    pn.name = "n";
    pn.value = 1024;
    Kfleet__Task task = KFLEET__TASK__INIT;
    task.task_id = kf_task_id(sweep, idx);
    task.sweep_id = sweep;
    task.kind = kind;
    task.kernel_index = kernel;
    task.n_params = 1;
    task.params = params;
    task.pin_agent = (char *)pin;
    task.agent_id = (char *)agent;
    task.state = st;
    task.attempts = 1;
    task.error = "";
    assert_int_equal(kf_store_put_task(t, &task), 0);
}

/* Task idx of sweep, n=1024 on agent n1. */
static inline void put_task_of(kf_txn *t, uint32_t sweep, uint32_t idx, Kfleet__TaskKind kind,
                               uint32_t kernel, Kfleet__TaskState st)
{
    put_task_on(t, sweep, idx, kind, kernel, st, "", "n1");
}

static inline void put_task(kf_txn *t, uint32_t idx, Kfleet__TaskKind kind, uint32_t kernel,
                            Kfleet__TaskState st)
{
    put_task_of(t, SWEEP, idx, kind, kernel, st);
}

/* The terminal record of task idx, from agent; a profile's with its
 * samples (ms); error "" unless it failed. */
static inline void put_end_on(kf_txn *t, uint32_t sweep, uint32_t idx, Kfleet__TaskState st,
                              const double *ms, size_t n, const char *agent, const char *error)
{
    Kfleet__ProfileStats ps = KFLEET__PROFILE_STATS__INIT;
    ps.samples = (uint32_t)n;
    ps.converged = 1;
    Kfleet__Result r = KFLEET__RESULT__INIT;
    r.task_id = kf_task_id(sweep, idx);
    r.attempt = 1;
    r.state = st;
    r.agent_id = (char *)agent;
    r.error = (char *)error;
    if (ms) {
        r.profile = &ps;
        r.sample_count = (uint32_t)n;
    }
    int dup = -1;
    assert_int_equal(kf_store_put_result(t, &r, &dup), 0);
    for (size_t i = 0; i < n; i++) {
        Kfleet__Sample s = KFLEET__SAMPLE__INIT;
        s.seq = (uint32_t)i;
        s.seconds = ms[i] / 1000.0;
        assert_int_equal(kf_store_put_sample(t, kf_task_id(sweep, idx), 1, &s, &dup), 0);
    }
}

static inline void put_end_of(kf_txn *t, uint32_t sweep, uint32_t idx, Kfleet__TaskState st,
                              const double *ms, size_t n)
{
    put_end_on(t, sweep, idx, st, ms, n, "n1", "");
}

static inline void put_end(kf_txn *t, uint32_t idx, Kfleet__TaskState st, const double *ms,
                           size_t n)
{
    put_end_of(t, SWEEP, idx, st, ms, n);
}

/* A new store in a fresh directory (dir), and a write transaction on it;
 * NULL when the directory or the store cannot be made. */
static inline kf_txn *rows_fixture_open(void)
{
    strcpy(dir, "/tmp/kf-rows-XXXXXX");
    if (!mkdtemp(dir))
        return NULL;
    kf_err err;
    if (kf_store_open(dir, 0, &store, &err) != KF_OK)
        return NULL;
    kf_txn *t = NULL;
    assert_int_equal(kf_store_begin(store, 0, &t, &err), 0);
    return t;
}

/* The store of the header comment; cand_done: cand's profile has ended
 * (1.5 ms x 3), else it is running. */
static inline int rows_fixture_setup(const char *name, int cand_done)
{
    kf_txn *t = rows_fixture_open();
    if (!t)
        return -1;
    kf_err err;
    Kfleet__KernelRef kb = KFLEET__KERNEL_REF__INIT, kc = KFLEET__KERNEL_REF__INIT,
                      kx = KFLEET__KERNEL_REF__INIT;
    Kfleet__KernelRef *kernels[3] = {&kb, &kc, &kx};
    kb.name = "base";
    kc.name = "cand";
    kx.name = "bad";
    Kfleet__Sweep sw = KFLEET__SWEEP__INIT;
    sw.sweep_id = SWEEP;
    sw.name = (char *)name;
    sw.created_ns = 1700000000000000000ull;
    sw.n_kernels = 3;
    sw.kernels = kernels;
    sw.baseline = "base";
    assert_int_equal(kf_store_put_sweep(t, &sw), 0);
    const double base_ms[] = {2, 3, 4};
    put_task(t, 0, KFLEET__TASK_KIND__VALIDATE, 0, KFLEET__TASK_STATE__SUCCEEDED);
    put_task(t, 1, KFLEET__TASK_KIND__PROFILE, 0, KFLEET__TASK_STATE__SUCCEEDED);
    put_task(t, 2, KFLEET__TASK_KIND__VALIDATE, 1, KFLEET__TASK_STATE__SUCCEEDED);
    put_task(t, 3, KFLEET__TASK_KIND__PROFILE, 1,
             cand_done ? KFLEET__TASK_STATE__SUCCEEDED : KFLEET__TASK_STATE__RUNNING);
    put_task(t, 4, KFLEET__TASK_KIND__VALIDATE, 2, KFLEET__TASK_STATE__FAILED);
    put_task(t, 5, KFLEET__TASK_KIND__PROFILE, 2, KFLEET__TASK_STATE__SKIPPED);
    put_end(t, 0, KFLEET__TASK_STATE__SUCCEEDED, NULL, 0);
    put_end(t, 1, KFLEET__TASK_STATE__SUCCEEDED, base_ms, 3);
    put_end(t, 2, KFLEET__TASK_STATE__SUCCEEDED, NULL, 0);
    const double cand_ms[] = {1.5, 1.5, 1.5};
    if (cand_done)
        put_end(t, 3, KFLEET__TASK_STATE__SUCCEEDED, cand_ms, 3);
    put_end(t, 4, KFLEET__TASK_STATE__FAILED, NULL, 0);
    put_end(t, 5, KFLEET__TASK_STATE__SKIPPED, NULL, 0);
    assert_int_equal(kf_store_commit(&t, &err), 0);
    return 0;
}

static inline int teardown(void **state)
{
    (void)state;
    kf_store_close(&store);
    nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
    return 0;
}

#endif
