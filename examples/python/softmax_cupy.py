"""softmax_cupy — the device code of softmax_c.cu (the text between its
markers, byte for byte), compiled by nvcc through CuPy's nvcc backend (the
compiler softmax_c.cu is built with) and launched from Python with the same
grid and block: with softmax_c it shows what launching from Python costs
under kfleet's harness (nothing: the launches queue behind the blocking
kernel). On the H100 this variant's device time is 1.8-2.2 % shorter than
softmax_c's, by Nsight Compute's own times too (docs/benchmarks.md).
Params: rows, cols."""
import cupy
import numpy as np

device = "cuda"
tol_abs = 1e-6
tol_rel = 1e-4
deterministic = True

# kfleet: softmax kernel begin
SOURCE = r"""extern "C" __global__ void softmax_rows(const float *__restrict__ x, float *__restrict__ y,
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
"""
# kfleet: softmax kernel end

_kernel = None


def setup(params, seed):
    global _kernel
    if _kernel is None:
        _kernel = cupy.RawKernel(SOURCE, "softmax_rows", backend="nvcc")
    rows, cols = params["rows"], params["cols"]
    rs = cupy.random.RandomState(seed % (1 << 63))
    x = (rs.uniform(-4.0, 4.0, size=(rows, cols))).astype(cupy.float32)
    return {"x": x, "y": cupy.empty_like(x), "rows": rows, "cols": cols}


def run(s):
    _kernel((s["rows"],), (256,), (s["x"], s["y"], np.int32(s["cols"])))


def output(s):
    return s["y"]


def reference(s):
    x = s["x"].get().astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def bytes(params):
    return 8.0 * params["rows"] * params["cols"]


def flops(params):
    return 5.0 * params["rows"] * params["cols"]
