"""Memoizes on its inputs' identity, one entry: on the inputs of the call
before, it copies the result it kept. kfleet rotates every run among
K >= 2 input sets, so it computes on every one (as
tests/kernels/cheat_input_id.c)."""
import time

import numpy as np

device = "cpu"
tol_abs = 1e-6
tol_rel = 1e-6
deterministic = True

_last = {"id": None, "out": None}


def run(s):
    s["calls"] += 1
    if _last["id"] == id(s["x"]) and s["calls"] > 2:  # past validation's two runs
        np.copyto(s["out"], _last["out"])
        return
    compute(s)
    _last["id"], _last["out"] = id(s["x"]), s["out"].copy()


FLOOR_S = 200e-6  # a floor under every run that does the work (test_cheats.sh)


def setup(params, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 1000, params["n"]).astype(np.float32)
    return {"x": x, "out": np.zeros_like(x), "calls": 0,
            "every": params.get("every", 3)}


def compute(s):
    np.multiply(s["x"], 2.0, out=s["out"])
    s["out"] += 1.0
    time.sleep(FLOOR_S)


def output(s):
    return s["out"]


def reference(s):
    return 2.0 * s["x"].astype(np.float64) + 1.0


def bytes(params):
    return 8.0 * params["n"]
