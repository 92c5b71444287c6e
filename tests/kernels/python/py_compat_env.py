"""y = a*x + y, which sets up only in a runner started with CUDA's
forward-compatibility libraries first on its library path: the proof, in
tests/integration/test_compat.sh, that an agent whose toolkit is newer than
its driver hands them to its runners (and one without them does not)."""
import os

import numpy as np

device = "cpu"
tol_abs = 1e-5
tol_rel = 1e-6
deterministic = True


def setup(params, seed):
    compat = os.environ.get("KF_CUDA_COMPAT_DIR", "")
    path = os.environ.get("LD_LIBRARY_PATH", "")
    if not compat:
        raise RuntimeError("no KF_CUDA_COMPAT_DIR in this runner")
    if path.split(":")[0] != compat:
        raise RuntimeError(f"LD_LIBRARY_PATH {path!r} does not start with {compat!r}")
    n = params["n"]
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal(n, dtype=np.float32),
            "y0": rng.standard_normal(n, dtype=np.float32),
            "out": np.empty(n, dtype=np.float32)}


def run(s):
    np.multiply(s["x"], np.float32(2.5), out=s["out"])
    s["out"] += s["y0"]


def output(s):
    return s["out"]


def reference(s):
    return 2.5 * s["x"].astype(np.float64) + s["y0"].astype(np.float64)


def bytes(params):
    return 12.0 * params["n"]


def flops(params):
    return 2.0 * params["n"]
