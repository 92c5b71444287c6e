"""KernelBench level1/1 (square matmul) at n = 768 float32 on the GPU,
KernelBench's fp32 check (atol = rtol = 1e-4): the shape issue 43's output
cache passed at 15.33x torch, 401.6 "TFLOP/s". Params: n."""
import torch

device = "cuda"
atol = 1e-4
rtol = 1e-4


def setup(params, seed):
    g = torch.Generator(device="cuda").manual_seed(seed % (1 << 63))
    n = params["n"]
    a = torch.rand(n, n, device="cuda", generator=g)
    b = torch.rand(n, n, device="cuda", generator=g)
    return {"a": a, "b": b, "out": torch.empty(n, n, device="cuda")}


def output(s):
    return s["out"]


def reference(s):
    return s["a"].double() @ s["b"].double()


def bytes(params):
    return 12.0 * params["n"] ** 2


def flops(params):
    return 2.0 * params["n"] ** 3
