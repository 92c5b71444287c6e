// softmax_ext_op — the torch side of the extension softmax_ext.py loads:
// checks the tensors and launches softmax_ext_kernel.cu's kernel on torch's
// current stream. kfleet's build task builds it (the file names are on the
// kernel's `extension = [...]` line; this first one names the module).
#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>

extern "C" void softmax_rows_launch(const float *x, float *y, int rows, int cols,
                                    cudaStream_t stream);

static void softmax_out(const torch::Tensor &x, torch::Tensor &y)
{
    TORCH_CHECK(x.is_cuda() && y.is_cuda(), "softmax_out: tensors must be on the GPU");
    TORCH_CHECK(x.scalar_type() == torch::kFloat && y.scalar_type() == torch::kFloat,
                "softmax_out: float32 tensors only");
    TORCH_CHECK(x.dim() == 2 && x.is_contiguous() && y.is_contiguous() &&
                    x.sizes() == y.sizes(),
                "softmax_out: x and y are contiguous rows x cols matrices of one shape");
    softmax_rows_launch(x.data_ptr<float>(), y.data_ptr<float>(), (int)x.size(0),
                        (int)x.size(1), at::cuda::getCurrentCUDAStream().stream());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
    m.def("softmax_out", &softmax_out, "row softmax of x into y (float32, on the GPU)");
}
