"""A KernelBench candidate of 19_ReLU 1e-3 off everywhere: outside
KernelBench's fp32 bound (atol = rtol = 1e-4), inside a sweep's 1e-2."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp_min(x, 0.0) + 1e-3
