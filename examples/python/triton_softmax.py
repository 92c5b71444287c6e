"""triton_softmax — the fused row softmax of Triton's tutorial: one program
per row, the whole row in registers (cols up to 16384), max, exponentials
and sum in one pass over memory. Params: rows, cols. Compare it with
torch_softmax (the baseline) in examples/torch.yaml."""
import torch
import triton
import triton.language as tl

device = "cuda"
tol_abs = 1e-6
tol_rel = 1e-5
deterministic = True


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + offs, num / den, mask=mask)


def setup(params, seed):
    rows, cols = params["rows"], params["cols"]
    if cols > 16384:
        raise ValueError("cols = %d: this kernel holds a row in registers, at most 16384" % cols)
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(rows, cols, device="cuda", dtype=torch.float32, generator=g)
    block = triton.next_power_of_2(cols)
    warps = 4 if block <= 2048 else 8 if block <= 8192 else 16
    return {"x": x, "out": torch.empty_like(x), "block": block, "warps": warps}


def run(s):
    x, out = s["x"], s["out"]
    softmax_kernel[(x.shape[0],)](out, x, x.stride(0), out.stride(0), x.shape[1],
                                  BLOCK=s["block"], num_warps=s["warps"])


def output(s):
    return s["out"]


def reference(s):
    return torch.softmax(s["x"].double().cpu(), dim=-1)


def bytes(params):
    return 8.0 * params["rows"] * params["cols"]


def flops(params):
    return 5.0 * params["rows"] * params["cols"]
