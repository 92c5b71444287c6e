"""kfleet's test stand-in for GPU MODE's problems/*/utils.py (its own
code, the same names and contract): make_match_reference(reference,
**kwargs) returns check_implementation(data, output) -> (ok, message)."""
import torch


def match_reference(data, output, reference, rtol=1e-05, atol=1e-08):
    expected = reference(data)
    bad = (output - expected).abs() > atol + rtol * expected.abs()
    n = int(bad.sum())
    if n:
        return False, "mismatch found! custom implementation doesn't match reference: " \
                      "Number of mismatched elements: %d" % n
    return True, ""


def make_match_reference(reference, **kwargs):
    def wrapped(data, output):
        return match_reference(data, output, reference=reference, **kwargs)
    return wrapped
