/* Tests for common/stats.c on vectors whose figures were worked out by
 * hand: median of odd and even counts, mean, sample standard deviation
 * (n - 1), min/max, p10/p90 by linear interpolation between closest ranks,
 * the robust noise 1.4826 * MAD / median and the relative standard
 * deviation, and the n = 0 and n = 1 edge cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/err.h"
#include "common/stats.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define EPS 1e-12

static void assert_near(double got, double want, double eps)
{
    if (!(fabs(got - want) <= eps))
        fail_msg("got %.17g, want %.17g (eps %g)", got, want, eps);
}

/* Odd count, unsorted input: 1..5 shuffled. */
static void test_odd(void **state)
{
    (void)state;
    double v[] = {5, 1, 3, 2, 4};
    double orig[5];
    memcpy(orig, v, sizeof v);
    kf_stats st;
    assert_int_equal(kf_stats_compute(v, 5, &st), KF_OK);
    /* The input is not sorted in place. */
    assert_memory_equal(v, orig, sizeof v);
    assert_int_equal(st.n, 5);
    assert_near(st.median, 3, EPS);
    assert_near(st.mean, 3, EPS);
    assert_near(st.min, 1, EPS);
    assert_near(st.max, 5, EPS);
    /* Squared deviations 4+1+0+1+4 = 10, over n-1 = 4. */
    assert_near(st.stddev, sqrt(2.5), EPS);
    /* p10: rank 0.1 * 4 = 0.4 -> 1 + 0.4 * (2 - 1); p90: rank 3.6 -> 4.6. */
    assert_near(st.p10, 1.4, EPS);
    assert_near(st.p90, 4.6, EPS);
    /* |x - 3| = 2,2,0,1,1 -> sorted 0,1,1,2,2 -> MAD 1. */
    assert_near(st.noise_pct, 1.4826 * 1.0 / 3.0 * 100.0, 1e-9);
    assert_near(st.rsd_pct, sqrt(2.5) / 3.0 * 100.0, 1e-9);
}

/* Even count: the median is the mean of the two middle values. */
static void test_even(void **state)
{
    (void)state;
    double v[] = {4, 1, 3, 2};
    kf_stats st;
    assert_int_equal(kf_stats_compute(v, 4, &st), KF_OK);
    assert_int_equal(st.n, 4);
    assert_near(st.median, 2.5, EPS);
    assert_near(st.mean, 2.5, EPS);
    assert_near(st.min, 1, EPS);
    assert_near(st.max, 4, EPS);
    /* 2.25 + 0.25 + 0.25 + 2.25 = 5, over 3. */
    assert_near(st.stddev, sqrt(5.0 / 3.0), EPS);
    /* p10: rank 0.3 -> 1.3; p90: rank 2.7 -> 3 + 0.7 = 3.7. */
    assert_near(st.p10, 1.3, EPS);
    assert_near(st.p90, 3.7, EPS);
    /* |x - 2.5| sorted: 0.5,0.5,1.5,1.5 -> MAD (0.5 + 1.5) / 2 = 1. */
    assert_near(st.noise_pct, 1.4826 / 2.5 * 100.0, 1e-9);
    assert_near(st.rsd_pct, sqrt(5.0 / 3.0) / 2.5 * 100.0, 1e-9);
}

/* Interpolation between unevenly spaced values, ten of them:
 * sorted 1,2,4,8,16,32,64,128,256,512. p10: rank 0.9 -> 1 + 0.9 * 1 = 1.9;
 * p90: rank 8.1 -> 256 + 0.1 * 256 = 281.6; median: rank 4.5 -> 24. */
static void test_interpolation(void **state)
{
    (void)state;
    double v[] = {512, 1, 64, 2, 256, 4, 128, 8, 32, 16};
    kf_stats st;
    assert_int_equal(kf_stats_compute(v, 10, &st), KF_OK);
    assert_near(st.median, 24, EPS);
    assert_near(st.p10, 1.9, EPS);
    assert_near(st.p90, 281.6, 1e-9);
    assert_near(st.mean, 1023.0 / 10.0, EPS);
    assert_near(st.min, 1, EPS);
    assert_near(st.max, 512, EPS);
}

/* Timing-like data: nine samples 100..108 us, then one preemption outlier
 * of 10 ms added. The robust noise barely moves, the RSD explodes. */
