"""A bf16 matmul launched on a stream of its own when side = 1 (the default
stream when 0): work the events on the legacy stream do not cover, a known
way for generated kernels to look fast. The harness must time it (its
median close to the side = 0 row's), not report the few microseconds
between its events. Params: n, side."""
import torch

device = "cuda"
tol_abs = 1e-1
tol_rel = 1e-2
deterministic = True


def setup(params, seed):
    n = params["n"]
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = (torch.randn(n, n, device="cuda", generator=g) / n ** 0.5).to(torch.bfloat16)
    b = (torch.randn(n, n, device="cuda", generator=g) / n ** 0.5).to(torch.bfloat16)
    side = torch.cuda.Stream() if params["side"] else None
    return {"a": a, "b": b, "c": torch.empty(n, n, device="cuda", dtype=torch.bfloat16),
            "side": side}


def run(s):
    if s["side"] is None:
        torch.matmul(s["a"], s["b"], out=s["c"])
        return
    # The side stream waits for nothing and nothing waits for it.
    with torch.cuda.stream(s["side"]):
        torch.matmul(s["a"], s["b"], out=s["c"])


def output(s):
    return s["c"]


def reference(s):
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return torch.matmul(s["a"].float(), s["b"].float())
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32


def flops(params):
    return 2.0 * params["n"] ** 3
