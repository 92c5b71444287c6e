"""KernelBench level1/1 (Square matrix multiplication) at its own size,
N = 4096: C = A @ B of two N x N float32 matrices, torch.rand inputs. The
reference in float64 on the GPU; KernelBench's fp32 check. Params: n."""
import torch

device = "cuda"
atol = 1e-4
rtol = 1e-4


def setup(params, seed):
    g = torch.Generator(device="cuda").manual_seed(seed % (1 << 63))
    n = params["n"]
    a = torch.rand(n, n, device="cuda", generator=g)
    b = torch.rand(n, n, device="cuda", generator=g)
    return {"A": a, "B": b, "out": torch.empty(n, n, device="cuda")}


def output(s):
    return s["out"]


def reference(s):
    return s["A"].double() @ s["B"].double()


def bytes(params):
    return 12.0 * params["n"] ** 2


def flops(params):
    return 2.0 * params["n"] ** 3
