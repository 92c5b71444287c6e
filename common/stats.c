/* stats — summary statistics of timing samples; see stats.h.
 *
 * Everything but kf_stats_compute works on caller-owned arrays and never
 * allocates; compute makes the one sorted copy and derives the rest from it.
 * The MAD is found by walking outward from the median through the sorted
 * values: the deviations on each side come out already ordered, so merging
 * the two sides yields the sorted deviations without a second array. */
#include "common/stats.h"
#include "common/xalloc.h"
#include "common/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void kf_stats_sort(double *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_double);
}

double kf_stats_quantile(const double *s, size_t n, double q)
{
    if (n == 0)
        return NAN;
    if (q <= 0)
        return s[0];
    if (q >= 1)
        return s[n - 1];
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    double f = pos - (double)lo;
    /* An exact rank returns the value itself, not a blend with its neighbour
     * that rounding could move by an ulp. */
    if (f == 0 || lo + 1 >= n)
        return s[lo];
    return s[lo] + (s[lo + 1] - s[lo]) * f;
}

double kf_stats_mad(const double *s, size_t n)
{
    if (n == 0)
        return NAN;
    double med = kf_stats_quantile(s, n, 0.5);
    /* Values left of `right` are below the median, from `right` on at or
     * above it; each step takes the smaller deviation of the two sides. */
    size_t right = 0;
    while (right < n && s[right] < med)
        right++;
    size_t left = right; /* one past the next left candidate */
    size_t want = n / 2; /* index of the upper middle deviation */
    double prev = 0, cur = 0;
    for (size_t k = 0; k <= want; k++) {
        double dl = left > 0 ? med - s[left - 1] : INFINITY;
        double dr = right < n ? s[right] - med : INFINITY;
        prev = cur;
        if (dl <= dr) {
            cur = dl;
            left--;
        } else {
            cur = dr;
            right++;
        }
    }
    return n % 2 ? cur : (prev + cur) / 2;
}

double kf_stats_mean(const double *v, size_t n)
{
    if (n == 0)
        return NAN;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    return sum / (double)n;
}

double kf_stats_stddev(const double *v, size_t n)
{
    if (n < 2)
        return NAN;
    /* Two passes: the one-pass sum-of-squares formula loses the digits that
     * matter when the spread is tiny next to the mean, as timings' is. */
    double mean = kf_stats_mean(v, n), var = 0;
    for (size_t i = 0; i < n; i++)
        var += (v[i] - mean) * (v[i] - mean);
    return sqrt(var / (double)(n - 1));
}

void kf_stats_median_ci(const double *s, size_t n, double *lo, double *hi)
{
    *lo = *hi = NAN;
    if (n < 6)
        return;
    /* 1-based ranks j = floor(n/2 - 0.98 sqrt(n)), k = ceil(1 + n/2 + 0.98 sqrt(n)) */
    double half = 0.98 * sqrt((double)n);
    long j = (long)floor((double)n / 2 - half), k = (long)ceil(1 + (double)n / 2 + half);
    if (j < 1)
        j = 1;
    if (k > (long)n)
        k = (long)n;
    *lo = s[j - 1];
    *hi = s[k - 1];
}

static double half_width_pct(double lo, double med, double hi)
{
    if (isnan(lo) || isnan(hi) || !(med > 0))
        return INFINITY;
    return fmax(med - lo, hi - med) / med * 100.0;
}

double kf_stats_precision_pct(const kf_stats *st)
{
    return half_width_pct(st->ci_lo, st->median, st->ci_hi);
}

/* The next point of sorted s from *i: a run of values each within the
 * jitter of the one before, at its middle value (*pt). 1, 0 past the end,
 * -1 for a run wider than two jitters (no grid). */
static int next_point(const double *s, size_t n, size_t *i, double *pt)
{
    const double eps = KF_STATS_TICK_JITTER_S;
    if (*i >= n)
        return 0;
    size_t first = *i, j = first + 1;
    while (j < n && s[j] - s[j - 1] <= eps)
        j++;
    *i = j;
    if (s[j - 1] - s[first] > 2 * eps)
        return -1;
    *pt = s[first + (j - 1 - first) / 2];
    return 1;
}

/* kf_stats_timer_tick of sorted values, in three walks over their points
 * and nothing allocated: the smallest step, the tick over all the steps
 * (the smallest alone is off by the jitter, which k steps would multiply),
 * then every step whole ticks within the jitter of both ends. */
static double tick_sorted(const double *s, size_t n)
{
    const double eps = KF_STATS_TICK_JITTER_S;
    if (n < 64)
        return 0;
    size_t i = 0, np = 0;
    double pt, prev = 0, first = 0, step = INFINITY, ticks = 0;
    int r;
    while ((r = next_point(s, n, &i, &pt)) == 1) {
        if (++np > n / 4)
            return 0;
        if (np == 1)
            first = pt;
        else
            step = fmin(step, pt - prev);
        prev = pt;
    }
    if (r < 0 || np < 3)
        return 0;
    for (i = 0, np = 0; next_point(s, n, &i, &pt) == 1; prev = pt)
        ticks += np++ ? round((pt - prev) / step) : 0;
    double tick = (prev - first) / ticks;
    for (i = 0, np = 0; next_point(s, n, &i, &pt) == 1; prev = pt) {
        double k = round((pt - prev) / tick);
        if (np++ && (k < 1 || fabs(pt - prev - k * tick) > 2 * eps))
            return 0;
    }
    /* A tick near the jitter would take any values for a grid. */
    return tick >= 8 * eps ? tick : 0;
}

