"""KernelBench level1/40's Model: nn.LayerNorm's computation, into the
problem's output."""
import torch

device = "cuda"


def run(s):
    s["out"].copy_(torch.nn.functional.layer_norm(s["x"], s["w"].shape, s["w"], s["b"], 1e-5))
