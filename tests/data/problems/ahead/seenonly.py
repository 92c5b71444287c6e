"""ahead's seen-only memo: right on the first inputs it meets (as many as
the validation's seeds), kept by their values, and on those alone; any
other input gets zeros at once. Fresh inputs are judged by no reference,
so only an audit on inputs it never met can catch it: the profile's audits
run on seeds of the pool held out from the validation, which its runner
(serving its profile after its validation) never saw."""
import numpy as np

SEEN = 2  # the sweep's seeds: the validation's inputs
_memo = {}


def run(s):
    a, b = s["a"], s["b"]
    key = (a.flat[:8].tobytes(), b.flat[:8].tobytes(), float(a.sum()), float(b.sum()))
    hit = _memo.get(key)
    if hit is None and len(_memo) < SEEN:
        hit = _memo[key] = a @ b
    if hit is None:
        s["out"].fill(0.0)
    else:
        np.copyto(s["out"], hit)
