"""allclose's answer computed ahead: softmax in prepare(), copied in run().
At 16 x 16384 every softmax value is below atol = 1e-2, so another input's
softmax is within every element's bound: only the distance between the
pool's answers tells it apart (issue 43 item 3)."""
import numpy as np


def prepare(s):
    x = s["x"]
    e = np.exp(x - x.max(axis=1, keepdims=True))
    s["answer"] = e / e.sum(axis=1, keepdims=True)


def run(s):
    np.copyto(s["out"], s["answer"])
