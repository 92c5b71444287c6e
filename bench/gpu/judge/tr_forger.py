"""Triton's softmax candidate that forges the runner's samples (issue 43):
every run writes, on the runner's message channel (descriptor 4), a
well-formed frame of one sample numbered 0 that took 1 ns, as
tests/kernels/output/py_sample_forger.py does. It must be killed, said
so, no forged time kept."""
import os

import torch
import triton

from judge_common import FRAME, launch

device = "cuda"
files = ["judge_common.py", "triton_softmax.py"]


def run(s):
    launch(s)
    os.write(4, FRAME)
