"""A right numpy kernel that prints on every run, on stdout and stderr:
its text comes back with its task (docs/reliability.md)."""
import sys

import numpy as np

device = "cpu"
tol_abs = 1e-5
tol_rel = 1e-6
_runs = [0]


def setup(params, seed):
    n = params["n"]
    rng = np.random.default_rng(seed)
    print("py_chatty: setup n=%d" % n, file=sys.stderr)
    return {"x": rng.standard_normal(n, dtype=np.float32), "out": np.empty(n, dtype=np.float32)}


def run(s):
    np.multiply(s["x"], 3.0, out=s["out"])
    _runs[0] += 1
    print("py_chatty: run %d" % _runs[0])


def output(s):
    return s["out"]


def reference(s):
    return 3.0 * s["x"].astype(np.float64)


def bytes(params):
    return 8.0 * params["n"]
