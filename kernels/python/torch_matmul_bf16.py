"""torch.matmul of bf16 matrices, C[m][n] = A[m][k] @ B[k][n], bf16 out:
the baseline for bf16 GEMMs (params m, n, k)."""
import math

import torch

device = "cuda"
# Inputs scaled by 1/sqrt(k) keep C near unit size; bf16 output rounding
# (2^-9 relative) dominates the error against an fp32 reference.
tol_abs = 5e-2
tol_rel = 1e-2
deterministic = True


def setup(params, seed):
    m, n, k = params["m"], params["n"], params["k"]
    g = torch.Generator(device="cuda").manual_seed(seed)
    s = 1.0 / math.sqrt(k)
    a = (torch.randn(m, k, device="cuda", generator=g) * s).to(torch.bfloat16)
    b = (torch.randn(k, n, device="cuda", generator=g) * s).to(torch.bfloat16)
    return {"a": a, "b": b, "c": torch.empty(m, n, device="cuda", dtype=torch.bfloat16)}


def run(s):
    torch.matmul(s["a"], s["b"], out=s["c"])


def output(s):
    return s["c"]


def reference(s):
    # fp32 on the GPU without TF32: another kernel, in higher precision.
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return torch.matmul(s["a"].float(), s["b"].float())
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32


def bytes(params):
    m, n, k = params["m"], params["n"], params["k"]
    return 2.0 * (m * k + k * n + m * n)


def flops(params):
    return 2.0 * params["m"] * params["n"] * params["k"]
