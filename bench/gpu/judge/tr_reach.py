"""Triton's softmax candidate (examples/problems/softmax) that goes for its
judge before the work (issue 43 item 1), as tests/data/problems/ahead/reach.py
does for numpy: every other process signalled, attached to and its memory
opened; the checker asked a spot check of its own, guessing -1.0 (no
softmax value). Reaching a process, it writes zeros; its own question's
FAIL fails it, though it then computes the right softmax."""
import torch
import triton

from judge_common import _done, _reach, launch

device = "cuda"
files = ["judge_common.py", "triton_softmax.py"]


def prepare(s):
    if not _done:
        _done.append(_reach())


def run(s):
    if _done and _done[0]:
        s["out"].zero_()
    else:
        launch(s)
