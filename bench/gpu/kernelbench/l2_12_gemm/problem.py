"""KernelBench level2/12 (Gemm, multiply, LeakyReLU) at its own size: x of
1024 x 8192 float32 through nn.Linear(8192, 8192) (its default init, drawn
from the seed), times 2.0, LeakyReLU(0.1); torch.rand inputs. The reference
in float64 on the GPU; KernelBench's fp32 check. Params: batch, in_f, out_f."""
import math

import torch

device = "cuda"
atol = 1e-4
rtol = 1e-4
MULTIPLIER = 2.0
SLOPE = 0.1


def setup(params, seed):
    g = torch.Generator(device="cuda").manual_seed(seed % (1 << 63))
    bound = 1.0 / math.sqrt(params["in_f"])  # nn.Linear's kaiming-uniform bound
    x = torch.rand(params["batch"], params["in_f"], device="cuda", generator=g)
    w = (torch.rand(params["out_f"], params["in_f"], device="cuda", generator=g) * 2 - 1) * bound
    b = (torch.rand(params["out_f"], device="cuda", generator=g) * 2 - 1) * bound
    return {"x": x, "w": w, "b": b, "multiplier": MULTIPLIER, "slope": SLOPE,
            "out": torch.empty(params["batch"], params["out_f"], device="cuda")}


def output(s):
    return s["out"]


def reference(s):
    y = torch.nn.functional.linear(s["x"].double(), s["w"].double(), s["b"].double())
    return torch.nn.functional.leaky_relu(y * s["multiplier"], s["slope"])


def bytes(params):
    return 4.0 * (params["batch"] * params["in_f"] + params["in_f"] * params["out_f"]
                  + 2 * params["batch"] * params["out_f"])


def flops(params):
    return 2.0 * params["batch"] * params["in_f"] * params["out_f"]