int kf_stats_stop_precise(const kf_stop_rule *r, const double *v, const uint32_t *set, size_t n,
                          double timed_s, double *achieved_pct)
{
    double got = INFINITY, median = NAN, tick = 0;
    if (n >= 6) {
        kf_stats st;
        if (kf_stats_compute_sets(v, set, n, &st) == KF_OK) {
            got = kf_stats_precision_pct(&st);
            median = st.median;
            tick = st.tick;
        }
    }
    if (achieved_pct)
        *achieved_pct = got;
    if (!kf_stats_floors_met(r, n, timed_s))
        return 0;
    if (got <= r->precision_pct)
        return 1;
    return r->by_tick && tick > 0 && got / 100.0 * median <= tick * (1 + 1e-9);
}

double kf_stats_timer_tick(const double *v, size_t n)
{
    if (n < 64)
        return 0;
    double *s = kf_xmalloc(n * sizeof *s);
    memcpy(s, v, n * sizeof *s);
    kf_stats_sort(s, n);
    double tick = tick_sorted(s, n);
    free(s);
    return tick;
}

int kf_stats_floors_met(const kf_stop_rule *r, size_t n, double timed_s)
{
    return n >= r->min_samples &&
           (timed_s >= r->min_time_s || (r->time_floor_samples && n >= r->time_floor_samples));
}

/* Every figure from one sorted copy of all the samples. */
static void pooled(double *s, size_t n, kf_stats *out)
{
    kf_stats_sort(s, n);
    out->tick = tick_sorted(s, n);
    out->n = n;
    out->sets = 1;
    out->min = s[0];
    out->max = s[n - 1];
    out->median = kf_stats_quantile(s, n, 0.5);
    out->p10 = kf_stats_quantile(s, n, 0.1);
    out->p90 = kf_stats_quantile(s, n, 0.9);
    kf_stats_median_ci(s, n, &out->ci_lo, &out->ci_hi);
    out->mean = kf_stats_mean(s, n);
    out->stddev = kf_stats_stddev(s, n);
    if (n >= 2 && out->median > 0)
        out->noise_pct = 1.4826 * kf_stats_mad(s, n) / out->median * 100.0;
    if (n >= 2 && out->mean > 0)
        out->rsd_pct = out->stddev / out->mean * 100.0;
}

/* The median over input sets: the mean of the sets' medians, its interval
 * from theirs (independent estimates: the half-widths add in quadrature,
 * over the count), and the noise as the spread of each sample around its
 * own set's median. The pooled median of a kernel whose time depends on
 * its inputs sits between the sets' modes, where few samples fall: its
 * interval stays wide however many samples come (voxelize on an H200:
 * sets at 82.4 and 86.1 us, 80,443 samples, still +-0.8 %). */
static void by_set(const double *v, const uint32_t *set, size_t n, unsigned nsets, double *s,
                   kf_stats *out)
{
    double sum = 0, lo2 = 0, hi2 = 0, med[KF_STATS_MAX_SETS];
    unsigned present = 0;
    int ci_known = 1;
    for (unsigned k = 0; k < nsets; k++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (set[i] == k)
                s[m++] = v[i];
        med[k] = NAN;
        if (m == 0)
            continue;
        kf_stats_sort(s, m);
        double lo, hi;
        med[k] = kf_stats_quantile(s, m, 0.5);
        kf_stats_median_ci(s, m, &lo, &hi);
        sum += med[k];
        present++;
        if (isnan(lo) || isnan(hi)) {
            ci_known = 0;
        } else {
            lo2 += (med[k] - lo) * (med[k] - lo);
            hi2 += (hi - med[k]) * (hi - med[k]);
        }
    }
    out->sets = present;
    out->median = sum / present;
    out->ci_lo = ci_known ? out->median - sqrt(lo2) / present : NAN;
    out->ci_hi = ci_known ? out->median + sqrt(hi2) / present : NAN;
    out->noise_pct = NAN;
    if (n >= 2 && out->median > 0) {
        for (size_t i = 0; i < n; i++)
            s[i] = v[i] - med[set[i]];
        kf_stats_sort(s, n);
        out->noise_pct = 1.4826 * kf_stats_mad(s, n) / out->median * 100.0;
    }
}

int kf_stats_compute_sets(const double *v, const uint32_t *set, size_t n, kf_stats *out)
{
    out->n = 0;
    out->sets = 0;
    out->ci_lo = out->ci_hi = NAN;
    out->median = out->mean = out->min = out->max = NAN;
    out->stddev = out->p10 = out->p90 = out->noise_pct = out->rsd_pct = NAN;
    out->tick = 0;
    if (n == 0)
        return KF_OK;
    unsigned nsets = 1;
    for (size_t i = 0; set && i < n; i++) {
        if (set[i] >= KF_STATS_MAX_SETS)
            return KF_EINVAL;
        if (set[i] + 1 > nsets)
            nsets = set[i] + 1;
    }
    double *s = kf_xmalloc(n * sizeof *s);
    memcpy(s, v, n * sizeof *s);
    pooled(s, n, out);
    if (nsets > 1)
        by_set(v, set, n, nsets, s, out);
    free(s);
    return KF_OK;
}

int kf_stats_compute(const double *v, size_t n, kf_stats *out)
{
    return kf_stats_compute_sets(v, NULL, n, out);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

uint32_t kf_stats_median_u32(const uint32_t *v, size_t n)
{
    uint32_t *s = kf_xmalloc((n ? n : 1) * sizeof *s);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i])
            s[k++] = v[i];
    qsort(s, k, sizeof *s, cmp_u32);
    uint32_t m = k ? (k % 2 ? s[k / 2] : (uint32_t)(((uint64_t)s[k / 2 - 1] + s[k / 2]) / 2)) : 0;
    free(s);
    return m;
}
