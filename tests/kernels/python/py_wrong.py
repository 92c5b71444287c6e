"""Adds one too many: validation fails on values, not on an error."""
import numpy as np

device = "cpu"
tol_abs = 1e-6
tol_rel = 1e-6


def setup(params, seed):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal(params["n"]).astype(np.float32),
            "out": np.zeros(params["n"], dtype=np.float32)}


def run(s):
    np.add(s["x"], 1.0, out=s["out"])


def output(s):
    return s["out"]


def reference(s):
    return s["x"].astype(np.float64)
