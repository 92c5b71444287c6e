/* stats — summary statistics of timing samples: median, mean, min/max,
 * standard deviation, percentiles and relative noise.
 *
 * The report recomputes every figure from the samples in the store with
 * these functions, never from the summary an agent sent; other modules use
 * them the same way. Quantiles interpolate linearly between closest ranks
 * (numpy's default, "type 7"), so the median of an even count is the mean of
 * the two middle values. The noise is the robust relative spread
 * 1.4826 * MAD / median in percent — the agent's stop criterion
 * (agent/runner/harness.c): for normal samples it equals the relative standard
 * deviation, but a few preemption outliers do not inflate it. The relative
 * standard deviation (stddev / mean) is kept beside it.
 *
 * Written here rather than taken from a library: a few dozen lines, and GSL
 * would be a large dependency for them. */
#ifndef KF_STATS_H
#define KF_STATS_H

#include <stddef.h>
#include <stdint.h>

typedef struct kf_stats {
    size_t n;
    double median, mean, min, max;
    double stddev;    /* sample standard deviation (n - 1); NAN when n < 2 */
    double p10, p90;  /* 10th and 90th percentiles */
    double noise_pct; /* 1.4826 * MAD / median * 100; NAN when n < 2 or median <= 0 */
    double rsd_pct;   /* stddev / mean * 100; NAN when n < 2 or mean <= 0 */
    /* A distribution-free 95 % confidence interval of the median: the order
     * statistics at ranks n/2 -+ 1.96 sqrt(n)/2 (binomial, normal
     * approximation); NAN when n < 6, where it would be the whole range. */
    double ci_lo, ci_hi;
    /* How many input sets the median is over: 1, the plain median of the
     * samples; K > 1 (kf_stats_compute_sets), the mean of the K sets'
     * medians, whose interval and noise are taken within each set. */
    unsigned sets;
    /* The tick of the timer the samples show (kf_stats_timer_tick), 0: none. */
    double tick;
} kf_stats;

/* A profile runs its kernel on at most this many input sets. */
#define KF_STATS_MAX_SETS 64

/* Fills out from n values (not modified; a sorted copy is made). With n == 0
 * every figure is NAN and out->n is 0. Returns 0 or KF_ENOMEM. */
int kf_stats_compute(const double *v, size_t n, kf_stats *out);

/* The same for samples each taken on input set set[i] (NULL: all on one).
 * With samples on K > 1 sets, the median reported is the mean of the sets'
 * medians: the kernel's time on the sweep's mix of inputs, which a pooled
 * median is not when the sets take different times (it falls between
 * their modes, and wanders there). Its 95 % interval combines the sets'
 * intervals (half-widths in quadrature over K), and noise_pct is the
 * spread of the samples around their own set's median; min, max, mean,
 * the percentiles and rsd_pct stay those of all the samples. KF_EINVAL
 * when a set index is KF_STATS_MAX_SETS or more. */
int kf_stats_compute_sets(const double *v, const uint32_t *set, size_t n, kf_stats *out);

/* The 95 % confidence interval of the median of n sorted values (see
 * kf_stats.ci_lo); both NAN when n < 6. */
void kf_stats_median_ci(const double *sorted, size_t n, double *lo, double *hi);

/* How precisely the median is known: the half-width of its 95 % interval
 * (the wider side of ci_lo, ci_hi), in percent of the median; INFINITY
 * where those are NAN or the median is not positive. */
double kf_stats_precision_pct(const kf_stats *st);

/* The profile's stopping rule (issue 32): stop when the reported statistic,
 * the median (over input sets where there are several), is known to precision_pct at 95 %, once
 * past the floors (kf_stats_floors_met). A distribution-free
 * interval (order statistics), not a mean's standard error: timing samples
 * are skewed and carry preemption outliers, which widen a mean's interval
 * and move the mean, but not the median's. The spread of the samples (their
 * noise) does not decide: noisy samples take more of them to pin the median
 * down, quiet ones stop at the floors. */
typedef struct kf_stop_rule {
    size_t min_samples;
    double min_time_s;
    /* Where non-zero, this many samples also meet the time floor (see
     * kf_stats_floors_met). */
    size_t time_floor_samples;
    double precision_pct;
    /* Where non-zero, a median whose half-width is within one tick of the
     * timer the samples show (kf_stats_timer_tick) is precise too: the
     * median is one of the timer's values, and no more samples place it
     * finer than its neighbours. */
    int by_tick;
} kf_stop_rule;

/* Whether n samples of timed_s seconds in all are past r's floors: at
 * least min_samples, and min_time_s seconds of them or (where set)
 * time_floor_samples of them. */
int kf_stats_floors_met(const kf_stop_rule *r, size_t n, double timed_s);

/* 1 when the n samples v (unsorted; not modified), taken on input sets
 * set (NULL: one) in timed_s seconds, meet rule r, else 0. *achieved_pct
 * (may be NULL) is the precision the median has (kf_stats_precision_pct of
 * kf_stats_compute_sets; INFINITY while n < 6 or a set has fewer than 6),
 * computed even when the floors are not met yet. Past the floors, a
 * half-width over precision_pct still meets the rule within one tick of the
 * samples' timer where r->by_tick. */
int kf_stats_stop_precise(const kf_stop_rule *r, const double *v, const uint32_t *set, size_t n,
                          double timed_s, double *achieved_pct);

/* The tick of the timer that gave the n samples v (seconds, unsorted; not
 * modified), where they show one: every value within KF_STATS_TICK_JITTER_S
 * of a grid's point (values within it of each other are one point; at least
 * 3 points, whole ticks apart, each holding 4 samples on average or more; a
 * tick of 8 jitters or more). 0 where they do not: a fine timer (the host's
 * clock), under 64 samples, or values off any grid; a value off the grid
 * gives a finer tick or none, never a coarser one. CUPTI on an H200 gives
 * 32 ns steps with 1 ns of conversion jitter: a 2.3 us kernel's median
 * cannot be known to 0.5 % (11.5 ns) there, and a rule asking it ran to
 * 7,000 samples where 1,000 had it within a tick. */
#define KF_STATS_TICK_JITTER_S 1.5e-9
double kf_stats_timer_tick(const double *v, size_t n);

/* Sorts v ascending in place (the input the functions below want). */
void kf_stats_sort(double *v, size_t n);
/* The q-quantile (0 <= q <= 1) of sorted values; NAN when n == 0.
 * kf_stats_quantile(s, n, 0.5) is the median. */
double kf_stats_quantile(const double *sorted, size_t n, double q);
/* The median absolute deviation from the median, of sorted values, without
 * allocating; NAN when n == 0. */
double kf_stats_mad(const double *sorted, size_t n);
/* Arithmetic mean; NAN when n == 0. */
double kf_stats_mean(const double *v, size_t n);
/* Sample standard deviation (divides by n - 1); NAN when n < 2. */
double kf_stats_stddev(const double *v, size_t n);

/* The median of the non-zero values (0 stands for "no reading": a sample
 * taken without NVML); 0 when there are none. */
uint32_t kf_stats_median_u32(const uint32_t *v, size_t n);

#endif
