"""A right candidate of rmsnorm-cpu that prints what it does, as generated
candidates often do: its output is shown with its row, and it is judged
as any other (docs/problems.md)."""
import numpy as np


def run(s):
    x = s["x"]
    rms = np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + s["eps"])
    s["out"][:] = x / rms * s["w"]
    print("cand_print: rows=%d" % x.shape[0])
