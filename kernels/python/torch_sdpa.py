"""torch.nn.functional.scaled_dot_product_attention on bf16 q, k, v of
shape [batch, heads, seq, dim] (params batch, heads, seq, dim, causal 0/1):
the baseline for attention kernels. SDPA has no out= form, so run() copies
its result into the output tensor: one extra read and write of the output,
under 1 % of the attention's time at seq >= 1024."""
import torch
import torch.nn.functional as F

device = "cuda"
tol_abs = 2e-2
tol_rel = 1e-2
deterministic = False  # the flash backward is not used, but be safe about atomics


def setup(params, seed):
    b, h, s, d = params["batch"], params["heads"], params["seq"], params["dim"]
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (torch.randn(b, h, s, d, device="cuda", generator=g).to(torch.bfloat16)
               for _ in range(3))
    return {"q": q, "k": k, "v": v, "causal": bool(params.get("causal", 0)),
            "out": torch.empty(b, h, s, d, device="cuda", dtype=torch.bfloat16)}


def run(st):
    st["out"].copy_(F.scaled_dot_product_attention(st["q"], st["k"], st["v"],
                                                   is_causal=st["causal"]))


def output(st):
    return st["out"]


def reference(st):
    """The attention written out in fp32, one head-batch at a time."""
    q, k, v = st["q"].float(), st["k"].float(), st["v"].float()
    scale = q.shape[-1] ** -0.5
    out = torch.empty_like(q)
    n = q.shape[-2]
    mask = torch.ones(n, n, device=q.device, dtype=torch.bool).tril() if st["causal"] else None
    for i in range(q.shape[0]):
        s = torch.matmul(q[i], k[i].transpose(-1, -2)) * scale
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        out[i] = torch.matmul(torch.softmax(s, dim=-1), v[i])
    return out


def bytes(p):
    return 2.0 * 4 * p["batch"] * p["heads"] * p["seq"] * p["dim"]


def flops(p):
    f = 4.0 * p["batch"] * p["heads"] * p["seq"] * p["seq"] * p["dim"]
    return f / 2 if p.get("causal", 0) else f
