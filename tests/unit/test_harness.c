/* Tests for agent/runner/harness.c, driven as the runner drives it: a TaskAssign
 * in, a frame stream out (here into a temp file). Host kernels only: the
 * CUDA path is exercised on the GPU machine (bench/gpu). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/buf.h"
#include "runner/build.h"
#include "runner/harness.h"
#include "runner/reffile.h"
#include "runner/tools.h"
#include "common/util.h"
#include "common/wire.h"

#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char workdir[64];

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
    snprintf(workdir, sizeof workdir, "/tmp/kf-test-harness.XXXXXX");
    if (!mkdtemp(workdir))
        return -1;
    char d[128];
    snprintf(d, sizeof d, "%s/cache", workdir);
    kf_mkdirs(d, 0700, NULL);
    snprintf(d, sizeof d, "%s/tmp", workdir);
    kf_mkdirs(d, 0700, NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return nftw(workdir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

/* What a run produced: the samples in order and the one result. */
typedef struct outcome {
    uint32_t seqs[1u << 21]; /* calloc'd: 8 MiB */
    size_t nsamples;
    int nresults;
    Kfleet__Result *res;
} outcome;

static outcome *run_task(Kfleet__TaskAssign *ta)
{
    char path[128];
    snprintf(path, sizeof path, "%s/frames", workdir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(kf_harness_run(ta, workdir, fd), 0);
    close(fd);
    kf_buf b = KF_BUF_INIT;
    assert_int_equal(kf_buf_read_file(&b, path), 0);
    outcome *o = calloc(1, sizeof *o);
    size_t off = 0;
    while (off + 4 <= b.len) {
        const uint8_t *p = (const uint8_t *)b.data + off;
        uint32_t len = kf_frame_len_get(p);
        assert_true(off + 4 + len <= b.len);
        Kfleet__Envelope *env = kf_wire_unpack(p + 4, len, NULL);
        assert_non_null(env);
        if (env->body_case == KFLEET__ENVELOPE__BODY_SAMPLES) {
            assert_int_equal(o->nresults, 0); /* samples come before the result */
            for (size_t i = 0; i < env->samples->n_samples; i++) {
                assert_true(o->nsamples < sizeof o->seqs / sizeof *o->seqs);
                o->seqs[o->nsamples++] = env->samples->samples[i]->seq;
            }
            kf_wire_free(env);
        } else {
            assert_int_equal(env->body_case, KFLEET__ENVELOPE__BODY_RESULT);
            o->nresults++;
            /* Keep the result: detach it from the envelope. */
            o->res = env->result;
            env->result = NULL;
            env->body_case = KFLEET__ENVELOPE__BODY__NOT_SET;
            kf_wire_free(env);
        }
        off += 4 + len;
    }
    assert_int_equal(off, b.len);
    assert_int_equal(o->nresults, 1);
    kf_buf_release(&b);
    return o;
}

static void free_outcome(outcome *o)
{
    kfleet__result__free_unpacked(o->res, NULL);
    free(o);
}

/* A task for a kernel file under KF_SOURCE_DIR, with its hash. */
typedef struct task {
    Kfleet__TaskAssign ta;
    Kfleet__TaskSpec spec;
    Kfleet__MeasureSettings ms;
    Kfleet__SourceFile src, abi, inc;
    Kfleet__SourceFile *srcs[3];
    Kfleet__Param p;
    Kfleet__Param *params[1];
    kf_buf text, header, inc_text;
    char hash[65];
} task;

static void make_task(task *t, const char *rel, const char *name, int kind, int64_t n,
                      const char *extra)
{
    memset(t, 0, sizeof *t);
    kfleet__task_assign__init(&t->ta);
    kfleet__task_spec__init(&t->spec);
    kfleet__measure_settings__init(&t->ms);
    kfleet__source_file__init(&t->src);
    kfleet__source_file__init(&t->abi);
    kfleet__param__init(&t->p);
    kf_buf_init(&t->text);
    kf_buf_init(&t->header);
    kf_buf_init(&t->inc_text);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", KF_SOURCE_DIR, rel);
    assert_int_equal(kf_buf_read_file(&t->text, path), 0);
    if (extra)
        kf_buf_adds(&t->text, extra);
    snprintf(path, sizeof path, "%s/kernels/kf_kernel.h", KF_SOURCE_DIR);
    assert_int_equal(kf_buf_read_file(&t->header, path), 0);
    kf_hash_part parts[2] = {{t->text.data, t->text.len}, {t->header.data, t->header.len}};
    kf_hash_hex(parts, 2, t->hash);
    const char *base = strrchr(rel, '/') + 1;
    t->src.name = (char *)base;
    t->src.content.data = (uint8_t *)t->text.data;
    t->src.content.len = t->text.len;
    t->abi.name = "kf_kernel.h";
    t->abi.content.data = (uint8_t *)t->header.data;
    t->abi.content.len = t->header.len;
    t->srcs[0] = &t->src;
    t->srcs[1] = &t->abi;
    t->spec.kind = (Kfleet__TaskKind)kind;
    t->spec.kernel = (char *)name;
    t->spec.kernel_hash = t->hash;
    t->spec.n_sources = 2;
    t->spec.sources = t->srcs;
    t->p.name = "n";
    t->p.value = n;
    t->params[0] = &t->p;
    t->spec.n_params = 1;
    t->spec.params = t->params;
    t->ms.min_samples = 12;
    t->ms.min_time_s = 0.01;
    t->ms.max_noise_pct = 100;
    t->ms.timeout_s = 2;
    t->ms.validate_seeds = 3;
    t->spec.measure = &t->ms;
    t->ta.task_id = 0x500000001ull;
    t->ta.attempt = 1;
    t->ta.spec = &t->spec;
}

/* A header the kernel includes (tests/kernels/cheat_common.h), shipped
 * beside it. */
static void add_source(task *t, const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", KF_SOURCE_DIR, rel);
    assert_int_equal(kf_buf_read_file(&t->inc_text, path), 0);
    kfleet__source_file__init(&t->inc);
    t->inc.name = (char *)strrchr(rel, '/') + 1;
    t->inc.content.data = (uint8_t *)t->inc_text.data;
    t->inc.content.len = t->inc_text.len;
    t->srcs[t->spec.n_sources++] = &t->inc;
}

static void free_task(task *t)
{
    kf_buf_release(&t->text);
    kf_buf_release(&t->header);
    kf_buf_release(&t->inc_text);
}

static void test_build_cache(void **state)
{
    (void)state;
    task t;
    make_task(&t, "kernels/host/triad.c", "triad", KFLEET__TASK_KIND__BUILD, 0, NULL);
    outcome *o = run_task(&t.ta);
    assert_int_equal(o->res->state, KFLEET__TASK_STATE__SUCCEEDED);
    assert_non_null(o->res->build);
    assert_false(o->res->build->cached);
    assert_int_equal(strlen(o->res->build->artifact_hash), 64);
    char first[65];
    snprintf(first, sizeof first, "%s", o->res->build->artifact_hash);
    free_outcome(o);

    /* The same sources again: nothing recompiles. */
    o = run_task(&t.ta);
    assert_int_equal(o->res->state, KFLEET__TASK_STATE__SUCCEEDED);
    assert_true(o->res->build->cached);
    assert_string_equal(o->res->build->artifact_hash, first);
    free_outcome(o);
    free_task(&t);

    /* A changed source has another hash, so another key: it compiles. */
    make_task(&t, "kernels/host/triad.c", "triad", KFLEET__TASK_KIND__BUILD, 0,
              "\n/* changed */\n");
    o = run_task(&t.ta);
    assert_int_equal(o->res->state, KFLEET__TASK_STATE__SUCCEEDED);
    assert_false(o->res->build->cached);
    free_outcome(o);
    char k1[65], k2[65];
    kf_err kerr;
    assert_int_equal(kf_build_cache_key(t.hash, 0, k1, &kerr), KF_OK);
    assert_int_equal(kf_build_cache_key(first, 0, k2, &kerr), KF_OK);
    assert_string_not_equal(k1, k2);
    free_task(&t);
}

static void test_compile_error(void **state)
{
    (void)state;
    task t;
    make_task(&t, "tests/kernels/bad_compile.c", "bad_compile", KFLEET__TASK_KIND__BUILD, 0, NULL);
    outcome *o = run_task(&t.ta);
    assert_int_equal(o->res->state, KFLEET__TASK_STATE__FAILED);
    assert_non_null(strstr(o->res->error, "compile failed"));
    assert_non_null(strstr(o->res->error, "error"));
    assert_non_null(strstr(o->res->error, "bad_compile.c:6"));
    free_outcome(o);
    free_task(&t);
}

static void test_validate_needs_build(void **state)
{
    (void)state;
    task t;
    make_task(&t, "kernels/host/triad.c", "triad", KFLEET__TASK_KIND__VALIDATE, 1000, NULL);
    outcome *o = run_task(&t.ta);
    assert_int_equal(o->res->state, KFLEET__TASK_STATE__FAILED);
    assert_non_null(strstr(o->res->error, "the build must run first"));
    free_outcome(o);
    free_task(&t);
}

static void build_then(task *t, int kind)
{
    t->spec.kind = KFLEET__TASK_KIND__BUILD;
    outcome *o = run_task(&t->ta);
    assert_int_equal(o->res->state, KFLEET__TASK_STATE__SUCCEEDED);
    free_outcome(o);
    t->spec.kind = (Kfleet__TaskKind)kind;
}

static void test_validate(void **state)
{
    (void)state;
    task t;
    make_task(&t, "kernels/host/matmul.c", "matmul", KFLEET__TASK_KIND__VALIDATE, 64, NULL);
    build_then(&t, KFLEET__TASK_KIND__VALIDATE);
    outcome *o = run_task(&t.ta);
    assert_int_equal(o->res->state, KFLEET__TASK_STATE__SUCCEEDED);
    assert_int_equal(o->res->n_trials, 3);
    assert_true(o->res->deterministic);
    /* The kernel's declared tolerances travel with the verdict. */
    assert_true(o->res->tol_abs > 0 && o->res->tol_rel > 0);
    for (size_t i = 0; i < 3; i++) {
        assert_true(o->res->trials[i]->max_abs_err <= o->res->tol_abs);
        assert_true(o->res->trials[i]->passed);
        assert_true(o->res->trials[i]->max_abs_err < 1e-3);
        assert_int_equal(o->res->trials[i]->nonfinite, 0);
    }
    /* Each trial draws fresh inputs. */
    assert_true(o->res->trials[0]->seed != o->res->trials[1]->seed);
    free_outcome(o);
    free_task(&t);

    make_task(&t, "tests/kernels/wrong.c", "wrong", KFLEET__TASK_KIND__VALIDATE, 0, NULL);
    build_then(&t, KFLEET__TASK_KIND__VALIDATE);
    o = run_task(&t.ta);
    assert_int_equal(o->res->state, KFLEET__TASK_STATE__FAILED);
    assert_non_null(strstr(o->res->error, "tolerance"));
    assert_false(o->res->trials[0]->passed);
    assert_true(o->res->trials[0]->max_abs_err > 0.5);
    free_outcome(o);
    free_task(&t);
}

/* Where a validation's checks run (Result.compare, issue 32 item 4): the
 * runner finds kf_reference_device when the kernel defines it (a host
 * output is still compared on the host, and says so), keeps the host path
 * for a kernel without it, and KF_COMPARE picks the host path or, set to
 * anything else than host or device, fails the task saying so. */
static void test_compare_where(void **state)
{
    (void)state;
    const char *refdev =
        "\nint kf_reference_device(void *state, double *dref, char *err, size_t errlen);\n"
        "int kf_reference_device(void *state, double *dref, char *err, size_t errlen)\n"
        "{ (void)state; (void)dref; (void)err; (void)errlen; return -1; }\n";
    struct {
        const char *extra, *env, *compare;
    } cases[] = {
        {NULL, NULL, "host: no kf_reference_device"},
        {refdev, NULL, "host: a host output"},
        {refdev, "device", "host: a host output"},
        {refdev, "host", "host: KF_COMPARE=host"},
        {refdev, "gpu", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        task t;
        make_task(&t, "kernels/host/matmul.c", "matmul", KFLEET__TASK_KIND__VALIDATE, 32,
                  cases[i].extra);
        build_then(&t, KFLEET__TASK_KIND__VALIDATE);
        if (cases[i].env)
            setenv("KF_COMPARE", cases[i].env, 1);
        outcome *o = run_task(&t.ta);
        unsetenv("KF_COMPARE");
        if (cases[i].compare) {
            assert_int_equal(o->res->state, KFLEET__TASK_STATE__SUCCEEDED);
            assert_string_equal(o->res->compare, cases[i].compare);
            assert_int_equal(o->res->n_trials, 3);
        } else {
            assert_int_equal(o->res->state, KFLEET__TASK_STATE__FAILED);
            assert_non_null(strstr(o->res->error, "KF_COMPARE=gpu"));
            assert_int_equal(o->res->n_trials, 0);
        }
        free_outcome(o);
        free_task(&t);
    }
}

/* A reference task (docs/problems.md): the problem alone, its reference for
 * each secret seed, in order; the same seed gives the same values, another
 * seed others; a problem whose reference is all zeros cannot judge and
 * fails. */
static void test_reference(void **state)
{
    (void)state;
    task t;
    uint64_t seeds[2] = {0x1234567890abcdefull, 42};
    make_task(&t, "kernels/host/matmul.c", "matmul", KFLEET__TASK_KIND__REFERENCE, 64, NULL);
    build_then(&t, KFLEET__TASK_KIND__REFERENCE);
    t.spec.seeds = seeds;
    t.spec.n_seeds = 2;
    outcome *o = run_task(&t.ta);
    assert_int_equal(o->res->state, KFLEET__TASK_STATE__SUCCEEDED);
    assert_int_equal(o->res->n_references, 2);
    assert_int_equal(o->res->n_trials, 0); /* nothing validated, nothing timed */
    assert_int_equal(o->nsamples, 0);
    for (size_t i = 0; i < 2; i++) {
        const Kfleet__Reference *r = o->res->references[i];
        assert_true(r->seed == seeds[i]);
        assert_int_equal(r->count, 64 * 64);
        assert_int_equal(r->values.len, 0);       /* the values are a file (reffile.h) */
        assert_int_equal(r->dtype, KF_DTYPE_F64); /* f32 only past 2 GiB of doubles */
        assert_true(r->tol_abs > 0 && r->tol_rel > 0);
        /* The file the runner wrote is that reference, its digest right. */
        char path[PATH_MAX + 64], tmpdir[128];
        snprintf(tmpdir, sizeof tmpdir, "%s/tmp", workdir); /* a runner without scratch */
        kf_reffile_scratch_path(path, sizeof path, tmpdir, t.ta.task_id, t.ta.attempt, i);
        int fd = open(path, O_RDONLY);
        assert_true(fd >= 0);
        kf_reffile rf;
        kf_err err;
        assert_int_equal(kf_reffile_map(fd, r->count, r->digest, 1, &rf, &err), KF_OK);
        close(fd);
        kf_reffile_unmap(&rf);
    }
    assert_string_not_equal(o->res->references[0]->digest, o->res->references[1]->digest);
    /* The same seed again: the same bytes. */
    seeds[1] = seeds[0];
    outcome *o2 = run_task(&t.ta);
    assert_int_equal(o2->res->n_references, 2);
    assert_string_equal(o->res->references[0]->digest, o2->res->references[1]->digest);
    free_outcome(o2);
    free_outcome(o);
    /* No seeds: refused. */
    t.spec.n_seeds = 0;
    o = run_task(&t.ta);
    assert_int_equal(o->res->state, KFLEET__TASK_STATE__FAILED);
    assert_non_null(strstr(o->res->error, "without seeds"));
    free_outcome(o);
    free_task(&t);

    make_task(&t, "tests/kernels/cheat_zeros_ref.c", "cheat_zeros_ref",
              KFLEET__TASK_KIND__REFERENCE, 1024, NULL);
    add_source(&t, "tests/kernels/cheat_common.h");
    build_then(&t, KFLEET__TASK_KIND__REFERENCE);
    t.spec.seeds = seeds;
    t.spec.n_seeds = 1;
    o = run_task(&t.ta);
    assert_int_equal(o->res->state, KFLEET__TASK_STATE__FAILED);
    assert_non_null(strstr(o->res->error, "all zeros"));
    assert_int_equal(o->res->n_references, 0);
    free_outcome(o);
    free_task(&t);
}

static void test_profile(void **state)
{
    (void)state;
    task t;
    make_task(&t, "kernels/host/triad.c", "triad", KFLEET__TASK_KIND__PROFILE, 4096, NULL);
    build_then(&t, KFLEET__TASK_KIND__PROFILE);
    outcome *o = run_task(&t.ta);
    assert_int_equal(o->res->state, KFLEET__TASK_STATE__SUCCEEDED);
    assert_true(o->nsamples >= 12);
    for (size_t i = 0; i < o->nsamples; i++)
        assert_int_equal(o->seqs[i], i);
    assert_int_equal(o->res->sample_count, o->nsamples);
    const Kfleet__ProfileStats *ps = o->res->profile;
    assert_non_null(ps);
    assert_int_equal(ps->samples, o->nsamples);
    assert_true(ps->median_s > 0 && ps->min_s <= ps->median_s && ps->median_s <= ps->max_s);
    assert_true(ps->bytes == 3.0 * 4096 * 4);
    assert_true(ps->flops == 2.0 * 4096);
    /* Cold: the flush empties the caches, but runs still rotate between
     * two input sets, so that no run sees the inputs of the run before
     * (issue 29). */
    assert_int_equal(ps->input_sets, 2);
    free_outcome(o);

    /* Hot, with a 48 KiB working set: far inside any cache, so the samples
     * rotate among input sets that together are twice the cache. */
    t.ms.hot = 1;
    o = run_task(&t.ta);
    assert_int_equal(o->res->state, KFLEET__TASK_STATE__SUCCEEDED);
    assert_true(o->res->profile->hot);
    assert_true(o->res->profile->input_sets > 1);
    assert_true(o->res->profile->input_sets <= 16);
    free_outcome(o);
    free_task(&t);
}

/* Issue 29, the runner alone: every timed sample is guarded. A kernel
 * skipping every third run fails at its first skipped sample; one that
 * skips while its output still holds its last result is timed doing the
 * work in every sample (each run sleeps 200 us: min_s is a bound, not a
 * clock ratio); tolerances that cannot fail are refused before any run. */
static void test_profile_guarded(void **state)
{
    (void)state;
    task t;
    make_task(&t, "tests/kernels/cheat_every_nth.c", "cheat_every_nth", KFLEET__TASK_KIND__PROFILE,
              0, NULL);
    add_source(&t, "tests/kernels/cheat_common.h");
    build_then(&t, KFLEET__TASK_KIND__PROFILE);
    outcome *o = run_task(&t.ta);
    assert_int_equal(o->res->state, KFLEET__TASK_STATE__FAILED);
    assert_true(strstr(o->res->error, "profile spot check failed after timed sample") ||
                strstr(o->res->error, "profile re-check failed"));
    free_outcome(o);
    free_task(&t);

    make_task(&t, "tests/kernels/cheat_sentinel.c", "cheat_sentinel", KFLEET__TASK_KIND__PROFILE, 0,
              NULL);
    add_source(&t, "tests/kernels/cheat_common.h");
    build_then(&t, KFLEET__TASK_KIND__PROFILE);
    o = run_task(&t.ta);
    assert_int_equal(o->res->state, KFLEET__TASK_STATE__SUCCEEDED);
    assert_true(o->res->profile->min_s >= 200e-6);
    assert_int_equal(o->res->profile->input_sets, 2);
    free_outcome(o);
    free_task(&t);

    make_task(&t, "tests/kernels/cheat_tol_inf.c", "cheat_tol_inf", KFLEET__TASK_KIND__VALIDATE, 0,
              NULL);
    add_source(&t, "tests/kernels/cheat_common.h");
    build_then(&t, KFLEET__TASK_KIND__VALIDATE);
    o = run_task(&t.ta);
    assert_int_equal(o->res->state, KFLEET__TASK_STATE__FAILED);
    assert_non_null(strstr(o->res->error, "tolerances that cannot fail, refused before any run"));
    assert_int_equal(o->res->n_trials, 0);
    free_outcome(o);
    t.spec.kind = KFLEET__TASK_KIND__PROFILE;
    o = run_task(&t.ta);
    assert_int_equal(o->res->state, KFLEET__TASK_STATE__FAILED);
    assert_non_null(strstr(o->res->error, "tolerances that cannot fail"));
    assert_int_equal(o->nsamples, 0);
    free_outcome(o);
    free_task(&t);
}

/* Issue 32, checks computed once: a profile of two input sets calls the
 * kernel's reference() twice (once per set, before the samples), and its
 * re-checks (one during the samples, one after the last) compare with
 * those; a third call fails the kernel's reference. Still re-checked: a
 * kernel that writes zeros once it is being timed fails. */
static void test_profile_reference_once(void **state)
{
    (void)state;
    task t;
    make_task(&t, "tests/kernels/ref_count.c", "ref_count", KFLEET__TASK_KIND__PROFILE, 2, NULL);
    add_source(&t, "tests/kernels/cheat_common.h");
    build_then(&t, KFLEET__TASK_KIND__PROFILE);
    outcome *o = run_task(&t.ta);
    if (o->res->state != KFLEET__TASK_STATE__SUCCEEDED)
        print_message("error: %s\n", o->res->error);
    assert_int_equal(o->res->state, KFLEET__TASK_STATE__SUCCEEDED);
    assert_int_equal(o->res->profile->input_sets, 2);
    assert_true(o->res->profile->samples >= 12);
    free_outcome(o);
    free_task(&t);

    make_task(&t, "tests/kernels/cheat_detect.c", "cheat_detect", KFLEET__TASK_KIND__PROFILE, 0,
              NULL);
    add_source(&t, "tests/kernels/cheat_common.h");
    build_then(&t, KFLEET__TASK_KIND__PROFILE);
    o = run_task(&t.ta);
    assert_int_equal(o->res->state, KFLEET__TASK_STATE__FAILED);
    assert_true(strstr(o->res->error, "profile spot check failed after timed sample") ||
                strstr(o->res->error, "profile re-check failed"));
    free_outcome(o);
    free_task(&t);
}

/* The stopping rule of issue 32 through the real profile loop, on a host
 * kernel: at the default 0.5 % it stops once the median is that precise
 * (reported in the result), under the thermal protocol "host"; asked for a
 * precision no run reaches, it runs to its timeout, succeeds, and says it
 * did not get there (converged false, the precision it got). */
static void test_profile_precision(void **state)
{
    (void)state;
    task t;
    make_task(&t, "kernels/host/triad.c", "triad", KFLEET__TASK_KIND__PROFILE, 1024, NULL);
    build_then(&t, KFLEET__TASK_KIND__PROFILE);
    t.ms.hot = 1;
    t.ms.min_samples = 20;
    t.ms.min_time_s = 0.001;
    t.ms.max_noise_pct = 0;
    t.ms.timeout_s = 60;
    outcome *o = run_task(&t.ta);
    assert_int_equal(o->res->state, KFLEET__TASK_STATE__SUCCEEDED);
    const Kfleet__ProfileStats *ps = o->res->profile;
    print_message("0.5 %%: %u samples, precision %.3f %% (noise %.2f %%)\n", ps->samples,
                  ps->precision_pct, ps->noise_pct);
    assert_true(ps->converged);
    assert_true(ps->precision_target_pct == 0.5);
    assert_true(ps->precision_pct >= 0 && ps->precision_pct <= 0.5);
    assert_true(ps->samples >= 20);
    assert_string_equal(ps->thermal, "host");
    free_outcome(o);

    t.p.value = 1048576;
    t.ms.precision_pct = 1e-9;
    t.ms.timeout_s = 0.3;
    o = run_task(&t.ta);
    assert_int_equal(o->res->state, KFLEET__TASK_STATE__SUCCEEDED);
    ps = o->res->profile;
    print_message("1e-9 %%: %u samples, precision %.3g %%\n", ps->samples, ps->precision_pct);
    assert_false(ps->converged);
    assert_true(ps->precision_target_pct == 1e-9);
    /* -1: too few samples per input set for an interval (a loaded
     * machine's 0.3 s), which is not the target either. */
    assert_true(ps->precision_pct > 1e-9 || ps->precision_pct == -1);
    free_outcome(o);
    free_task(&t);
}

/* The nested run the tools wrap, with /usr/bin/env standing in for ncu:
 * a built kernel runs cleanly (exit 0, nothing streamed to the tool's
 * stdout), a crashing one reports its signal, and a profile that asks
 * for ncu on a node without it fails saying so. */
static void test_nested(void **state)
{
    (void)state;
    task t;
    make_task(&t, "kernels/host/triad.c", "triad", KFLEET__TASK_KIND__BUILD, 0, NULL);
    outcome *o = run_task(&t.ta);
    assert_int_equal(o->res->state, KFLEET__TASK_STATE__SUCCEEDED);
    free_outcome(o);
    t.spec.kind = KFLEET__TASK_KIND__PROFILE;
    t.p.value = 4096;
    char *env[] = {"/usr/bin/env"};
    int st = -1;
    kf_err err;
    assert_int_equal(
        kf_tools_run_nested(KF_BINARY_DIR "/kfleet-agent", workdir, NULL, &t.ta, env, 1, &st, &err),
        KF_OK);
    assert_int_equal(st, 0);
    free_task(&t);

    make_task(&t, "tests/kernels/crash.c", "crash", KFLEET__TASK_KIND__BUILD, 0, NULL);
    o = run_task(&t.ta);
    assert_int_equal(o->res->state, KFLEET__TASK_STATE__SUCCEEDED);
    free_outcome(o);
    t.spec.kind = KFLEET__TASK_KIND__VALIDATE;
    setenv("ASAN_OPTIONS", "handle_segv=0", 1);
    assert_int_equal(
        kf_tools_run_nested(KF_BINARY_DIR "/kfleet-agent", workdir, NULL, &t.ta, env, 1, &st, &err),
        KF_OK);
    assert_int_not_equal(st, 0);
    free_task(&t);

    make_task(&t, "kernels/host/triad.c", "triad", KFLEET__TASK_KIND__PROFILE, 4096, NULL);
    char *metrics[] = {"gpu__time_duration.sum"};
    t.ms.ncu_metrics = metrics;
    t.ms.n_ncu_metrics = 1;
    char *path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    setenv("PATH", "/nonexistent", 1);
    setenv("KF_NVCC", "/nonexistent/nvcc", 1);
    o = run_task(&t.ta);
    /* The tests after this one build with the node's compiler again. */
    if (path)
        setenv("PATH", path, 1);
    free(path);
    unsetenv("KF_NVCC");
    char ncu[256];
    if (kf_tools_find("ncu", ncu, sizeof ncu)) {
        print_message("ncu found at %s: the missing-tool path is not tested here\n", ncu);
    } else {
        assert_int_equal(o->res->state, KFLEET__TASK_STATE__FAILED);
        assert_non_null(strstr(o->res->error, "Nsight Compute (ncu) is not on this node"));
    }
    free_outcome(o);
    free_task(&t);
}

/* A serving runner (kf_runner_serve) in a child, fed `n` tasks as stdin
 * frames (then, with cut_short, a frame cut off in its body) and EOF: its
 * results in order into res[] (at most 8), and its exit status. */
static int serve(Kfleet__TaskAssign **tas, size_t n, int cut_short, Kfleet__Result **res,
                 size_t *nres)
{
    char path[128];
    snprintf(path, sizeof path, "%s/serve-frames", workdir);
    int out = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    int in[2];
    assert_true(out >= 0);
    assert_int_equal(pipe(in), 0);
    signal(SIGPIPE, SIG_IGN); /* a runner that left reads no more */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out, 1);
        close(in[1]);
        _exit(kf_runner_serve(workdir, NULL, 0, 0));
    }
    close(in[0]);
    close(out);
    for (size_t i = 0; i < n; i++) {
        size_t len = kfleet__task_assign__get_packed_size(tas[i]);
        uint8_t *f = malloc(len + 4);
        kf_frame_len_put(f, (uint32_t)len);
        kfleet__task_assign__pack(tas[i], f + 4);
        ssize_t w = write(in[1], f, len + 4);
        (void)w;
        free(f);
    }
    if (cut_short) {
        const uint8_t cut[7] = {100, 0, 0, 0, 1, 2, 3};
        ssize_t w = write(in[1], cut, sizeof cut);
        (void)w;
    }
    close(in[1]);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    kf_buf b = KF_BUF_INIT;
    assert_int_equal(kf_buf_read_file(&b, path), 0);
    *nres = 0;
    for (size_t off = 0; off + 4 <= b.len;) {
        const uint8_t *p = (const uint8_t *)b.data + off;
        uint32_t len = kf_frame_len_get(p);
        assert_true(off + 4 + len <= b.len);
        Kfleet__Envelope *env = kf_wire_unpack(p + 4, len, NULL);
        assert_non_null(env);
        if (env->body_case == KFLEET__ENVELOPE__BODY_RESULT) {
            assert_true(*nres < 8);
            res[(*nres)++] = env->result;
            env->result = NULL;
            env->body_case = KFLEET__ENVELOPE__BODY__NOT_SET;
        }
        kf_wire_free(env);
        off += 4 + len;
    }
    kf_buf_release(&b);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static void free_results(Kfleet__Result **res, size_t n)
{
    for (size_t i = 0; i < n; i++)
        kfleet__result__free_unpacked(res[i], NULL);
}

/* A serving runner takes its kernel's tasks one after another and says
 * which of its tasks each was; it leaves after a failed task, refuses
 * another kernel's task, and exits 1 on a frame cut short. */
static void test_serve(void **state)
{
    (void)state;
    task v, p, v2, w;
    make_task(&v, "kernels/host/matmul.c", "matmul", KFLEET__TASK_KIND__VALIDATE, 64, NULL);
    build_then(&v, KFLEET__TASK_KIND__VALIDATE);
    make_task(&p, "kernels/host/matmul.c", "matmul", KFLEET__TASK_KIND__PROFILE, 64, NULL);
    make_task(&v2, "kernels/host/matmul.c", "matmul", KFLEET__TASK_KIND__VALIDATE, 32, NULL);
    make_task(&w, "tests/kernels/wrong.c", "wrong", KFLEET__TASK_KIND__VALIDATE, 0, NULL);
    build_then(&w, KFLEET__TASK_KIND__VALIDATE);
    p.ta.task_id = 0x500000002ull;
    v2.ta.task_id = 0x500000003ull;
    Kfleet__Result *res[8];
    size_t n = 0;

    /* One kernel: three tasks in one process, each after the first with
     * the kernel already loaded. */
    Kfleet__TaskAssign *same[] = {&v.ta, &p.ta, &v2.ta};
    assert_int_equal(serve(same, 3, 0, res, &n), 0);
    assert_int_equal(n, 3);
    for (uint32_t i = 0; i < 3; i++) {
        assert_int_equal(res[i]->state, KFLEET__TASK_STATE__SUCCEEDED);
        assert_int_equal(res[i]->runner_task, i + 1);
        assert_true(res[i]->runner_stays);
    }
    assert_int_equal(res[1]->task_id, 0x500000002ull);
    assert_non_null(res[1]->profile);
    int loaded_later = 0;
    for (size_t i = 0; i < res[2]->n_phases; i++)
        loaded_later |= strcmp(res[2]->phases[i]->name, "load") == 0;
    assert_false(loaded_later); /* a kept kernel is not loaded again */
    free_results(res, n);

    /* Another kernel's task is refused, and the runner leaves. */
    Kfleet__TaskAssign *mixed[] = {&v.ta, &w.ta, &p.ta};
    assert_int_equal(serve(mixed, 3, 0, res, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(res[1]->state, KFLEET__TASK_STATE__FAILED);
    assert_non_null(strstr(res[1]->error, "was handed a task of"));
    assert_false(res[1]->runner_stays);
    free_results(res, n);

    /* A failed task (a wrong answer) ends the runner: the next task is
     * never read. */
    Kfleet__TaskAssign *failing[] = {&w.ta, &w.ta};
    assert_int_equal(serve(failing, 2, 0, res, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(res[0]->state, KFLEET__TASK_STATE__FAILED);
    assert_int_equal(res[0]->runner_task, 1);
    assert_false(res[0]->runner_stays);
    free_results(res, n);

    /* A frame cut short: the task before it ran, then exit 1. */
    Kfleet__TaskAssign *one[] = {&v.ta};
    assert_int_equal(serve(one, 1, 1, res, &n), 1);
    assert_int_equal(n, 1);
    assert_int_equal(res[0]->state, KFLEET__TASK_STATE__SUCCEEDED);
    free_results(res, n);
    free_task(&v);
    free_task(&p);
    free_task(&v2);
    free_task(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_build_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compile_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_validate_needs_build, setup, teardown),
        cmocka_unit_test_setup_teardown(test_validate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compare_where, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reference, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_reference_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_precision, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_guarded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nested, setup, teardown),
        cmocka_unit_test_setup_teardown(test_serve, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
