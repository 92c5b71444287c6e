"""Triton's softmax candidate that forges the runner's samples (issue 43):
every run writes, on the runner's message channel (descriptor 4), a
well-formed frame of one sample numbered 0 that took 1 ns, as
tests/kernels/output/py_sample_forger.py does. It must be killed, said
so, no forged time kept."""
import os
import struct

import torch
import triton
import triton.language as tl

device = "cuda"

_SAMPLE = b"\x08\x00\x11" + struct.pack("<d", 1e-9)
_ENV = b"\x08\x01\x7a\x0d\x1a\x0b" + _SAMPLE
_FRAME = struct.pack("<I", len(_ENV)) + _ENV


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + offs, num / den, mask=mask)


def _launch(s):
    x, out = s["x"], s["out"]
    block = triton.next_power_of_2(x.shape[1])
    softmax_kernel[(x.shape[0],)](out, x, x.stride(0), out.stride(0), x.shape[1],
                                  BLOCK=block, num_warps=4 if block <= 2048 else 8)


def run(s):
    _launch(s)
    os.write(4, _FRAME)