static void test_outlier(void **state)
{
    (void)state;
    double v[10];
    for (int i = 0; i < 9; i++)
        v[i] = (100.0 + i) * 1e-6;
    kf_stats calm, spiky;
    assert_int_equal(kf_stats_compute(v, 9, &calm), KF_OK);
    /* median 104; |x - 104| = 4,3,2,1,0,1,2,3,4 -> MAD 2. */
    assert_near(calm.median, 104e-6, 1e-18);
    assert_near(calm.noise_pct, 1.4826 * 2.0 / 104.0 * 100.0, 1e-9); /* 2.851 % */
    /* Squared deviations 2 * (16 + 9 + 4 + 1) = 60, over 8. */
    assert_near(calm.rsd_pct, sqrt(7.5) / 104.0 * 100.0, 1e-9); /* 2.633 % */

    v[9] = 10000e-6;
    assert_int_equal(kf_stats_compute(v, 10, &spiky), KF_OK);
    /* median 104.5; |x - 104.5| sorted .5,.5,1.5,1.5,2.5,2.5,3.5,3.5,4.5,9895.5
     * -> MAD (2.5 + 2.5) / 2 = 2.5. */
    assert_near(spiky.median, 104.5e-6, 1e-18);
    assert_near(spiky.noise_pct, 1.4826 * 2.5 / 104.5 * 100.0, 1e-9); /* 3.547 % */
    assert_true(fabs(spiky.noise_pct - calm.noise_pct) < 1.0);
    /* mean 1093.6; the RSD goes from under 3 % to several hundred. */
    assert_near(spiky.mean, 1093.6e-6, 1e-15);
    assert_true(calm.rsd_pct < 3.0);
    assert_true(spiky.rsd_pct > 250.0);
    assert_near(spiky.max, 10000e-6, 1e-18);
}

static void test_empty(void **state)
{
    (void)state;
    kf_stats st;
    memset(&st, 0x5a, sizeof st);
    assert_int_equal(kf_stats_compute(NULL, 0, &st), KF_OK);
    assert_int_equal(st.n, 0);
    assert_true(isnan(st.median));
    assert_true(isnan(st.mean));
    assert_true(isnan(st.min));
    assert_true(isnan(st.max));
    assert_true(isnan(st.stddev));
    assert_true(isnan(st.p10));
    assert_true(isnan(st.p90));
    assert_true(isnan(st.noise_pct));
    assert_true(isnan(st.rsd_pct));
    assert_true(isnan(kf_stats_quantile(NULL, 0, 0.5)));
    assert_true(isnan(kf_stats_mad(NULL, 0)));
    assert_true(isnan(kf_stats_mean(NULL, 0)));
    assert_true(isnan(kf_stats_stddev(NULL, 0)));
}

static void test_single(void **state)
{
    (void)state;
    double v[] = {0.25};
    kf_stats st;
    assert_int_equal(kf_stats_compute(v, 1, &st), KF_OK);
    assert_int_equal(st.n, 1);
    assert_near(st.median, 0.25, 0);
    assert_near(st.mean, 0.25, 0);
    assert_near(st.min, 0.25, 0);
    assert_near(st.max, 0.25, 0);
    assert_near(st.p10, 0.25, 0);
    assert_near(st.p90, 0.25, 0);
    /* No spread from one value. */
    assert_true(isnan(st.stddev));
    assert_true(isnan(st.noise_pct));
    assert_true(isnan(st.rsd_pct));
}

/* A non-positive median or mean leaves the relative figures undefined. */
static void test_zero_median(void **state)
{
    (void)state;
    double v[] = {0, 0, 0};
    kf_stats st;
    assert_int_equal(kf_stats_compute(v, 3, &st), KF_OK);
    assert_near(st.median, 0, 0);
    assert_near(st.stddev, 0, 0);
    assert_true(isnan(st.noise_pct));
    assert_true(isnan(st.rsd_pct));
}

/* The building blocks on their own. */
static void test_helpers(void **state)
{
    (void)state;
    double v[] = {3, 1, 2};
    kf_stats_sort(v, 3);
    assert_near(v[0], 1, 0);
    assert_near(v[1], 2, 0);
    assert_near(v[2], 3, 0);
    assert_near(kf_stats_quantile(v, 3, 0), 1, 0);
    assert_near(kf_stats_quantile(v, 3, 1), 3, 0);
    assert_near(kf_stats_quantile(v, 3, 0.25), 1.5, EPS);
    assert_near(kf_stats_mad(v, 3), 1, 0);
    assert_near(kf_stats_mean(v, 3), 2, 0);
    assert_near(kf_stats_stddev(v, 3), 1, EPS);
    /* An exact rank returns the value itself, bit for bit. */
    double w[] = {0.1, 0.2, 0.3, 0.7, 0.9};
    assert_true(kf_stats_quantile(w, 5, 0.5) == 0.3);
    assert_true(kf_stats_quantile(w, 5, 0.75) == 0.7);
}

