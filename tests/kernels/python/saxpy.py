"""y = a*x + y on the host, in numpy."""
import numpy as np

device = "cpu"
tol_abs = 1e-5
tol_rel = 1e-6
deterministic = True


def setup(params, seed):
    n = params["n"]
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal(n, dtype=np.float32),
            "y0": rng.standard_normal(n, dtype=np.float32),
            "out": np.empty(n, dtype=np.float32), "a": np.float32(2.5)}


def run(s):
    np.multiply(s["x"], s["a"], out=s["out"])
    s["out"] += s["y0"]


def output(s):
    return s["out"]


def reference(s):
    return 2.5 * s["x"].astype(np.float64) + s["y0"].astype(np.float64)


def bytes(params):
    return 12.0 * params["n"]


def flops(params):
    return 2.0 * params["n"]
