"""A kernel of several files (issue 33 item 1): it imports a module of its
own that reads a data file, and a package of its own (a directory), all
listed in its files line, so all travel with it and enter its hash."""
import numpy as np

import pyf_helper
import pyf_pkg

device = "cpu"
tol_abs = 1e-6
tol_rel = 1e-6
files = ["pyf_helper.py", "pyf_scale.txt", "pyf_pkg/"]


def setup(params, seed):
    n = params["n"]
    x = np.random.default_rng(seed).random(n, dtype=np.float32)
    return {"x": x, "out": np.zeros(n, dtype=np.float32), "k": pyf_helper.scale(),
            "b": np.float32(pyf_pkg.offset())}


def run(s):
    np.multiply(s["x"], s["k"], out=s["out"])
    s["out"] += s["b"]


def output(s):
    return s["out"]


def reference(s):
    return s["x"].astype(np.float64) * pyf_helper.scale() + pyf_pkg.offset()
