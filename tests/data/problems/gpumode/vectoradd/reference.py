"""A vector add in GPU MODE's format (reference-kernels' vectoradd_py,
written for the CPU and float32): generate_input(size, seed),
ref_kernel(data), check_implementation."""
import torch
from task import input_t, output_t
from utils import make_match_reference


def ref_kernel(data: input_t) -> output_t:
    a, b, out = data
    out[...] = a + b
    return out


def generate_input(size: int, seed: int) -> input_t:
    gen = torch.Generator()
    gen.manual_seed(seed)
    a = torch.randn(size, size, dtype=torch.float32, generator=gen)
    b = torch.randn(size, size, dtype=torch.float32, generator=gen)
    return a, b, torch.empty(size, size, dtype=torch.float32)


check_implementation = make_match_reference(ref_kernel, rtol=1e-5, atol=1e-6)
