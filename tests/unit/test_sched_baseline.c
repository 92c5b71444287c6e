/* sched_baseline: the baseline of a `nodes: any` sweep measured on every
 * agent that runs a candidate's profile of its configuration (issue 41),
 * on the coordinator with no sockets of sched_fixture.h over a real store:
 * every candidate profile that passed has a passed baseline profile of its
 * configuration on its agent, and no agent has two; the submitted baseline
 * profile, still unplaced, is pinned where it is first needed; a restart
 * keeps what was made and makes nothing twice; a lost agent's baseline
 * tasks are cancelled and made again when it comes back; an agent that
 * cannot run the baseline has it skipped, saying why. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cli/client.h"
#include "common/log.h"
#include "common/taskkind.h"
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

/* A candidate (triad_O3) and the baseline (triad): one source, two
 * kernels, four configurations. The candidate comes first, so its tasks
 * are offered first (kernel by kernel, ties in the sweep's order). */
#define TRIADS                                                                                     \
    "name: base\n"                                                                                 \
    "kernels:\n"                                                                                   \
    "  - {name: triad_O3, path: " KF_SOURCE_DIR "/kernels/host/triad.c, flags: [-O3]}\n"           \
    "  - triad\n"                                                                                  \
    "params: {n: [1K, 2K, 4K, 8K]}\n"                                                              \
    "baseline: triad\n"                                                                            \
    "tasks: [build, validate, profile]\n"

/* Whether a task assigned to agent `agent` is held (its result not sent). */
typedef int (*hold_fn)(const kf_coord *c, const sent *s);

/* Dispatches and answers every assignment succeeded (but those held)
 * until nothing more is assigned; returns how many were answered. */
static size_t run(kf_coord *c, hold_fn hold)
{
    size_t answered = 0;
    sent s[64];
    for (int round = 0; round < 200; round++) {
        c->dispatch_needed = 1;
        turn(c);
        size_t n = drain(c, s, 64), fresh = 0;
        for (size_t i = 0; i < n; i++) {
            if (s[i].cancel || (hold && hold(c, &s[i])))
                continue;
            fresh++;
            result(c, s[i].agent, s[i].task, s[i].attempt, KFLEET__TASK_STATE__SUCCEEDED);
        }
        answered += fresh;
        if (!fresh)
            break;
    }
    return answered;
}

typedef struct prow {
    uint32_t kernel, config;
    char node[16];
    int state;
} prow;

typedef struct prows {
    prow v[256];
    size_t n;
} prows;

static int keep_profile(void *ctx, const Kfleet__Task *t)
{
    prows *p = ctx;
    if (kf_task_kind_at(t->kind)->report != KF_REPORT_TIMING || p->n == 256)
        return 0;
    prow *r = &p->v[p->n++];
    r->kernel = t->kernel_index;
    r->config = t->config_index;
    r->state = t->state;
    snprintf(r->node, sizeof r->node, "%s",
             t->pin_agent && *t->pin_agent ? t->pin_agent : t->agent_id);
    return 0;
}

/* The stored profiles of sweep id: each passed candidate profile has a
 * passed baseline profile of its configuration on its node (the speedup's
 * node), and no node has two. Returns the candidate profiles checked. */
static size_t check_every_node(kf_coord *c, uint32_t id, uint32_t baseline)
{
    kf_txn *txn;
    assert_int_equal(coord_txn(c, &txn), KF_OK);
    prows p = {.n = 0};
    assert_int_equal(kf_store_foreach_task(txn, id, keep_profile, &p), KF_OK);
    size_t checked = 0;
    for (size_t i = 0; i < p.n; i++) {
        const prow *r = &p.v[i];
        size_t base = 0;
        for (size_t j = 0; j < p.n; j++)
            base += p.v[j].kernel == baseline && p.v[j].config == r->config &&
                    p.v[j].state == KFLEET__TASK_STATE__SUCCEEDED &&
                    strcmp(p.v[j].node, r->node) == 0;
        if (r->kernel == baseline && r->state == KFLEET__TASK_STATE__SUCCEEDED) {
            assert_int_equal(base, 1); /* itself, and no second one there */
        } else if (r->state == KFLEET__TASK_STATE__SUCCEEDED) {
            if (base != 1)
                fail_msg("candidate %u config %u on %s: %zu baseline profiles there", r->kernel,
                         r->config, r->node, base);
            checked++;
        }
    }
    return checked;
}

/* Two agents share a sweep's configurations: every candidate row has its
 * baseline on its own agent, the submitted baseline where it ran and one
 * made for the other agent where a candidate of that configuration ran. */