/* The report's fixture, 1, 2, 3, 4 and 100 ms: the median must come back
 * bit for bit (its JSON is compared exactly) and the outlier must not make
 * the noise figure. */
/* The median's 95 % interval against the textbook table: for n = 100 the
 * order statistics at ranks 40 and 61 (1-based). Shuffled input, so the
 * sort is exercised; too few values give NAN rather than a false range. */
static void test_median_ci(void **state)
{
    (void)state;
    double v[100];
    for (int i = 0; i < 100; i++)
        v[i] = (double)((i * 37) % 100 + 1); /* a permutation of 1..100 */
    kf_stats st;
    assert_int_equal(kf_stats_compute(v, 100, &st), KF_OK);
    assert_true(st.ci_lo == 40.0);
    assert_true(st.ci_hi == 61.0);
    assert_true(st.ci_lo <= st.median && st.median <= st.ci_hi);
    assert_int_equal(kf_stats_compute(v, 5, &st), KF_OK);
    assert_true(isnan(st.ci_lo) && isnan(st.ci_hi));
    /* n = 20: floor(10 - 4.38) = 5 and ceil(1 + 10 + 4.38) = 16; the normal
     * approximation's rounding is conservative here (exact binomial: 6, 15). */
    double w[20];
    for (int i = 0; i < 20; i++)
        w[i] = (double)(20 - i);
    assert_int_equal(kf_stats_compute(w, 20, &st), KF_OK);
    assert_true(st.ci_lo == 5.0);
    assert_true(st.ci_hi == 16.0);
}

/* Uniform in [base (1 - spread), base (1 + spread)] from a fixed LCG:
 * the same samples on every machine, so no assertion depends on timing. */
static void synth(double *v, size_t n, double base, double spread, uint64_t seed)
{
    uint64_t x = seed;
    for (size_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(x >> 11) / 9007199254740992.0; /* [0, 1) */
        v[i] = base * (1 + spread * (2 * u - 1));
    }
}

/* The first sample count at which the rule stops, streaming the samples
 * in as the profile loop does (one check per sample); 0: never. */
static size_t stops_at_sets(const kf_stop_rule *r, const double *v, const uint32_t *set, size_t n,
                            double *achieved)
{
    double timed = 0;
    for (size_t i = 1; i <= n; i++) {
        timed += v[i - 1];
        if (kf_stats_stop_precise(r, v, set, i, timed, achieved))
            return i;
    }
    return 0;
}

static size_t stops_at(const kf_stop_rule *r, const double *v, size_t n, double *achieved)
{
    return stops_at_sets(r, v, NULL, n, achieved);
}

/* The stopping rule of issue 32 (0.5 % at 95 %, at least 20 samples): quiet
 * samples (+-0.1 %) stop at the sample floor; noisy ones (+-10 %) go on
 * until the median is pinned down, which for a uniform spread of +-10 %
 * takes about (1.96 * 0.1 / 0.5 %)^2 ~ 1,540 samples; the achieved precision
 * is reported either way, and a profile cut short says it did not get
 * there. The floors hold: quiet samples worth less than min_time do not
 * stop. */
static void test_stop_precise(void **state)
{
    (void)state;
    enum { N = 6000 };
    static double quiet[N], noisy[N];
    synth(quiet, N, 100e-6, 0.001, 1);
    synth(noisy, N, 100e-6, 0.10, 2);
    kf_stop_rule r = {.min_samples = 20, .min_time_s = 0.001, .precision_pct = 0.5};
    double got;
    size_t q = stops_at(&r, quiet, N, &got);
    print_message("quiet: stopped after %zu samples, precision %.4f %%\n", q, got);
    assert_int_equal(q, 20);
    assert_true(got <= 0.1);
    size_t z = stops_at(&r, noisy, N, &got);
    print_message("noisy: stopped after %zu samples, precision %.4f %%\n", z, got);
    assert_true(z > 1000 && z < 3000);
    assert_true(got <= 0.5);
    /* Cut off at 200 samples (the timeout): not precise, and how far. */
    assert_int_equal(stops_at(&r, noisy, 200, &got), 0);
    print_message("noisy, 200 samples: precision %.3f %%\n", got);
    assert_true(got > 0.5 && isfinite(got));
    /* The time floor: 20 quiet samples of ~100 us are 2 ms, under 10 ms;
     * it stops at the first count whose samples add up to 10 ms (~100). */
    r.min_time_s = 0.01;
    size_t t = stops_at(&r, quiet, N, &got);
    assert_true(t >= 99 && t <= 101);
    /* Or a count of samples where the rule has one (the agent's 1,000
     * unless the sweep sets min_time): under a floor of 1 s, which 6,000
     * quiet samples of ~100 us never reach, 50 of them stop; without the
     * count they never do. */
    r.min_time_s = 1.0;
    r.time_floor_samples = 50;
    assert_int_equal(stops_at(&r, quiet, N, &got), 50);
    assert_true(got <= 0.1);
    r.time_floor_samples = 0;
    assert_int_equal(stops_at(&r, quiet, N, &got), 0);
    assert_true(kf_stats_floors_met(&r, 20, 1.0) && !kf_stats_floors_met(&r, 19, 1.0));
    r.min_time_s = 0.01;
    /* Too few samples for an interval: never precise. */
    assert_int_equal(kf_stats_stop_precise(&r, quiet, NULL, 5, 1.0, &got), 0);
    assert_true(isinf(got));
}

