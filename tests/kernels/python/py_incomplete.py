"""Lacks reference() and tol_rel: refused at import with what to add."""
import numpy as np

device = "cpu"
tol_abs = 1e-6


def setup(params, seed):
    return np.zeros(8, dtype=np.float32)


def run(s):
    pass


def output(s):
    return s
