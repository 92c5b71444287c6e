"""The honest twin of the numpy skipping cheats (py_cheat_sentinel,
py_cheat_input_id, py_cheat_every_nth): the work and the floor on every
call. For kfleet's anti-cheat tests."""
import time

import numpy as np

device = "cpu"
tol_abs = 1e-6
tol_rel = 1e-6
deterministic = True


def run(s):
    compute(s)


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