static void test_baseline_on_every_agent(void **state)
{
    (void)state;
    kf_coord *c = coord();
    reg(c, "a1", 2, 0);
    reg(c, "a2", 2, 0);
    uint32_t id =
        submit(c, "name: three\n"
                  "kernels:\n"
                  "  - {name: O1, path: " KF_SOURCE_DIR "/kernels/host/triad.c, flags: [-O1]}\n"
                  "  - {name: O2, path: " KF_SOURCE_DIR "/kernels/host/triad.c, flags: [-O2]}\n"
                  "  - triad\n"
                  "  - {name: O3, path: " KF_SOURCE_DIR "/kernels/host/triad.c, flags: [-O3]}\n"
                  "params: {n: [1K, 2K, 4K]}\n"
                  "baseline: triad\n"
                  "tasks: [build, validate, profile]\n");
    run(c, NULL);
    assert_int_equal(c->nsweeps, 0);
    assert_int_equal(check_every_node(c, id, 2), 3 * 3);
    done(&c);
}

/* The submitted baseline profile, pending and placed nowhere when a
 * candidate's profile of its configuration goes to an agent, is pinned to
 * that agent (in the store too) rather than measured twice: a sweep on one
 * agent makes no task of its own for the baseline. */
static void test_unplaced_profile_pinned(void **state)
{
    (void)state;
    kf_coord *c = coord();
    reg(c, "a1", 1, 0);
    uint32_t id = submit(c, TRIADS);
    ksweep *sw = sched_sweep(c, id);
    uint32_t submitted = sw->ntasks;
    /* The candidate's validate of the first configuration, then its
     * profile (after the builds): the baseline's is then pinned to a1. */
    int pinned = 0;
    sent s[8];
    for (int round = 0; round < 40 && !pinned; round++) {
        c->dispatch_needed = 1;
        turn(c);
        size_t n = drain(c, s, 8);
        for (size_t i = 0; i < n; i++) {
            const ktask *t = sched_task(c, s[i].task, NULL);
            if (t->rec->kernel_index == 0 && s[i].kind == KFLEET__TASK_KIND__PROFILE) {
                for (uint32_t k = 0; k < sw->ntasks; k++) {
                    const ktask *b = &sw->tasks[k];
                    if (b->rec->kernel_index == 1 && b->rec->kind == KFLEET__TASK_KIND__PROFILE &&
                        b->rec->config_index == t->rec->config_index) {
                        assert_true(k < submitted);
                        assert_int_equal(b->rec->state, KFLEET__TASK_STATE__PENDING);
                        assert_string_equal(b->rec->pin_agent, "a1");
                        assert_int_equal(b->pin, 0);
                        kf_txn *txn;
                        Kfleet__Task *rec = NULL;
                        assert_int_equal(coord_txn(c, &txn), KF_OK);
                        assert_int_equal(kf_store_get_task(txn, b->rec->task_id, &rec), KF_OK);
                        assert_string_equal(rec->pin_agent, "a1");
                        kfleet__task__free_unpacked(rec, NULL);
                        pinned = 1;
                    }
                }
            }
            result(c, s[i].agent, s[i].task, s[i].attempt, KFLEET__TASK_STATE__SUCCEEDED);
        }
    }
    assert_true(pinned);
    run(c, NULL);
    assert_int_equal(c->nsweeps, 0);
    assert_int_equal(check_every_node(c, id, 1), 4);
    /* Builds aside, nothing was made: every baseline profile ran once. */
    kf_txn *txn;
    assert_int_equal(coord_txn(c, &txn), KF_OK);
    prows p = {.n = 0};
    assert_int_equal(kf_store_foreach_task(txn, id, keep_profile, &p), KF_OK);
    assert_int_equal(p.n, 8);
    done(&c);
}

/* The baseline first (kernel 0), then the candidate: on one agent the
 * baseline's tasks are offered first. */
#define BASE_FIRST                                                                                 \
    "name: base-first\n"                                                                           \
    "kernels:\n"                                                                                   \
    "  - triad\n"                                                                                  \
    "  - {name: triad_O3, path: " KF_SOURCE_DIR "/kernels/host/triad.c, flags: [-O3]}\n"           \
    "params: {n: [1K, 2K, 4K, 8K]}\n"                                                              \
    "baseline: triad\n"                                                                            \
    "tasks: [build, validate, profile]\n"

/* The attempts a hold function held. */
static sent held[64];
static size_t nheld;

static int hold(const sent *s, int yes)
{
    if (yes && nheld < 64)
        held[nheld++] = *s;
    return yes;
}

/* a1 holds the candidate's profiles. */
static int candidate_profiles(const kf_coord *c, const sent *s)
{
    const ktask *t = sched_task((kf_coord *)c, s->task, NULL);
    return hold(s, t && t->rec->kernel_index == 1 && s->kind == KFLEET__TASK_KIND__PROFILE);
}