/* A kernel whose time depends on its inputs (voxelize on an H200: one set
 * at 82.4 us, the other at 86.1 us, +-1 % each, runs alternating): the
 * pooled median falls in the gap between the modes, where no sample is,
 * and is never precise; over sets it is the mean of the two modes, known
 * to 0.5 % within a few dozen samples, whichever set came first. */
static void test_stop_by_set(void **state)
{
    (void)state;
    enum { N = 20000 };
    static double v[N], a[N / 2], b[N / 2];
    static uint32_t set[N], flipped[N];
    synth(a, N / 2, 82.4e-6, 0.01, 3);
    synth(b, N / 2, 86.1e-6, 0.01, 4);
    for (size_t i = 0; i < N; i++) {
        v[i] = i % 2 ? b[i / 2] : a[i / 2];
        set[i] = (uint32_t)(i % 2);
        flipped[i] = 1 - set[i];
    }
    kf_stop_rule r = {.min_samples = 20, .min_time_s = 0.001, .precision_pct = 0.5};
    double got;
    assert_int_equal(kf_stats_stop_precise(&r, v, NULL, N, 1.0, &got), 0);
    print_message("two sets pooled: %d samples, precision %.3f %%\n", N, got);
    assert_true(got > 1.0);
    size_t k = stops_at_sets(&r, v, set, N, &got);
    print_message("two sets by set: stopped after %zu samples, precision %.3f %%\n", k, got);
    assert_true(k >= 20 && k < 200);
    assert_true(got <= 0.5);
    kf_stats st, fl;
    assert_int_equal(kf_stats_compute_sets(v, set, k, &st), KF_OK);
    assert_int_equal(st.sets, 2);
    assert_near(st.median, (82.4e-6 + 86.1e-6) / 2, 84.25e-6 * 0.005);
    assert_true(st.ci_lo < st.median && st.median < st.ci_hi);
    /* The spread is each sample's around its own set's median: about the
     * +-1 % of each set, not the 4.4 % between them. */
    assert_true(st.noise_pct < 1.5);
    /* Which set is called 0 does not matter. */
    assert_int_equal(kf_stats_compute_sets(v, flipped, k, &fl), KF_OK);
    assert_near(fl.median, st.median, 1e-15);
    assert_near(fl.ci_hi, st.ci_hi, 1e-15);
    /* One set: the plain statistics. */
    static uint32_t zeros[N];
    kf_stats one, plain;
    assert_int_equal(kf_stats_compute_sets(v, zeros, 500, &one), KF_OK);
    assert_int_equal(kf_stats_compute(v, 500, &plain), KF_OK);
    assert_int_equal(one.sets, 1);
    assert_true(one.median == plain.median && one.ci_lo == plain.ci_lo &&
                one.noise_pct == plain.noise_pct);
    /* A set index no profile can have is refused, not folded in. */
    set[3] = KF_STATS_MAX_SETS;
    assert_int_equal(kf_stats_compute_sets(v, set, 10, &st), KF_EINVAL);
    /* A set with too few samples for an interval: not precise yet. */
    set[3] = 1;
    set[4] = 2;
    assert_int_equal(kf_stats_stop_precise(&r, v, set, 100, 1.0, &got), 0);
    assert_true(isinf(got));
}

/* A timer of 32 ns ticks with 1 ns of jitter (CUPTI on an H200): a kernel
 * of ~2.32 us whose samples fall half on 2304 ns and half on 2336 ns. Its
 * median sits on the step between two ticks, where the interval never
 * narrows to 0.5 % (11.6 ns): the rule alone never stops on it. Within one
 * tick, by_tick stops it at the floor; a fine timer's samples (the host's
 * clock) show no tick and are never stopped by it. */
