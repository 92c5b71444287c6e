"""A problem whose setup fails on its first seed, saying the seed in its
error and on its stdout (issue 43): a problem's seeds are secret, so the
report shows neither. Params: n."""
import numpy as np

device = "cpu"
tol_abs = 1e-6
tol_rel = 1e-6
_calls = [0]


def setup(params, seed):
    print("leaky problem: setup with seed %d (0x%x)" % (seed, seed))
    if params["n"] == 13:
        raise ValueError("this problem cannot use seed %d" % seed)
    rng = np.random.default_rng(seed)
    x = rng.random(params["n"])
    return {"x": x, "out": np.empty_like(x)}


def output(s):
    return s["out"]


def reference(s):
    return 2 * s["x"]


def bytes(params):
    return 16.0 * params["n"]
