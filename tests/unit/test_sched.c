/* sched: the scheduling rules on a coordinator with no sockets (as the
 * fuzz targets drive it): agent frames go through kf_wire_dispatch into
 * the real handler table, a sweep through control_handle, the dispatcher
 * and the periodic checks run as the loop runs them, and what the
 * coordinator would send is read back from its queue. A real LMDB store
 * holds what the handlers write. */
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

static const char *const TWO = "name: two\n"
                               "kernels:\n"
                               "  - name: triad\n"
                               "    params: {n: [1K, 2K]}\n"
                               "tasks: [validate]\n";

/* A kernel's tasks run on an agent only after its build there succeeded;
 * the build comes first, on a CPU slot, pinned to that agent. */
static void test_build_first(void **state)
{
    (void)state;
    kf_coord *c = coord();
    reg(c, "a1", 2, 0);
    submit(c, TWO);
    sent s[8];
    size_t n = drain(c, s, 8);
    assert_int_equal(n, 1);
    assert_int_equal(s[0].kind, KFLEET__TASK_KIND__BUILD);
    assert_string_equal(s[0].agent, "a1");
    result(c, "a1", s[0].task, s[0].attempt, KFLEET__TASK_STATE__SUCCEEDED);
    n = drain(c, s, 8);
    assert_int_equal(n, 2); /* both validations, one per CPU slot */
    assert_int_equal(s[0].kind, KFLEET__TASK_KIND__VALIDATE);
    assert_int_equal(s[1].kind, KFLEET__TASK_KIND__VALIDATE);
    done(&c);
}

/* A kernel built on an agent is not built there again by the next sweep,
 * unless the agent came back with another toolchain (here its compiler; a
 * torch or nvcc upgrade alike): its old artifacts are not what its cache
 * will be asked for, so the build runs again. */
static void test_toolchain_change_rebuilds(void **state)
{
    (void)state;
    kf_coord *c = coord();
    reg(c, "a1", 2, 0);
    sent s[8];
    for (int round = 0; round < 3; round++) {
        if (round == 2)
            reg_cc(c, "a1", 2, 0, "cc (Debian 13.1.0-1) 13.1.0");
        submit(c, TWO);
        size_t n = drain(c, s, 8);
        if (round != 1) {
            assert_int_equal(n, 1);
            assert_int_equal(s[0].kind, KFLEET__TASK_KIND__BUILD);
            result(c, "a1", s[0].task, s[0].attempt, KFLEET__TASK_STATE__SUCCEEDED);
            n = drain(c, s, 8);
        }
        assert_int_equal(n, 2); /* round 1: straight to the validations */
        assert_int_equal(s[0].kind, KFLEET__TASK_KIND__VALIDATE);
        for (size_t i = 0; i < n; i++)
            result(c, "a1", s[i].task, s[i].attempt, KFLEET__TASK_STATE__SUCCEEDED);
        c->dispatch_needed = 1;
        turn(c);
        assert_int_equal(c->nsweeps, 0);
    }
    done(&c);
}

/* An agent lost while it builds a kernel, then back (a pod's agent killed
 * and launched again): the abandoned build is built again, and the tasks
 * that waited for it run. Found on the H100 (bench/gpu/launch.sh): the
 * store still said "building", so they waited forever. */
static void test_lost_while_building(void **state)
{
    (void)state;
    kf_coord *c = coord();
    reg(c, "a1", 2, 0);
    submit(c, TWO);
    sent s[8];
    assert_int_equal(drain(c, s, 8), 1);
    assert_int_equal(s[0].kind, KFLEET__TASK_KIND__BUILD);
    c->agents[0]->last_seen_mono = kf_mono_ns() - 60000000000ull; /* silent: lost */
    sched_check_agents(c);
    turn(c);
    drain(c, s, 8); /* the cancel of the abandoned build */
    reg(c, "a1", 2, 0);
    size_t n = drain(c, s, 8);
    assert_int_equal(n, 1);
    assert_int_equal(s[0].kind, KFLEET__TASK_KIND__BUILD);
    result(c, "a1", s[0].task, s[0].attempt, KFLEET__TASK_STATE__SUCCEEDED);
    assert_int_equal(drain(c, s, 8), 2);
    assert_int_equal(s[0].kind, KFLEET__TASK_KIND__VALIDATE);
    done(&c);
}

