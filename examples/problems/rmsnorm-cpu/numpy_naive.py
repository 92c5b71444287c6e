"""A candidate of rmsnorm-cpu: the formula as written, with temporaries.
Only the computation: no tolerances, reference, setup or seeds (the
problem owns them; docs/problems.md)."""
import numpy as np


def run(s):
    x = s["x"]
    rms = np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + s["eps"])
    s["out"][:] = x / rms * s["w"]
