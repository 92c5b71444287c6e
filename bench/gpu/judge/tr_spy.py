"""Triton's softmax candidate that learns the pool's seeds by wrapping the
problem's setup in its interpreter, and prints them (issue 43, as
tests/data/problems/leaky/spy.py): no seed may reach the report."""
import sys

import torch
import triton

from judge_common import launch

device = "cuda"
files = ["judge_common.py", "triton_softmax.py"]

for _m in list(sys.modules.values()):
    if hasattr(_m, "setup") and hasattr(_m, "reference") and callable(_m.setup):
        _orig = _m.setup

        def _spy(params, seed, _o=_orig):
            print("spy saw seed %d, hex %x" % (seed, seed))
            sys.stderr.write("spy: seed %d\n" % seed)
            return _o(params, seed)

        _m.setup = _spy


def run(s):
    launch(s)
