"""KernelBench level1/23's Model: torch.softmax over dim 1, into the
problem's output."""
import torch

device = "cuda"


def run(s):
    torch.ops.aten._softmax.out(s["x"], 1, False, out=s["out"])