/* A failed build fails the tasks that needed it on that agent, with the
 * compiler's line, and finishes the sweep. */
static void test_failed_build_fails_its_tasks(void **state)
{
    (void)state;
    kf_coord *c = coord();
    reg(c, "a1", 1, 0);
    uint32_t id = submit(c, TWO);
    sent s[8];
    assert_int_equal(drain(c, s, 8), 1);
    result(c, "a1", s[0].task, s[0].attempt, KFLEET__TASK_STATE__FAILED);
    c->dispatch_needed = 1;
    turn(c);
    assert_int_equal(c->nsweeps, 0); /* every task ended: the sweep is finished */
    kf_txn *t;
    assert_int_equal(coord_txn(c, &t), KF_OK);
    Kfleet__Task *task = NULL;
    assert_int_equal(kf_store_get_task(t, kf_task_id(id, 0), &task), KF_OK);
    assert_int_equal(task->state, KFLEET__TASK_STATE__FAILED);
    assert_non_null(strstr(task->error, "the build of triad failed on agent a1"));
    assert_non_null(strstr(task->error, "compile failed"));
    kfleet__task__free_unpacked(task, NULL);
    done(&c);
}

/* nodes: all — one task per registered agent, each pinned to its agent. */
static void test_nodes_all_pins(void **state)
{
    (void)state;
    kf_coord *c = coord();
    reg(c, "a1", 1, 0);
    reg_cc(c, "a2", 1, 0, "cc (Debian 13.1.0-1) 13.1.0"); /* another toolchain */
    submit(c, "name: all\nkernels:\n  - name: triad\n    params: {n: [1K]}\n"
              "tasks: [validate]\nnodes: all\n");
    int validations = 0;
    for (uint32_t i = 0; i < c->sweeps[0]->ntasks; i++)
        validations += c->sweeps[0]->tasks[i].rec->kind == KFLEET__TASK_KIND__VALIDATE;
    assert_int_equal(validations, 2); /* one per agent */
    sent s[8];
    size_t n = drain(c, s, 8);
    assert_int_equal(n, 2); /* each agent builds for itself */
    assert_string_not_equal(s[0].agent, s[1].agent);
    /* each the first of its toolchain: asked for its artifact, for agents
     * of that toolchain still to come */
    assert_true(s[0].want_artifact && s[1].want_artifact);
    for (size_t i = 0; i < n; i++)
        result(c, s[i].agent, s[i].task, s[i].attempt, KFLEET__TASK_STATE__SUCCEEDED);
    n = drain(c, s, 8);
    assert_int_equal(n, 2);
    for (size_t i = 0; i < n; i++) {
        ktask *t = sched_task(c, s[i].task, NULL);
        assert_non_null(t);
        assert_string_equal(t->rec->pin_agent, s[i].agent);
    }
    done(&c);
}

/* A build's result carrying its artifact (or not). */
static void build_result(kf_coord *c, const char *id, const sent *s, const char *bytes)
{
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    Kfleet__Result r = KFLEET__RESULT__INIT;
    Kfleet__BuildInfo bi = KFLEET__BUILD_INFO__INIT;
    char hash[65] = "";
    if (bytes) {
        kf_hash_part part = {bytes, strlen(bytes)};
        kf_hash_hex(&part, 1, hash);
        bi.artifact.data = (uint8_t *)bytes;
        bi.artifact.len = strlen(bytes);
    }
    bi.artifact_hash = hash;
    r.task_id = s->task;
    r.attempt = s->attempt;
    r.state = KFLEET__TASK_STATE__SUCCEEDED;
    r.build = &bi;
    r.finished_ns = kf_now_ns();
    env.body_case = KFLEET__ENVELOPE__BODY_RESULT;
    env.result = &r;
    frame(c, id, &env);
}

/* Build once per fleet: of three agents with one toolchain, the first
 * compiles and is asked for its artifact; the others wait, then install
 * it (their build brings it, naming who compiled it), while an agent with
 * another toolchain compiles for itself. A build that sends back no
 * artifact releases the waiters to compile for themselves. */
