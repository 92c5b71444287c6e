"""Writes zeros and brings a reference of zeros: the relative check has
nothing to measure against. kfleet fails the validation as vacuous (as
tests/kernels/cheat_zeros_ref.c)."""
import numpy as np

device = "cpu"
tol_abs = 1e-6
tol_rel = 1e-6
deterministic = True


def run(s):
    s["out"][:] = 0


def reference(s):
    return np.zeros(len(s["x"]))


def setup(params, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 1000, params["n"]).astype(np.float32)
    return {"x": x, "out": np.zeros_like(x), "calls": 0,
            "every": params.get("every", 3)}


def output(s):
    return s["out"]


def bytes(params):
    return 8.0 * params["n"]
