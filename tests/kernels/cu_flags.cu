/* Fixture for tests/unit/test_build.c: a CUDA kernel that only compiles
 * when the agent applied its //@kfleet flags line. Never run. */
//@kfleet flags: -DKF_TEST_FLAG=7   -DKF_TEST_OTHER
#include "kf_kernel.h"

#if !defined(KF_TEST_FLAG) || KF_TEST_FLAG != 7 || !defined(KF_TEST_OTHER)
#error "the //@kfleet flags line was not applied"
#endif

__global__ void scale(float *x, float s, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] *= s;
}

extern "C" const kf_kernel *kf_kernel_get(void)
{
    return 0;
}
