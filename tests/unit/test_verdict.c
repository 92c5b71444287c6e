/* test_verdict — the agent makes a candidate checker's verdicts binding on
 * the runner's Result (agent/verdict.c): a Result that claims success fails
 * when the checker failed an output, judged too few, or never finished, and
 * a validate's trials take the checker's numbers, not the runner's. */
#include "agent/verdict.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* A pipe holding `lines` as the checker would have written them, its read
 * end returned (the write end closed). */
static int verdicts(const char *lines)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    assert_int_equal(write(p[1], lines, strlen(lines)), (ssize_t)strlen(lines));
    close(p[1]);
    return p[0];
}

typedef struct fixture {
    Kfleet__Result res;
    Kfleet__ValidateTrial t[3], *tp[3];
    char why[512];
} fixture;

/* A runner's Result that says every trial passed with no error. */
static void runner_says_passed(fixture *f)
{
    memset(f, 0, sizeof *f);
    kfleet__result__init(&f->res);
    f->res.state = KFLEET__TASK_STATE__SUCCEEDED;
    f->res.tol_abs = 1e-4;
    f->res.tol_rel = 1e-5;
    for (int i = 0; i < 3; i++) {
        kfleet__validate_trial__init(&f->t[i]);
        f->t[i].seed = (uint64_t)i;
        f->t[i].passed = 1;
        f->tp[i] = &f->t[i];
    }
    f->res.trials = f->tp;
    f->res.n_trials = 3;
}

static int apply(fixture *f, const char *lines, uint32_t want)
{
    int fd = verdicts(lines);
    int ok = kf_verdict_apply(fd, want, &f->res, f->why, sizeof f->why, NULL);
    close(fd);
    return ok;
}

static void test_all_passed(void **state)
{
    (void)state;
    fixture f;
    runner_says_passed(&f);
    assert_int_equal(apply(&f,
                           "check 0 ref 0 pass 1 nonfinite 0 max_abs 1e-06 rel 2e-07 not_close 0\n"
                           "check 1 ref 1 pass 1 nonfinite 0 max_abs 2e-06 rel 3e-07 not_close 0\n"
                           "check 2 ref 2 pass 1 nonfinite 0 max_abs 3e-06 rel 4e-07 not_close 0\n"
                           "done checks 3 failed 0 spots 0 spot_failed 0\n",
                           3),
                     1);
    assert_int_equal(f.res.state, KFLEET__TASK_STATE__SUCCEEDED);
    assert_true(!f.res.error || !*f.res.error); /* no reason given */
    assert_true(f.t[2].max_abs_err == 3e-06);   /* the checker's number */
}

/* The runner's Result said passed (its process was tampered with); the
 * checker failed output 1: the Result fails, and its trial says so. */
static void test_checker_overrules_the_runner(void **state)
{
    (void)state;
    fixture f;
    runner_says_passed(&f);
    assert_int_equal(apply(&f,
                           "check 0 ref 0 pass 1 nonfinite 0 max_abs 1e-06 rel 2e-07 not_close 0\n"
                           "check 1 ref 1 pass 0 nonfinite 0 max_abs 2 rel 0.5 not_close 0\n"
                           "check 2 ref 2 pass 1 nonfinite 0 max_abs 3e-06 rel 4e-07 not_close 0\n"
                           "done checks 3 failed 1 spots 0 spot_failed 0\n",
                           3),
                     0);
    assert_int_equal(f.res.state, KFLEET__TASK_STATE__FAILED);
    assert_non_null(
        strstr(f.res.error, "the checker failed the candidate: output 1 (pool seed 1)"));
    assert_false(f.t[1].passed);
    assert_true(f.t[1].max_abs_err == 2);
    assert_true(f.t[0].passed);
}

