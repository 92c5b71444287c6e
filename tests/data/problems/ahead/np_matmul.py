"""ahead's honest candidate: the product, every run."""
import numpy as np


def run(s):
    np.matmul(s["a"], s["b"], out=s["out"])
