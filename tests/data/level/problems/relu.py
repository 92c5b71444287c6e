"""relu (tests/data/level): a problem of the level sweep test. Params: n."""
import numpy as np

device = "cpu"
tol_abs = 1e-6
tol_rel = 1e-6


def setup(params, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(params["n"]).astype(np.float32)
    return {"x": x, "out": np.empty_like(x)}


def output(s):
    return s["out"]


def reference(s):
    x = s["x"].astype(np.float64)
    return np.maximum(x, 0)