static void test_unfinished_or_short(void **state)
{
    (void)state;
    fixture f;
    /* No summary line: the checker was killed, or never started. */
    runner_says_passed(&f);
    assert_int_equal(
        apply(&f, "check 0 ref 0 pass 1 nonfinite 0 max_abs 1e-06 rel 2e-07 not_close 0\n", 1), 0);
    assert_int_equal(f.res.state, KFLEET__TASK_STATE__FAILED);
    assert_non_null(strstr(f.res.error, "the checker did not finish"));
    runner_says_passed(&f);
    assert_int_equal(apply(&f, "", 1), 0);
    assert_int_equal(f.res.state, KFLEET__TASK_STATE__FAILED);
    /* Fewer outputs judged than seeds: the others went unjudged. */
    runner_says_passed(&f);
    assert_int_equal(apply(&f,
                           "check 0 ref 0 pass 1 nonfinite 0 max_abs 1e-06 rel 2e-07 not_close 0\n"
                           "done checks 1 failed 0 spots 0 spot_failed 0\n",
                           3),
                     0);
    assert_non_null(strstr(f.res.error, "judged 1 outputs of the 3"));
    /* An output the checker could not match to a reference. */
    runner_says_passed(&f);
    assert_int_equal(
        apply(&f, "check 0 ref 7 bad\ndone checks 1 failed 1 spots 0 spot_failed 0\n", 1), 0);
    assert_non_null(strstr(f.res.error, "was not the problem's output"));
}

/* A failed spot check fails the task: the guard's checks are binding;
 * the bound broken is the reason given. */
static void test_spot_failure_binding(void **state)
{
    (void)state;
    fixture f;
    runner_says_passed(&f);
    assert_int_equal(apply(&f,
                           "check 0 ref 0 pass 1 nonfinite 0 max_abs 1e-06 rel 2e-07 not_close 0\n"
                           "spot 7 ref 1 fail of 256 elements at secret positions, 256 still the "
                           "poison\n"
                           "check 1 ref 0 pass 1 nonfinite 0 max_abs 1e-06 rel 2e-07 not_close 0\n"
                           "done checks 2 failed 0 spots 9 spot_failed 1\n",
                           2),
                     0);
    assert_int_equal(f.res.state, KFLEET__TASK_STATE__FAILED);
    assert_non_null(strstr(f.res.error, "the spot check after timed sample set 7 (pool seed 1) "
                                        "failed: of 256 elements"));
}

/* What the checker said of the agent's references, and a checker that
 * could not judge: the task fails with its reason, even one whose runner
 * failed for its own (the checker's is the cause). */
static void test_references_and_errors(void **state)
{
    (void)state;
    fixture f;
    kf_verdict_refs refs;
    memset(&refs, 0, sizeof refs);
    runner_says_passed(&f);
    const char *d = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    char lines[512];
    snprintf(lines, sizeof lines,
             "verified %s\ncheck 0 ref 0 pass 1 nonfinite 0 max_abs 0 rel 0 not_close 0\n"
             "done checks 1 failed 0 spots 0 spot_failed 0\n",
             d);
    int fd = verdicts(lines);
    assert_int_equal(kf_verdict_apply(fd, 1, &f.res, f.why, sizeof f.why, &refs), 1);
    close(fd);
    assert_int_equal(refs.nverified, 1);
    assert_string_equal(refs.verified[0], d);
    memset(&refs, 0, sizeof refs);
    runner_says_passed(&f);
    f.res.state = KFLEET__TASK_STATE__FAILED;
    f.res.error = "candidate x: checker: no answer (closed): it is gone";
    snprintf(lines, sizeof lines, "damaged %s the reference file %s is damaged\n", d, d);
    fd = verdicts(lines);
    assert_int_equal(kf_verdict_apply(fd, 1, &f.res, f.why, sizeof f.why, &refs), 0);
    close(fd);
    assert_int_equal(refs.ndamaged, 1);
    assert_string_equal(refs.damaged[0], d);
    assert_non_null(strstr(f.res.error, "the checker could not judge the candidate: a reference "
                                        "file on this agent is damaged"));
}

/* A Result that already failed keeps its own reason. */
static void test_runner_failure_kept(void **state)
{
    (void)state;
    fixture f;
    runner_says_passed(&f);
    f.res.state = KFLEET__TASK_STATE__FAILED;
    f.res.error = "kernel cand failed: boom";
    assert_int_equal(apply(&f, "", 3), 0);
    assert_int_equal(f.res.state, KFLEET__TASK_STATE__FAILED);
    assert_string_equal(f.res.error, "kernel cand failed: boom");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_passed),
        cmocka_unit_test(test_spot_failure_binding),
        cmocka_unit_test(test_references_and_errors),
        cmocka_unit_test(test_checker_overrules_the_runner),
        cmocka_unit_test(test_unfinished_or_short),
        cmocka_unit_test(test_runner_failure_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
