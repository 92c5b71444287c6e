"""(The pool's inputs: fresh_inputs = False.) KernelBench level1/23 (softmax over dim 1) at 16 x 16384 float32 on the
GPU, KernelBench's fp32 check (atol = rtol = 1e-4): the shape issue 43's
output cache passed at 4.44x torch. Params: batch, dim."""
import torch

device = "cuda"
atol = 1e-4
rtol = 1e-4
fresh_inputs = False


def setup(params, seed):
    g = torch.Generator(device="cuda").manual_seed(seed % (1 << 63))
    x = torch.rand(params["batch"], params["dim"], device="cuda", generator=g)
    return {"x": x, "out": torch.empty_like(x)}


def output(s):
    return s["out"]


def reference(s):
    return torch.softmax(s["x"].double(), dim=1)


def bytes(params):
    return 8.0 * params["batch"] * params["dim"]


def flops(params):
    return 5.0 * params["batch"] * params["dim"]