static void test_shared_build(void **state)
{
    (void)state;
    for (int with_artifact = 1; with_artifact >= 0; with_artifact--) {
        kf_coord *c = coord();
        reg(c, "a1", 1, 0);
        reg(c, "a2", 1, 0);
        reg(c, "a3", 1, 0);
        reg_cc(c, "b1", 1, 0, "cc (Debian 13.1.0-1) 13.1.0");
        submit(c, "name: all\nkernels:\n  - name: triad\n    params: {n: [1K]}\n"
                  "tasks: [validate]\nnodes: all\n");
        sent s[8];
        size_t n = drain(c, s, 8);
        assert_int_equal(n, 2); /* one compile per toolchain */
        const sent *first = strcmp(s[0].agent, "b1") == 0 ? &s[1] : &s[0];
        const sent *other = first == &s[0] ? &s[1] : &s[0];
        assert_int_equal(first->kind, KFLEET__TASK_KIND__BUILD);
        assert_true(first->want_artifact);
        assert_string_equal(other->agent, "b1");
        assert_true(other->want_artifact); /* for agents of its toolchain yet to come */
        char who[16];
        snprintf(who, sizeof who, "%s", first->agent);
        build_result(c, who, first,
                     with_artifact ? "\x7f"
                                     "ELF the artifact"
                                   : NULL);
        n = drain(c, s, 8);
        size_t builds = 0, installs = 0;
        for (size_t i = 0; i < n; i++) {
            if (s[i].kind != KFLEET__TASK_KIND__BUILD)
                continue;
            builds++;
            assert_string_not_equal(s[i].agent, "b1");
            assert_string_not_equal(s[i].agent, who);
            /* Without an artifact to wait for, nobody waits again. */
            assert_false(s[i].want_artifact);
            if (s[i].artifact_len) {
                assert_int_equal(s[i].artifact_len, strlen("\x7f"
                                                           "ELF the artifact"));
                assert_string_equal(s[i].built_by, who);
                installs++;
            }
        }
        assert_int_equal(builds, 2); /* the two waiters, now */
        assert_int_equal(installs, with_artifact ? 2 : 0);
        done(&c);
    }
}

/* How many of a drain's tasks went to `agent`; *last the last of them. */
static size_t sent_to(const sent *s, size_t n, const char *agent, sent *last)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(s[i].agent, agent) == 0) {
            *last = s[i];
            k++;
        }
    return k;
}

/* An install of another agent's artifact does not wait for the CPU slot: a
 * GPU agent compiling one kernel gets the install of another the moment its
 * artifact is in (one install at a time), and that kernel's validation then
 * starts on its GPU while the compile still holds the CPU slot. */
static void test_install_beside_compile(void **state)
{
    (void)state;
    kf_coord *c = coord();
    reg(c, "a1", 1, 1);
    reg(c, "a2", 1, 1);
    submit(c, "name: two\nkernels:\n  - path: " KF_SOURCE_DIR "/kernels/cuda/copy.cu\n"
              "    params: {bytes: [1M]}\n  - path: " KF_SOURCE_DIR "/kernels/cuda/voxelize.cu\n"
              "    params: {points: [1M], grid: [128]}\ntasks: [validate]\nnodes: all\n");
    sent s[8];
    size_t n = drain(c, s, 8);
    assert_int_equal(n, 2); /* each compiles one kernel */
    const sent *a2b = strcmp(s[0].agent, "a2") == 0 ? &s[0] : &s[1];
    const sent *a1b = a2b == &s[0] ? &s[1] : &s[0];
    assert_string_equal(a1b->agent, "a1");
    assert_int_equal(a1b->kind, KFLEET__TASK_KIND__BUILD);
    assert_int_equal(a2b->kind, KFLEET__TASK_KIND__BUILD);
    assert_int_equal(a1b->artifact_len, 0);
    sent a1build = *a1b;
    build_result(c, "a2", a2b,
                 "\x7f"
                 "ELF a2's artifact");
    n = drain(c, s, 8);
    sent inst = {0};
    /* a1 is still compiling: only the install may start there. */
    assert_int_equal(sent_to(s, n, "a1", &inst), 1);
    assert_int_equal(inst.kind, KFLEET__TASK_KIND__BUILD);
    assert_true(inst.artifact_len > 0);
    assert_string_equal(inst.built_by, "a2");
    build_result(c, "a1", &inst,
                 "\x7f"
                 "ELF a2's artifact");
    /* Installed: its validation starts on a1's GPU, the compile running. */
    n = drain(c, s, 8);
    sent val = {0};
    assert_int_equal(sent_to(s, n, "a1", &val), 1);
    assert_int_equal(val.kind, KFLEET__TASK_KIND__VALIDATE);
    build_result(c, "a1", &a1build,
                 "\x7f"
                 "ELF a1's artifact");
    done(&c);
}

