"""attention_naive — attention written out with torch operations (scores,
softmax, weighted sum: the [seq x seq] matrix goes through memory), the
way it is often first written. Compared with torch_sdpa (the baseline:
fused, flash attention) in examples/torch.yaml. bf16 q, k, v of shape
[batch, heads, seq, dim]; params batch, heads, seq, dim, causal (0/1)."""
import torch

device = "cuda"
tol_abs = 2e-2
tol_rel = 1e-2
deterministic = True


def setup(params, seed):
    b, h, s, d = params["batch"], params["heads"], params["seq"], params["dim"]
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v = (torch.randn(b, h, s, d, device="cuda", generator=g).to(torch.bfloat16)
               for _ in range(3))
    causal = bool(params.get("causal", 0))
    mask = torch.ones(s, s, device="cuda", dtype=torch.bool).tril() if causal else None
    return {"q": q, "k": k, "v": v, "mask": mask, "scale": d ** -0.5,
            "scores": torch.empty(b, h, s, s, device="cuda", dtype=torch.bfloat16),
            "out": torch.empty(b, h, s, d, device="cuda", dtype=torch.bfloat16)}


def run(st):
    torch.matmul(st["q"], st["k"].transpose(-1, -2), out=st["scores"])
    st["scores"].mul_(st["scale"])
    if st["mask"] is not None:
        st["scores"].masked_fill_(~st["mask"], float("-inf"))
    p = torch.softmax(st["scores"].float(), dim=-1).to(torch.bfloat16)
    torch.matmul(p, st["v"], out=st["out"])


def output(st):
    return st["out"]


def reference(st):
    q, k, v = st["q"].float(), st["k"].float(), st["v"].float()
    out = torch.empty_like(q)
    for i in range(q.shape[0]):
        s = torch.matmul(q[i], k[i].transpose(-1, -2)) * st["scale"]
        if st["mask"] is not None:
            s = s.masked_fill(~st["mask"], float("-inf"))
        out[i] = torch.matmul(torch.softmax(s, dim=-1), v[i])
    return out


def bytes(p):
    return 2.0 * 4 * p["batch"] * p["heads"] * p["seq"] * p["dim"]


def flops(p):
    f = 4.0 * p["batch"] * p["heads"] * p["seq"] * p["seq"] * p["dim"]
    return f / 2 if p.get("causal", 0) else f
