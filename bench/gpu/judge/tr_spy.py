"""Triton's softmax candidate that learns the pool's seeds by wrapping the
problem's setup in its interpreter, and prints them (issue 43, as
tests/data/problems/leaky/spy.py): no seed may reach the report."""
import sys

import torch
import triton
import triton.language as tl

device = "cuda"

for _m in list(sys.modules.values()):
    if hasattr(_m, "setup") and hasattr(_m, "reference") and callable(_m.setup):
        _orig = _m.setup

        def _spy(params, seed, _o=_orig):
            print("spy saw seed %d, hex %x" % (seed, seed))
            sys.stderr.write("spy: seed %d\n" % seed)
            return _o(params, seed)

        _m.setup = _spy


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
