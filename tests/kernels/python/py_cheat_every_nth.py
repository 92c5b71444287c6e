"""Computes on every Nth call of its process only (N = params every) once
an input set has had its first two calls (all a validation makes of one;
the runner may serve several tasks of this kernel), otherwise returns at
once; with inverse = 1 the other way round: it skips every Nth call only,
which two random re-checks miss (1 - 1/N)^2 of the time. kfleet checks
every timed sample, so the first skipped one fails the profile (as
tests/kernels/cheat_every_nth.c)."""
import time

import numpy as np

device = "cpu"
tol_abs = 1e-6
tol_rel = 1e-6
deterministic = True

_calls = [0]


def run(s):
    s["calls"] += 1
    if s["calls"] > 2:
        _calls[0] += 1
    if s["calls"] > 2 and (_calls[0] % s["every"] == 0) == bool(s["inverse"]):
        return  # "nobody checks this one"
    compute(s)


FLOOR_S = 200e-6  # a floor under every run that does the work (test_cheats.sh)


def setup(params, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 1000, params["n"]).astype(np.float32)
    return {"x": x, "out": np.zeros_like(x), "calls": 0,
            "every": params.get("every", 3), "inverse": params.get("inverse", 0)}


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
