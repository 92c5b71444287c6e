"""A wrong KernelBench candidate of 63_conv_standard_2D: the same
computation with other weights (it draws them from a generator of its own),
which must fail: the reference's weights come from the seed both get."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        torch.manual_seed(1234)
        self.conv2d = nn.Conv2d(in_channels, out_channels, (kernel_size, kernel_size), bias=False)

    def forward(self, x):
        return self.conv2d(x)
