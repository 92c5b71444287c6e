/* compare — an output against its reference on host threads; see
 * compare.h. Moved out of validate.c so that the checker judges with the
 * very same code, on a reference kept in f32 as well as f64. */
#include "runner/compare.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

size_t kf_cmp_dtype_size(kf_dtype t)
{
    switch (t) {
    case KF_DTYPE_F64:
        return 8;
    case KF_DTYPE_F16:
    case KF_DTYPE_BF16:
        return 2;
    default:
        return 4;
    }
}

const char *kf_cmp_dtype_name(kf_dtype t)
{
    switch (t) {
    case KF_DTYPE_F32:
        return "f32";
    case KF_DTYPE_F64:
        return "f64";
    case KF_DTYPE_F16:
        return "f16";
    case KF_DTYPE_BF16:
        return "bf16";
    case KF_DTYPE_I32:
        return "i32";
    }
    return "";
}

static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

double kf_cmp_elem(const void *data, kf_dtype t, size_t i)
{
    switch (t) {
    case KF_DTYPE_F64:
        return ((const double *)data)[i];
    case KF_DTYPE_I32:
        return ((const int32_t *)data)[i];
    case KF_DTYPE_F16:
        return half_to_double(((const uint16_t *)data)[i]);
    case KF_DTYPE_BF16: {
        uint32_t u = (uint32_t)((const uint16_t *)data)[i] << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    default:
        return ((const float *)data)[i];
    }
}

/* Below this, one thread: starting threads costs more than it saves. */
#define SPLIT_MIN (1u << 20)

typedef struct range_job {
    kf_range_fn fn;
    void *ctx;
    unsigned part;
    size_t lo, hi;
} range_job;

static void *range_main(void *arg)
{
    range_job *j = arg;
    j->fn(j->ctx, j->part, j->lo, j->hi);
    return NULL;
}

unsigned kf_par_parts(size_t n, unsigned threads)
{
    unsigned nt = n >= SPLIT_MIN && threads > 1 ? threads : 1;
    return nt > KF_PAR_MAX ? KF_PAR_MAX : nt;
}

static void par_run(size_t n, unsigned nt, kf_range_fn fn, void *ctx)
{
    range_job jobs[KF_PAR_MAX];
    pthread_t tid[KF_PAR_MAX];
    int started[KF_PAR_MAX] = {0};
    for (unsigned t = 0; t < nt; t++) {
        jobs[t] = (range_job){fn, ctx, t, n * t / nt, n * (t + 1) / nt};
        started[t] = t > 0 && pthread_create(&tid[t], NULL, range_main, &jobs[t]) == 0;
    }
    range_main(&jobs[0]);
    for (unsigned t = 1; t < nt; t++) {
        if (started[t])
            pthread_join(tid[t], NULL);
        else
            range_main(&jobs[t]);
    }
}

void kf_par_ranges(size_t n, unsigned threads, kf_range_fn fn, void *ctx)
{
    par_run(n, kf_par_parts(n, threads), fn, ctx);
}

void kf_par_items(size_t n, unsigned threads, kf_range_fn fn, void *ctx)
{
    size_t nt = n < threads ? n : threads;
    par_run(n, nt < 1 ? 1 : nt > KF_PAR_MAX ? KF_PAR_MAX : (unsigned)nt, fn, ctx);
}

unsigned kf_cpus(void)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    return ncpu > 0 ? (unsigned)ncpu : 1;
}

typedef struct part {
    kf_cmp c;
    double diff2, ref2;
} part;

typedef struct ctx {
    const void *out, *ref;
    kf_dtype odt, rdt;
    const kf_tols *t;
    part parts[KF_PAR_MAX];
} ctx;

static void range(void *arg, unsigned pi, size_t lo, size_t hi)
{
    ctx *x = arg;
    part p;
    memset(&p, 0, sizeof p);
    kf_cmp *c = &p.c;
    int close = x->t->close;
    double atol = x->t->atol, rtol = x->t->rtol;
    for (size_t i = lo; i < hi; i++) {
        double o = kf_cmp_elem(x->out, x->odt, i);
        double r = x->rdt == KF_DTYPE_F64 ? ((const double *)x->ref)[i]
                                          : (double)((const float *)x->ref)[i];
        c->ref_nonzero += r != 0;
        if (!isfinite(o)) {
            c->nonfinite++;
            continue;
        }
        double d = fabs(o - r);
        if (d > c->max_abs || (i == lo && d >= c->max_abs)) {
            c->max_abs = d;
            c->max_abs_at = i;
            c->max_abs_out = o;
            c->max_abs_ref = r;
        }
        p.diff2 += d * d;
        p.ref2 += r * r;
        if (close) {
            double bound = atol + rtol * fabs(r);
            /* numpy.isclose: d <= bound; a zero bound (atol 0, ref 0) is
             * met only by d == 0. */
            double ratio = d == 0 ? 0 : bound > 0 ? d / bound : INFINITY;
            c->not_close += d > bound;
            if (ratio > c->close_ratio || (i == lo && ratio >= c->close_ratio)) {
                c->close_ratio = ratio;
                c->close_at = i;
                c->close_out = o;
                c->close_ref = r;
            }
        }
    }
    c->n = hi - lo;
    x->parts[pi] = p;
}

