"""Writes zeros under tol_abs = float("inf") and tol_rel = 1: a check that
cannot fail, refused at submit from the literal lines (the sweep
tests/data/sweeps/cheats_tol.yaml must not start)."""
import numpy as np

device = "cpu"
tol_abs = float("inf")
tol_rel = 1.0


def run(s):
    s["out"][:] = 0


def setup(params, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 1000, params["n"]).astype(np.float32)
    return {"x": x, "out": np.zeros_like(x), "calls": 0,
            "every": params.get("every", 3)}


def output(s):
    return s["out"]


def reference(s):
    return 2.0 * s["x"].astype(np.float64) + 1.0


def bytes(params):
    return 8.0 * params["n"]
