"""ahead's cheat: the product made once in prepare(), copied in run()."""
import numpy as np


def prepare(s):
    s["answer"] = s["a"] @ s["b"]


def run(s):
    np.copyto(s["out"], s["answer"])
