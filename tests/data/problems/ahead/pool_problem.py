"""problem.py with its candidates timed on the pool's inputs (fresh_inputs =
False): the answer computed in prepare() and copied in run() passes its
checks there, and claims 2 n^3 FLOPs in a copy's time, more than the host
can do: the report flags it impossible against the host's measured FLOP
ceiling and never ranks it (issue 43 item 3). Params: n."""
import numpy as np

device = "cpu"
atol = 1e-6
rtol = 1e-9
fresh_inputs = False


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