/* The kernel of a task sent (its build's kernel index from the sweep). */
static uint32_t kernel_of(kf_coord *c, const sent *x)
{
    ksweep *sw;
    ktask *t = sched_task(c, x->task, &sw);
    assert_non_null(t);
    return t->rec->kernel_index;
}

/* A GPU slot stays on the kernel it ran last (its runner is warm there)
 * while that kernel has tasks it can start, though the order ranks another
 * kernel first: voxelize (6 configurations) outranks copy (4). a1 compiles
 * voxelize while it runs copy from a2's artifact; when its compile ends and
 * its GPU frees, its next task is still copy's. */
static void test_gpu_stays_on_its_kernel(void **state)
{
    (void)state;
    kf_coord *c = coord();
    reg(c, "a1", 1, 1);
    reg(c, "a2", 1, 1);
    submit(c, "name: aff\nkernels:\n  - path: " KF_SOURCE_DIR "/kernels/cuda/voxelize.cu\n"
              "    params: {points: [1M, 2M, 3M], grid: [64, 128]}\n"
              "  - path: " KF_SOURCE_DIR "/kernels/cuda/copy.cu\n"
              "    params: {bytes: [1M, 2M, 3M, 4M]}\ntasks: [validate]\n");
    sent s[8];
    size_t n = drain(c, s, 8);
    assert_int_equal(n, 2);
    const sent *b1 = strcmp(s[0].agent, "a1") == 0 ? &s[0] : &s[1];
    const sent *b2 = b1 == &s[0] ? &s[1] : &s[0];
    assert_int_equal(kernel_of(c, b1), 0); /* a1 compiles voxelize, the heavier */
    assert_int_equal(kernel_of(c, b2), 1); /* a2 copy */
    sent vox = *b1;
    build_result(c, "a2", b2,
                 "\x7f"
                 "ELF copy");
    n = drain(c, s, 8);
    sent inst = {0};
    sent_to(s, n, "a1", &inst);
    assert_int_equal(inst.kind, KFLEET__TASK_KIND__BUILD);
    build_result(c, "a1", &inst,
                 "\x7f"
                 "ELF copy");
    n = drain(c, s, 8);
    sent run1 = {0};
    sent_to(s, n, "a1", &run1);
    assert_int_equal(run1.kind, KFLEET__TASK_KIND__VALIDATE);
    assert_int_equal(kernel_of(c, &run1), 1); /* copy, on a1's GPU */
    build_result(c, "a1", &vox,
                 "\x7f"
                 "ELF voxelize");
    drain(c, s, 8);
    result(c, "a1", run1.task, run1.attempt, KFLEET__TASK_STATE__SUCCEEDED);
    n = drain(c, s, 8);
    sent next = {0};
    assert_int_equal(sent_to(s, n, "a1", &next), 1);
    assert_int_equal(next.kind, KFLEET__TASK_KIND__VALIDATE);
    assert_int_equal(kernel_of(c, &next), 1); /* still copy: no new runner */
    done(&c);
}

/* `kfleet serve --no-shared-builds`: agents with one toolchain each
 * compile, at once, and none is asked for its artifact. */
static void test_no_shared_builds(void **state)
{
    (void)state;
    kf_coord *c = coord();
    c->cfg.no_shared_builds = 1;
    reg(c, "a1", 1, 0);
    reg(c, "a2", 1, 0);
    submit(c, "name: all\nkernels:\n  - name: triad\n    params: {n: [1K]}\n"
              "tasks: [validate]\nnodes: all\n");
    sent s[8];
    assert_int_equal(drain(c, s, 8), 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(s[i].kind, KFLEET__TASK_KIND__BUILD);
        assert_false(s[i].want_artifact);
    }
    done(&c);
}