void kf_cmp_run(const void *out, kf_dtype odt, const void *ref, kf_dtype rdt, size_t n,
                const kf_tols *t, unsigned threads, kf_cmp *c)
{
    ctx x = {.out = out, .ref = ref, .odt = odt, .rdt = rdt, .t = t};
    kf_par_ranges(n, threads, range, &x);
    memset(c, 0, sizeof *c);
    double diff2 = 0, ref2 = 0;
    for (unsigned i = 0; i < kf_par_parts(n, threads); i++) {
        const kf_cmp *p = &x.parts[i].c;
        c->n += p->n;
        c->nonfinite += p->nonfinite;
        c->ref_nonzero += p->ref_nonzero;
        if (i == 0 || p->max_abs > c->max_abs) {
            c->max_abs = p->max_abs;
            c->max_abs_at = p->max_abs_at;
            c->max_abs_out = p->max_abs_out;
            c->max_abs_ref = p->max_abs_ref;
        }
        c->not_close += p->not_close;
        if (i == 0 || p->close_ratio > c->close_ratio) {
            c->close_ratio = p->close_ratio;
            c->close_at = p->close_at;
            c->close_out = p->close_out;
            c->close_ref = p->close_ref;
        }
        diff2 += x.parts[i].diff2;
        ref2 += x.parts[i].ref2;
    }
    /* ||out - ref|| / ||ref||, or ||out - ref|| when the reference is all
     * zeros (the check is then vacuous and fails anyway). */
    c->rel = ref2 > 0 ? sqrt(diff2 / ref2) : sqrt(diff2);
}

int kf_cmp_passed(const kf_cmp *c, const kf_tols *t)
{
    return c->nonfinite == 0 && c->ref_nonzero > 0 && c->max_abs <= t->abs && c->rel <= t->rel &&
           (!t->close || c->not_close == 0);
}

void kf_cmp_why(const kf_cmp *c, const kf_tols *t, char *out, size_t len)
{
    out[0] = '\0';
    if (c->nonfinite)
        snprintf(out, len,
                 "%llu of %llu elements are not finite (unwritten ones keep the poison, "
                 "NaN)",
                 (unsigned long long)c->nonfinite, (unsigned long long)c->n);
    else if (c->ref_nonzero == 0)
        snprintf(out, len, "the reference is all zeros: the check would pass an output of zeros");
    else if (t->close && c->not_close)
        snprintf(out, len,
                 "%llu of %llu elements are outside atol + rtol |ref| (atol %.3g, rtol %.3g); the "
                 "worst, element %llu: %.9g against %.9g, %.3g times its bound",
                 (unsigned long long)c->not_close, (unsigned long long)c->n, t->atol, t->rtol,
                 (unsigned long long)c->close_at, c->close_out, c->close_ref, c->close_ratio);
    else if (c->max_abs > t->abs)
        snprintf(out, len, "max abs error %.3g (tolerance %.3g) at element %llu: %.9g against %.9g",
                 c->max_abs, t->abs, (unsigned long long)c->max_abs_at, c->max_abs_out,
                 c->max_abs_ref);
    else if (c->rel > t->rel)
        snprintf(out, len, "relative L2 error %.3g (tolerance %.3g)", c->rel, t->rel);
}

void kf_cmp_spot_add(kf_cmp_spot *s, const kf_tols *t, double out, double ref)
{
    if (!isfinite(out)) {
        s->nonfinite++;
        return;
    }
    double d = fabs(out - ref);
    s->max_abs = d > s->max_abs ? d : s->max_abs;
    s->not_close += t->close && d > t->atol + t->rtol * fabs(ref);
    s->diff2 += d * d;
    s->ref2 += ref * ref;
}

double kf_cmp_spot_rel(const kf_cmp_spot *s)
{
    return s->ref2 > 0 ? sqrt(s->diff2 / s->ref2) : 0;
}
