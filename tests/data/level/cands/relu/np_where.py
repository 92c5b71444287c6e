"""relu through np.where."""
import numpy as np


def run(s):
    s["out"][:] = np.where(s["x"] > 0, s["x"], 0)
