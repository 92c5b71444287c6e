"""softmax's problem (docs/problems.md): row softmax of a rows x cols
float32 matrix on the GPU. It owns the judgement: the inputs from the secret
seed, the reference (float64, on the CPU, never in a candidate's process),
the tolerances, bytes and FLOPs. The candidates beside it (Triton, CUDA C,
a torch extension, torch itself) bring only run(s). Params: rows, cols."""
import torch

device = "cuda"
tol_abs = 1e-6
tol_rel = 1e-4


def setup(params, seed):
    g = torch.Generator(device="cuda").manual_seed(seed % (1 << 63))
    x = torch.randn(params["rows"], params["cols"], device="cuda", dtype=torch.float32,
                    generator=g) * 4.0
    return {"x": x, "out": torch.empty_like(x)}


def inputs(s):                       # what a C candidate reads
    return [s["x"]]


def output(s):
    return s["out"]


def reference(s):
    return torch.softmax(s["x"].double().cpu(), dim=-1)


def bytes(params):
    return 8.0 * params["rows"] * params["cols"]


def flops(params):
    return 5.0 * params["rows"] * params["cols"]
