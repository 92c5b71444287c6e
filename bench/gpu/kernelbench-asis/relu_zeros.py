"""A wrong KernelBench-format candidate of level1/19_ReLU: zeros (fails)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.zeros_like(x)
