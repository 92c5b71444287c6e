"""Writes zeros under tolerances the sweep cannot read from the source (an
expression, not a literal): tol_rel evaluates to 2, which zeros meet. The
runner refuses it before any run, as it does a C kernel's."""
import numpy as np

device = "cpu"
tol_abs = 1e-6
tol_rel = 2 ** 1


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
