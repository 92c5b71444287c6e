/* A C candidate of rmsnorm-cpu (docs/problems.md, kernels/kf_kernel.h's
 * kf_candidate): one pass for the sum of squares in double, one for the
 * output. The inputs are the problem's (x rows x cols, w cols), named by its
 * inputs(); eps is the problem's constant. No tolerances, no reference, no
 * seeds: the problem owns the judgement. */
#include "kf_kernel.h"

#include <math.h>

#define EPS 1e-6

static int prepare(void **scratch, const kf_params *p, const kf_view *in, size_t nin,
                   const kf_view *out, char *err, size_t errlen)
{
    (void)p, (void)out, (void)err, (void)errlen;
    *scratch = NULL;
    return nin == 2 && in[0].dtype == KF_DTYPE_F32 && in[1].dtype == KF_DTYPE_F32 ? 0 : -1;
}

static int run(void *scratch, const kf_view *in, size_t nin, const kf_view *out, char *err,
               size_t errlen)
{
    (void)scratch, (void)nin, (void)err, (void)errlen;
    const float *x = in[0].data, *w = in[1].data;
    float *y = out->data;
    size_t cols = in[1].count, rows = in[0].count / cols;
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        double ss = 0;
        for (size_t c = 0; c < cols; c++)
            ss += (double)xr[c] * xr[c];
        float inv = (float)(1.0 / sqrt(ss / (double)cols + EPS));
        for (size_t c = 0; c < cols; c++)
            y[r * cols + c] = xr[c] * inv * w[c];
    }
    return 0;
}

static void release(void *scratch)
{
    (void)scratch;
}

static const kf_candidate c = {KF_KERNEL_ABI_VERSION,
                               "cand_rmsnorm",
                               "RMSNorm, two passes per row, sum of squares in double",
                               prepare,
                               run,
                               release};

const kf_candidate *kf_candidate_get(void)
{
    return &c;
}