static void test_stop_by_tick(void **state)
{
    (void)state;
    enum { N = 4000 };
    static double v[N], fine[N], off[N];
    uint64_t x = 7;
    for (size_t i = 0; i < N; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int jitter = (int)((x >> 33) % 3) - 1; /* -1, 0, +1 ns */
        /* Of 16: 7 on 2304, 7 on 2336, one on each tick beside them. */
        size_t k = (i * 7) % 16;
        double ns = k < 7 ? 2304 : k < 14 ? 2336 : k == 14 ? 2272 : 2368;
        v[i] = (ns + jitter) * 1e-9;
    }
    assert_near(kf_stats_timer_tick(v, N), 32e-9, 1.5e-9);
    /* Under 64 samples, no tick is claimed. */
    assert_true(kf_stats_timer_tick(v, 63) == 0);
    /* A fine timer: no grid. */
    synth(fine, N, 2.32e-6, 0.01, 11);
    assert_true(kf_stats_timer_tick(fine, N) == 0);
    /* A value off the grid gives a finer tick (half: 16 ns), or none (5 ns
     * past that, 11 ns from the nearest point), never a coarser one. */
    memcpy(off, v, sizeof off);
    off[N / 2] = 2320e-9;
    assert_near(kf_stats_timer_tick(off, N), 16e-9, 1.5e-9);
    off[N / 2] = 2325e-9;
    assert_true(kf_stats_timer_tick(off, N) == 0);
    /* The tick over all the steps: the smallest step here is 31 ns (jitter),
     * and 4 ticks of 31 would put 2432 off the grid. */
    double far[200];
    const double at[] = {2240, 2271, 2304, 2432};
    for (size_t i = 0; i < 200; i++)
        far[i] = at[i % 4] * 1e-9;
    assert_near(kf_stats_timer_tick(far, 200), 32e-9, 0.5e-9);
    /* Two points are not enough to call them a grid. */
    double two[100];
    for (size_t i = 0; i < 100; i++)
        two[i] = i % 2 ? 2e-6 : 3e-6;
    assert_true(kf_stats_timer_tick(two, 100) == 0);

    kf_stop_rule r = {
        .min_samples = 20, .min_time_s = 1.0, .time_floor_samples = 1000, .precision_pct = 0.5};
    double got = 0;
    assert_int_equal(stops_at(&r, v, N, &got), 0);
    print_message("on the tick's step: never stopped, precision %.2f %%\n", got);
    assert_true(got > 0.5 && got < 2.0);
    r.by_tick = 1;
    size_t k = stops_at(&r, v, N, &got);
    print_message("within a tick: stopped after %zu samples, precision %.2f %%\n", k, got);
    assert_int_equal(k, 1000);
    assert_true(got * 2.32e-6 / 100 <= 32.5e-9);
    /* A fine timer's noisy samples are not stopped by it before the rule. */
    kf_stop_rule plain = r;
    plain.by_tick = 0;
    synth(fine, N, 2.32e-6, 0.2, 5);
    assert_int_equal(stops_at(&r, fine, N, &got), stops_at(&plain, fine, N, &got));
}

static void test_report_vector(void **state)
{
    (void)state;
    double v[] = {0.004, 0.100, 0.001, 0.003, 0.002};
    kf_stats st;
    assert_int_equal(kf_stats_compute(v, 5, &st), KF_OK);
    assert_true(st.median == 0.003);
    assert_true(st.min == 0.001 && st.max == 0.100);
    /* |x - 3| = 2, 1, 0, 1, 97 -> MAD 1 ms. */
    assert_near(st.noise_pct, 1.4826 * 0.001 / 0.003 * 100.0, 1e-9);
    double same[] = {7, 7, 7, 7};
    assert_near(kf_stats_mad(same, 4), 0, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_odd),           cmocka_unit_test(test_even),
        cmocka_unit_test(test_interpolation), cmocka_unit_test(test_outlier),
        cmocka_unit_test(test_empty),         cmocka_unit_test(test_single),
        cmocka_unit_test(test_zero_median),   cmocka_unit_test(test_helpers),
        cmocka_unit_test(test_report_vector), cmocka_unit_test(test_median_ci),
        cmocka_unit_test(test_stop_precise),  cmocka_unit_test(test_stop_by_set),
        cmocka_unit_test(test_stop_by_tick),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
