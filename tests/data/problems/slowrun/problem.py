"""A small numpy problem whose candidate is slow beside its profile's
timeout (tests/integration/test_profile_timeout.sh): out = 2 x. Params: n
(the length) and k (only to make configurations: each is a profile)."""
import numpy as np

device = "cpu"
tol_abs = 1e-6
tol_rel = 1e-6


def setup(params, seed):
    rng = np.random.default_rng(seed)
    x = rng.random(params["n"], dtype=np.float32) + 1.0
    return {"x": x, "out": np.empty_like(x)}


def output(s):
    return s["out"]


def reference(s):
    return 2.0 * s["x"].astype(np.float64)
