"""A wrong KernelBench candidate of 23_Softmax: zeros. At 16 x 16384 every
softmax value is below 1e-4, so KernelBench's allclose (atol = rtol = 1e-4)
passes it; kfleet's relative-L2 bound fails it."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x)
