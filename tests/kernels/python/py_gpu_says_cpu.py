"""Says device = "cuda" only when imported, not on a line the scheduler
reads: refused, since it would have been given a CPU slot."""
import numpy as np

device = "cpu"
if True:
    device = "cuda"
tol_abs = 0
tol_rel = 0


def setup(params, seed):
    return np.zeros(8, dtype=np.float32)


def run(s):
    pass


def output(s):
    return s


def reference(s):
    return np.zeros(8)