/* a2 holds the baseline's validations and profiles (and, with
 * keep_candidate, the first candidate profile it is given). */
static int keep_candidate;
static int baseline_on_a2(const kf_coord *c, const sent *s)
{
    const ktask *t = sched_task((kf_coord *)c, s->task, NULL);
    if (!t || strcmp(s->agent, "a2") != 0 || s->kind == KFLEET__TASK_KIND__BUILD)
        return 0;
    if (t->rec->kernel_index == 1 && s->kind == KFLEET__TASK_KIND__PROFILE && keep_candidate) {
        keep_candidate = 0;
        return hold(s, 1);
    }
    return hold(s, t->rec->kernel_index == 0);
}

static void lose(kf_coord *c, const char *id)
{
    kagent *a = sched_agent(c, id, 0);
    assert_non_null(a);
    a->last_seen_mono = kf_mono_ns() - 60000000000ull;
    sched_check_agents(c);
    turn(c);
    assert_true(a->lost);
}

/* The baseline's validations and profiles pinned to a2 (not builds), each
 * as "index:kind:state ", into out; how many. */
static size_t a2_baseline(kf_coord *c, uint32_t id, char *out, size_t len)
{
    ksweep *sw = sched_sweep(c, id);
    size_t off = 0, n = 0;
    out[0] = 0;
    for (uint32_t k = 0; sw && k < sw->ntasks && off < len; k++) {
        const Kfleet__Task *t = sw->tasks[k].rec;
        if (t->kernel_index == 0 && strcmp(t->pin_agent, "a2") == 0 &&
            !kf_task_kind_at(t->kind)->builds) {
            off += (size_t)snprintf(out + off, len - off, "%u:%d:%u ", k, t->kind, t->state);
            n++;
        }
    }
    return n;
}

/* The baseline done on a1 (it holds the candidate's profiles); then a1 is
 * lost, its candidate profiles go to a2, which is made the baseline of
 * their configurations (a2 holds those tasks: they stay open). */
static uint32_t moved_to_a2(kf_coord *c, int keep_one)
{
    reg(c, "a1", 8, 0);
    uint32_t id = submit(c, BASE_FIRST);
    nheld = 0;
    run(c, candidate_profiles);
    assert_int_equal(nheld, 4); /* the candidate's 4 profiles, held on a1 */
    reg(c, "a2", 8, 0);
    lose(c, "a1");
    nheld = 0;
    keep_candidate = keep_one;
    run(c, baseline_on_a2);
    char made[512];
    assert_int_equal(a2_baseline(c, id, made, sizeof made), 4 * 2); /* validate, profile each */
    /* The validations (each profile waits for its own), and the one kept. */
    assert_int_equal(nheld, 4 + (size_t)keep_one);
    return id;
}

/* The baseline tasks made for an agent survive a restart of the
 * coordinator as they were (from the store), and the restarted one makes
 * none twice: the sweep then ends with one baseline per node. */
static void test_restart_keeps_them(void **state)
{
    (void)state;
    kf_coord *c = coord();
    uint32_t id = moved_to_a2(c, 0);
    char before[512], after[512];
    a2_baseline(c, id, before, sizeof before);
    uint32_t ntasks = sched_sweep(c, id)->ntasks;
    c = reopen(c);
    assert_int_equal(sched_sweep(c, id)->ntasks, ntasks);
    a2_baseline(c, id, after, sizeof after);
    assert_string_equal(before, after);
    reg(c, "a2", 8, 0);
    /* a2 sends what it held (its outbox outlives the coordinator). */
    for (size_t i = 0; i < nheld; i++)
        result(c, "a2", held[i].task, held[i].attempt, KFLEET__TASK_STATE__SUCCEEDED);
    run(c, NULL);
    assert_int_equal(c->nsweeps, 0);
    assert_int_equal(check_every_node(c, id, 0), 4);
    /* Nothing made after the restart. */
    kf_txn *txn;
    Kfleet__Sweep *rec = NULL;
    assert_int_equal(coord_txn(c, &txn), KF_OK);
    assert_int_equal(kf_store_get_sweep(txn, id, &rec), KF_OK);
    assert_int_equal(rec->task_count, ntasks);
    kfleet__sweep__free_unpacked(rec, NULL);
    done(&c);
}

