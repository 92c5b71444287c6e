/* softmax_ext_kernel — the device code of softmax_c.cu (the text between
 * its markers, byte for byte; tests/integration/test_python.sh checks it),
 * built by kfleet's build task into the torch extension softmax_ext_op
 * with the same nvcc, -O3 and arch as softmax_c, and launched from Python
 * by softmax_ext.py: the same machine code launched from C and from a
 * torch extension. */
#include <cuda_runtime.h>

// kfleet: softmax kernel begin
extern "C" __global__ void softmax_rows(const float *__restrict__ x, float *__restrict__ y,
                                        int cols)
{
    __shared__ float red[32];
    const float *row = x + (size_t)blockIdx.x * cols;
    float *out = y + (size_t)blockIdx.x * cols;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    float m = -__int_as_float(0x7f800000);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        m = fmaxf(m, row[c]);
    for (int o = 16; o; o >>= 1)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (lane == 0)
        red[warp] = m;
    __syncthreads();
    m = lane < nwarps ? red[lane] : -__int_as_float(0x7f800000);
    for (int o = 16; o; o >>= 1)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    __syncthreads();
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        s += __expf(row[c] - m);
    for (int o = 16; o; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0)
        red[warp] = s;
    __syncthreads();
    s = lane < nwarps ? red[lane] : 0.f;
    for (int o = 16; o; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    const float inv = 1.f / s;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        out[c] = __expf(row[c] - m) * inv;
}
// kfleet: softmax kernel end

extern "C" void softmax_rows_launch(const float *x, float *y, int rows, int cols,
                                    cudaStream_t stream)
{
    softmax_rows<<<rows, 256, 0, stream>>>(x, y, cols);
}