/* Shared builds are trusted explicitly (issue 31): agents that reach the
 * coordinator over TCP build only for themselves; one on the operator's
 * trust list builds for the others, whose installed build is recorded with
 * its builder; with sharing then turned off, that installed build does not
 * count: the agent gets a build of its own (own_build) before any task,
 * while the builder's own compile still stands. */
static void test_shared_build_trust(void **state)
{
    (void)state;
    static const char sweep[] = "name: all\nkernels:\n  - name: triad\n    params: {n: [1K]}\n"
                                "tasks: [validate]\nnodes: all\n";
    kf_coord *c = coord();
    snprintf(c->agent_endpoint, sizeof c->agent_endpoint, "tcp://10.0.0.1:5555");
    reg(c, "a1", 1, 0);
    reg(c, "evil", 1, 0);
    submit(c, sweep);
    sent s[8];
    assert_int_equal(drain(c, s, 8), 2);
    for (int i = 0; i < 2; i++) { /* each builds for itself, asked for nothing */
        assert_int_equal(s[i].kind, KFLEET__TASK_KIND__BUILD);
        assert_false(s[i].want_artifact);
        assert_true(s[i].own_build);
    }
    done(&c);

    c = coord();
    snprintf(c->agent_endpoint, sizeof c->agent_endpoint, "tcp://10.0.0.1:5555");
    char trust[128];
    snprintf(trust, sizeof trust, "%s/builders.trust", dir);
    FILE *f = fopen(trust, "w");
    assert_non_null(f);
    fputs("# agents that build for others\nevil\n", f);
    fclose(f);
    c->cfg.trust_file = trust;
    sched_share_load_trust(c);
    reg(c, "evil", 1, 0);
    submit(c, sweep);
    assert_int_equal(drain(c, s, 8), 1);
    assert_true(s[0].want_artifact); /* trusted: asked to build for others */
    build_result(c, "evil", &s[0],
                 "\x7f"
                 "ELF poisoned");
    assert_int_equal(drain(c, s, 8), 1); /* its validate */
    result(c, "evil", s[0].task, s[0].attempt, KFLEET__TASK_STATE__SUCCEEDED);
    assert_int_equal(c->nsweeps, 0);

    reg(c, "a1", 1, 0);
    submit(c, sweep);
    size_t n = drain(c, s, 8);
    sent install;
    memset(&install, 0, sizeof install);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(s[i].agent, "a1") == 0 && s[i].kind == KFLEET__TASK_KIND__BUILD)
            install = s[i];
        else if (s[i].kind == KFLEET__TASK_KIND__VALIDATE) /* evil's */
            result(c, s[i].agent, s[i].task, s[i].attempt, KFLEET__TASK_STATE__SUCCEEDED);
    }
    assert_true(install.artifact_len > 0);
    assert_string_equal(install.built_by, "evil");
    assert_false(install.own_build);
    /* a1 installed it: its result names the builder. */
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    Kfleet__Result r = KFLEET__RESULT__INIT;
    Kfleet__BuildInfo bi = KFLEET__BUILD_INFO__INIT;
    bi.artifact_hash = "5eed000000000000000000000000000000000000000000000000000000000000";
    bi.built_by = "evil";
    r.task_id = install.task;
    r.attempt = install.attempt;
    r.state = KFLEET__TASK_STATE__SUCCEEDED;
    r.build = &bi;
    env.body_case = KFLEET__ENVELOPE__BODY_RESULT;
    env.result = &r;
    frame(c, "a1", &env);
    n = drain(c, s, 8);
    assert_int_equal(n, 1);
    assert_int_equal(s[0].kind, KFLEET__TASK_KIND__VALIDATE);
    assert_string_equal(s[0].artifact_hash, bi.artifact_hash); /* what a1 may load */
    const char *hash = c->sweeps[0]->rec->kernels[0]->hash;
    kagent *a1 = sched_agent(c, "a1", 0);
    kbuild *b = sched_agent_build(c, a1, hash);
    assert_non_null(b);
    assert_string_equal(b->built_by, "evil");
    result(c, "a1", s[0].task, s[0].attempt, KFLEET__TASK_STATE__SUCCEEDED);
    assert_int_equal(c->nsweeps, 0);

    /* Sharing off: a1's installed build no longer counts; evil's own does. */
    c->cfg.no_shared_builds = 1;
    submit(c, sweep);
    n = drain(c, s, 8);
    int a1_builds = 0, evil_builds = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i].kind != KFLEET__TASK_KIND__BUILD)
            continue;
        if (strcmp(s[i].agent, "a1") == 0) {
            a1_builds++;
            assert_true(s[i].own_build);
            assert_int_equal(s[i].artifact_len, 0);
        } else {
            evil_builds++;
        }
    }
    assert_int_equal(a1_builds, 1);
    assert_int_equal(evil_builds, 0);
    done(&c);
}

