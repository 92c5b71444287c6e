"""The output is int64, which the harness does not compare."""
import numpy as np

device = "cpu"
tol_abs = 0
tol_rel = 0


def setup(params, seed):
    return np.zeros(64, dtype=np.int64)


def run(s):
    s[:] = 7


def output(s):
    return s


def reference(s):
    return np.full(64, 7.0)
