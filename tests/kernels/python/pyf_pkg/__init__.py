"""A package of py_with_files.py's own (a directory in its files line): it
travels packed and is unpacked beside the kernel, data file included."""
import os


def offset():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "sub", "offset.txt")) as f:
        return float(f.read())
