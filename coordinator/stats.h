/* stats — summary statistics of timing samples: median, mean, spread and
 * relative noise, computed from the stored samples, never from a summary. */
#ifndef KF_STATS_H
#define KF_STATS_H

#include <stddef.h>

typedef struct kf_stats {
    size_t n;
    double median, mean, min, max, stddev;
    double noise_pct; /* robust: 1.4826 * MAD / median * 100 */
    double rsd_pct;   /* stddev / mean * 100 */
    double p10, p90;
} kf_stats;

/* Sorts v in place and fills s. n == 0 gives all zeros. */
void kf_stats_compute(double *v, size_t n, kf_stats *s);
/* The q-quantile (0..1) of sorted values, linearly interpolated. */
double kf_stats_quantile(const double *sorted, size_t n, double q);

#endif
