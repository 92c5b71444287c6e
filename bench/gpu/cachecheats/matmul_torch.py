"""The honest matmul: torch's, into the problem's output."""
import torch

device = "cuda"


def run(s):
    torch.matmul(s["a"], s["b"], out=s["out"])
