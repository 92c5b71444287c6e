"""A kernel of several files (issue 33 item 1): it imports a module of its
own and reads a data file, both listed in its files line, so both travel
with it and enter its hash."""
import numpy as np

import pyf_helper

device = "cpu"
tol_abs = 1e-6
tol_rel = 1e-6
files = ["pyf_helper.py", "pyf_scale.txt"]


def setup(params, seed):
    n = params["n"]
    x = np.random.default_rng(seed).random(n, dtype=np.float32)
    return {"x": x, "out": np.zeros(n, dtype=np.float32), "k": pyf_helper.scale()}


def run(s):
    np.multiply(s["x"], s["k"], out=s["out"])


def output(s):
    return s["out"]


def reference(s):
    return s["x"].astype(np.float64) * pyf_helper.scale()
