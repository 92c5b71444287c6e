"""bigref's candidate: numpy's tanh into the output."""
import numpy as np


def run(s):
    np.tanh(s["x"], out=s["out"])
