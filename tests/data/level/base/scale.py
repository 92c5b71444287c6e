"""The baseline candidate of scale."""
import numpy as np


def run(s):
    np.multiply(s["x"], 2, out=s["out"])