/* A lost agent's attempt is requeued while attempts remain, runs on
 * another agent, and a result of the old attempt is then kept as a late,
 * superseded record that changes nothing. */
static void test_lost_agent_requeue_and_late_result(void **state)
{
    (void)state;
    kf_coord *c = coord();
    reg(c, "a1", 1, 0);
    uint32_t id = submit(c, "name: one\nkernels:\n  - name: triad\n    params: {n: [1K]}\n"
                            "tasks: [build]\n");
    sent s[8];
    assert_int_equal(drain(c, s, 8), 1);
    uint64_t task = s[0].task;
    /* a1 goes silent: lost at the next check. */
    c->agents[0]->last_seen_mono = kf_mono_ns() - 60000000000ull;
    sched_check_agents(c);
    turn(c);
    reg(c, "a2", 1, 0);
    size_t n = drain(c, s, 8);
    int assigned_a2 = 0;
    for (size_t i = 0; i < n; i++)
        assigned_a2 |=
            !s[i].cancel && strcmp(s[i].agent, "a2") == 0 && s[i].task == task && s[i].attempt == 2;
    assert_true(assigned_a2);
    result(c, "a2", task, 2, KFLEET__TASK_STATE__SUCCEEDED);
    assert_int_equal(c->nsweeps, 0);
    /* a1 comes back and still sends attempt 1's result: the sweep is
     * finished, so it is not stored (docs/protocol.md: the right to write). */
    reg(c, "a1", 1, 0);
    result(c, "a1", task, 1, KFLEET__TASK_STATE__SUCCEEDED);
    kf_txn *t;
    assert_int_equal(coord_txn(c, &t), KF_OK);
    Kfleet__Result *r = NULL;
    assert_int_equal(kf_store_get_result(t, task, &r), KF_OK);
    assert_string_equal(r->agent_id, "a2");
    assert_int_equal(r->attempt, 2);
    kfleet__result__free_unpacked(r, NULL);
    (void)id;
    done(&c);
}

/* After the last of `attempts` is lost, the task fails saying so. */
static void test_gives_up_after_attempts(void **state)
{
    (void)state;
    kf_coord *c = coord();
    submit(c, "name: one\nkernels:\n  - name: triad\n    params: {n: [1K]}\n"
              "tasks: [build]\nattempts: 2\n");
    for (int i = 0; i < 2; i++) {
        char id[8];
        snprintf(id, sizeof id, "x%d", i);
        reg(c, id, 1, 0);
        sent s[8];
        assert_true(drain(c, s, 8) >= 1);
        for (size_t k = 0; k < c->nagents; k++)
            if (strcmp(c->agents[k]->id, id) == 0)
                c->agents[k]->last_seen_mono = kf_mono_ns() - 60000000000ull;
        sched_check_agents(c);
        turn(c);
    }
    assert_int_equal(c->nsweeps, 0);
    kf_txn *t;
    assert_int_equal(coord_txn(c, &t), KF_OK);
    Kfleet__Result *r = NULL;
    assert_int_equal(kf_store_get_result(t, kf_task_id(1, 0), &r), KF_OK);
    assert_int_equal(r->state, KFLEET__TASK_STATE__FAILED);
    assert_non_null(strstr(r->error, "gave up after 2 attempts"));
    kfleet__result__free_unpacked(r, NULL);
    done(&c);
}

/* A CUDA kernel's validation waits for a GPU slot; an agent without one
 * only builds. */
