/* stats — summary statistics of samples; see stats.h. */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double kf_stats_quantile(const double *s, size_t n, double q)
{
    if (n == 0)
        return 0;
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    if (lo + 1 >= n)
        return s[n - 1];
    double f = pos - (double)lo;
    return s[lo] * (1 - f) + s[lo + 1] * f;
}

void kf_stats_compute(double *v, size_t n, kf_stats *s)
{
    memset(s, 0, sizeof *s);
    if (n == 0)
        return;
    qsort(v, n, sizeof *v, cmp);
    s->n = n;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    s->mean = sum / (double)n;
    double var = 0;
    for (size_t i = 0; i < n; i++)
        var += (v[i] - s->mean) * (v[i] - s->mean);
    s->stddev = n > 1 ? sqrt(var / (double)(n - 1)) : 0;
    s->rsd_pct = s->mean > 0 ? s->stddev / s->mean * 100.0 : 0;
    s->median = kf_stats_quantile(v, n, 0.5);
    /* MAD needs the deviations sorted; v stays sorted for the caller. */
    double *dev = malloc(n * sizeof *dev);
    if (dev) {
        for (size_t i = 0; i < n; i++)
            dev[i] = fabs(v[i] - s->median);
        qsort(dev, n, sizeof *dev, cmp);
        double mad = kf_stats_quantile(dev, n, 0.5);
        s->noise_pct = s->median > 0 ? 1.4826 * mad / s->median * 100.0 : 0;
        free(dev);
    }
    s->min = v[0];
    s->max = v[n - 1];
    s->p10 = kf_stats_quantile(v, n, 0.1);
    s->p90 = kf_stats_quantile(v, n, 0.9);
}