static size_t count_cancelled_a2(kf_coord *c, uint32_t id)
{
    kf_txn *txn;
    assert_int_equal(coord_txn(c, &txn), KF_OK);
    size_t n = 0;
    for (uint32_t k = 0;; k++) {
        Kfleet__Task *t = NULL;
        if (kf_store_get_task(txn, kf_task_id(id, k), &t) != KF_OK)
            break;
        if (t->kernel_index == 0 && strcmp(t->pin_agent, "a2") == 0 &&
            t->state == KFLEET__TASK_STATE__CANCELLED) {
            assert_non_null(strstr(t->error, "baseline not measured here: agent a2 was lost"));
            n++;
        }
        kfleet__task__free_unpacked(t, NULL);
    }
    return n;
}

/* An agent lost with baseline tasks pinned to it: they are cancelled (the
 * sweep does not wait for an agent that may never return); when it comes
 * back, it is given its baseline again, for the candidates it ran. */
static void test_lost_and_back(void **state)
{
    (void)state;
    kf_coord *c = coord();
    uint32_t id = moved_to_a2(c, 1); /* a candidate profile open: the sweep too */
    lose(c, "a2");
    assert_int_equal(count_cancelled_a2(c, id), 4 * 2);
    assert_int_equal(c->nsweeps, 1);
    reg(c, "a2", 8, 0);
    run(c, NULL);
    assert_int_equal(c->nsweeps, 0);
    assert_int_equal(check_every_node(c, id, 0), 4);
    done(&c);

    /* Lost for good: the sweep ends without a2's baseline. */
    c = coord();
    id = moved_to_a2(c, 0);
    lose(c, "a2");
    assert_int_equal(c->nsweeps, 0);
    assert_int_equal(count_cancelled_a2(c, id), 4 * 2);
    done(&c);
}

/* A CPU agent runs the host candidate; the baseline is a CUDA kernel: its
 * validate and profile made for that agent are skipped at once, saying
 * why, and the sweep does not wait for them. */
static void test_cannot_run_skipped(void **state)
{
    (void)state;
    kf_coord *c = coord();
    reg(c, "cpu1", 1, 0);
    uint32_t id = submit(c, "name: gpu-base\n"
                            "kernels:\n"
                            "  - name: triad\n"
                            "  - path: " KF_SOURCE_DIR "/kernels/cuda/copy.cu\n"
                            "params: {n: [1K]}\n"
                            "baseline: copy\n"
                            "tasks: [build, validate, profile]\n");
    run(c, NULL);
    ksweep *sw = sched_sweep(c, id);
    assert_non_null(sw); /* copy waits for a GPU */
    size_t skipped = 0;
    for (uint32_t k = 0; k < sw->ntasks; k++) {
        const Kfleet__Task *t = sw->tasks[k].rec;
        if (t->kernel_index == 1 && strcmp(t->pin_agent, "cpu1") == 0) {
            assert_int_equal(t->state, KFLEET__TASK_STATE__SKIPPED);
            assert_non_null(
                strstr(t->error, "the baseline cannot run on this agent: cpu1 has no GPU"));
            skipped++;
        }
    }
    assert_int_equal(skipped, 2);
    reg(c, "gpu1", 1, 1);
    run(c, NULL);
    assert_int_equal(c->nsweeps, 0);
    done(&c);
}

/* `nodes: all` already measures every configuration on every agent: no
 * task is made, none pinned otherwise. */
static void test_nodes_all_untouched(void **state)
{
    (void)state;
    kf_coord *c = coord();
    reg(c, "a1", 1, 0);
    reg(c, "a2", 1, 0);
    uint32_t id = submit(c, TRIADS "nodes: all\n");
    ksweep *sw = sched_sweep(c, id);
    uint32_t made = 0; /* builds aside */
    for (uint32_t k = 0; k < sw->ntasks; k++)
        made += !kf_task_kind_at(sw->tasks[k].rec->kind)->builds;
    assert_int_equal(made, 2 * 4 * 2 * 2); /* kernels x configs x kinds x agents */
    run(c, NULL);
    assert_int_equal(c->nsweeps, 0);
    kf_txn *txn;
    assert_int_equal(coord_txn(c, &txn), KF_OK);
    prows p = {.n = 0};
    assert_int_equal(kf_store_foreach_task(txn, id, keep_profile, &p), KF_OK);
    assert_int_equal(p.n, 2 * 4 * 2);
    assert_int_equal(check_every_node(c, id, 1), 8);
    done(&c);
}

int main(void)
{
    kf_log_setup("test", KF_LOG_OFF);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_baseline_on_every_agent),
        cmocka_unit_test(test_unplaced_profile_pinned),
        cmocka_unit_test(test_restart_keeps_them),
        cmocka_unit_test(test_lost_and_back),
        cmocka_unit_test(test_cannot_run_skipped),
        cmocka_unit_test(test_nodes_all_untouched),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