static void test_gpu_slots(void **state)
{
    (void)state;
    kf_coord *c = coord();
    reg(c, "cpu", 2, 0);
    submit(c, "name: g\nkernels:\n  - path: " KF_SOURCE_DIR "/kernels/cuda/copy.cu\n"
              "    params: {bytes: [1M]}\ntasks: [validate]\n");
    sent s[8];
    size_t n = drain(c, s, 8);
    for (size_t i = 0; i < n; i++)
        assert_int_not_equal(s[i].kind, KFLEET__TASK_KIND__VALIDATE);
    reg(c, "gpu", 1, 1);
    n = drain(c, s, 8);
    assert_int_equal(n, 1);
    assert_int_equal(s[0].kind, KFLEET__TASK_KIND__BUILD);
    assert_string_equal(s[0].agent, "gpu");
    result(c, "gpu", s[0].task, s[0].attempt, KFLEET__TASK_STATE__SUCCEEDED);
    n = drain(c, s, 8);
    assert_int_equal(n, 1);
    assert_int_equal(s[0].kind, KFLEET__TASK_KIND__VALIDATE);
    assert_string_equal(s[0].agent, "gpu");
    done(&c);
}

/* A profile runs only after its configuration's validation passed; when
 * the validation fails, the profile ends skipped, never assigned. */
static void test_profile_waits_for_validation(void **state)
{
    (void)state;
    kf_coord *c = coord();
    reg(c, "a1", 2, 0);
    uint32_t id = submit(c, "name: g\nkernels:\n  - name: triad\n    params: {n: [1K, 2K]}\n"
                            "tasks: [validate, profile]\n");
    sent s[8];
    assert_int_equal(drain(c, s, 8), 1); /* the build */
    result(c, "a1", s[0].task, s[0].attempt, KFLEET__TASK_STATE__SUCCEEDED);
    size_t n = drain(c, s, 8);
    assert_int_equal(n, 2); /* both validations; no profile before them */
    for (size_t i = 0; i < n; i++)
        assert_int_equal(s[i].kind, KFLEET__TASK_KIND__VALIDATE);
    /* n=1K passes, n=2K fails. */
    uint64_t pass = s[0].task, failv = s[1].task;
    result(c, "a1", pass, 1, KFLEET__TASK_STATE__SUCCEEDED);
    result(c, "a1", failv, 1, KFLEET__TASK_STATE__FAILED);
    n = drain(c, s, 8);
    assert_int_equal(n, 1); /* only the passing configuration's profile */
    assert_int_equal(s[0].kind, KFLEET__TASK_KIND__PROFILE);
    ktask *p = sched_task(c, s[0].task, NULL);
    assert_int_equal(p->rec->config_index, sched_task(c, pass, NULL)->rec->config_index);
    /* The other profile was skipped, saying why. */
    ksweep *sw = sched_sweep(c, id);
    int skipped = 0;
    for (uint32_t i = 0; i < sw->ntasks; i++) {
        ktask *t = &sw->tasks[i];
        if (t->rec->state == KFLEET__TASK_STATE__SKIPPED) {
            skipped++;
            assert_int_equal(t->rec->kind, KFLEET__TASK_KIND__PROFILE);
            assert_non_null(strstr(t->rec->error, "validation did not pass (FAILED)"));
        }
    }
    assert_int_equal(skipped, 1);
    done(&c);
}

int main(void)
{
    kf_log_setup("test", KF_LOG_OFF);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_first),
        cmocka_unit_test(test_toolchain_change_rebuilds),
        cmocka_unit_test(test_shared_build),
        cmocka_unit_test(test_install_beside_compile),
        cmocka_unit_test(test_gpu_stays_on_its_kernel),
        cmocka_unit_test(test_no_shared_builds),
        cmocka_unit_test(test_shared_build_trust),
        cmocka_unit_test(test_lost_while_building),
        cmocka_unit_test(test_failed_build_fails_its_tasks),
        cmocka_unit_test(test_nodes_all_pins),
        cmocka_unit_test(test_lost_agent_requeue_and_late_result),
        cmocka_unit_test(test_gives_up_after_attempts),
        cmocka_unit_test(test_gpu_slots),
        cmocka_unit_test(test_profile_waits_for_validation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
