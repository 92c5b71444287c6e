"""bigref's wrong candidate: tanh, but one element off by 1e-6."""
import numpy as np


def run(s):
    np.tanh(s["x"], out=s["out"])
    s["out"].flat[12345] += 1e-6
