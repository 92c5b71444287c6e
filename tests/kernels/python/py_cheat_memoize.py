"""Stops computing on inputs it has seen three times, as a reward-hacked
kernel does: right on every call validation makes, wrong (stale poison)
once profiled. The profile's re-check must catch it as it does the C one
(tests/kernels/cheat_memoize.c)."""
import numpy as np

device = "cpu"
tol_abs = 1e-6
tol_rel = 1e-6
deterministic = True


def setup(params, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(params["n"]).astype(np.float32)
    return {"x": x, "out": np.zeros_like(x), "calls": 0}


def run(s):
    s["calls"] += 1
    if s["calls"] > 3:
        return  # "the output is already there"
    np.multiply(s["x"], 3.0, out=s["out"])


def output(s):
    return s["out"]


def reference(s):
    return 3.0 * s["x"].astype(np.float64)
