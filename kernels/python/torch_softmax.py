"""torch.softmax over the last axis of a rows x cols float32 matrix: the
baseline for softmax kernels (params rows, cols)."""
import torch

device = "cuda"
tol_abs = 1e-6
tol_rel = 1e-5
deterministic = True


def setup(params, seed):
    rows, cols = params["rows"], params["cols"]
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(rows, cols, device="cuda", dtype=torch.float32, generator=g)
    return {"x": x, "out": torch.empty_like(x)}


def run(s):
    # The out= form of torch.softmax: it writes the tensor output() returns.
    torch.ops.aten._softmax.out(s["x"], -1, False, out=s["out"])


def output(s):
    return s["out"]


def reference(s):
    return torch.softmax(s["x"].double().cpu(), dim=-1)


def bytes(params):
    return 8.0 * params["rows"] * params["cols"]


def flops(params):
    return 5.0 * params["rows"] * params["cols"]
