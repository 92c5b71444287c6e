/* triad_job — what a Slurm user without kfleet submits, once per
 * configuration: the STREAM triad a = b + s*c in fp32 on n elements (the
 * same loop and inputs as kernels/host/triad.c), run until it has at least
 * MIN_SAMPLES samples and MIN_MS of them, printing the median time per run.
 *
 *     triad_job N MIN_SAMPLES MIN_MS
 *
 * bench/slurm/run.sh compiles it once into the shared directory and submits
 * it with sbatch, one job per N; kfleet's side of the comparison profiles
 * the host triad kernel with the same sizes and the same measure settings. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static float urand(uint64_t *x)
{
    return (float)((double)(splitmix(x) >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: triad_job N MIN_SAMPLES MIN_MS\n");
        return 2;
    }
    long n = atol(argv[1]), min_samples = atol(argv[2]);
    double min_s = atof(argv[3]) / 1000.0;
    if (n <= 0 || min_samples <= 0 || min_samples > 100000) {
        fprintf(stderr, "triad_job: bad N or MIN_SAMPLES\n");
        return 2;
    }
    float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    float *c = malloc((size_t)n * sizeof *c);
    double *t = malloc(100000 * sizeof *t);
    if (!a || !b || !c || !t) {
        fprintf(stderr, "triad_job: out of memory\n");
        return 1;
    }
    uint64_t x = 42;
    float s = 1.5f + urand(&x) * 0.25f;
    for (long i = 0; i < n; i++) {
        b[i] = urand(&x);
        c[i] = urand(&x);
        a[i] = 0.0f;
    }
    long k = 0;
    double total = 0;
    while ((k < min_samples || total < min_s) && k < 100000) {
        double t0 = now_s();
        for (long i = 0; i < n; i++)
            a[i] = b[i] + s * c[i];
        __asm__ volatile("" : : "r"(a) : "memory");
        t[k] = now_s() - t0;
        total += t[k++];
    }
    qsort(t, (size_t)k, sizeof *t, cmp);
    printf("n=%ld samples=%ld median_us=%.3f gbps=%.2f\n", n, k, t[k / 2] * 1e6,
           12.0 * (double)n / t[k / 2] * 1e-9);
    free(a);
    free(b);
    free(c);
    free(t);
    return 0;
}
