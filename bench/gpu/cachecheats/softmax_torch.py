"""The honest softmax: torch's, into the problem's output."""
import torch

device = "cuda"


def run(s):
    torch.ops.aten._softmax.out(s["x"], 1, False, out=s["out"])
