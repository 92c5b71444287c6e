"""A float64 matrix product, n x n, for the cheats that keep answers (issue
43 item 3): an answer computed in prepare() and copied in run(), an output
memo keyed by the inputs. Timed samples run on fresh inputs, with audits on
the pool's: the first fails an audit, the second computes every time.
Params: n."""
import numpy as np

device = "cpu"
atol = 1e-6
rtol = 1e-9


def setup(params, seed):
    rng = np.random.default_rng(seed)
    n = params["n"]
    a = rng.random((n, n))
    b = rng.random((n, n))
    return {"a": a, "b": b, "out": np.empty((n, n))}


def output(s):
    return s["out"]


def reference(s):
    return s["a"] @ s["b"]


def bytes(params):
    return 8.0 * 3 * params["n"] ** 2


def flops(params):
    return 2.0 * params["n"] ** 3
