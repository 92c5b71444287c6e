"""ahead's late cheat: honest for its first 60 runs (every audit then, one
sample in four, finds it right), then the answer it kept for its output
buffer, whatever the inputs: a candidate betting that the audits thin out
(one in sixteen after the first 32 samples) and that a sample it skips is
not checked. Fresh samples are not judged, so only the audits and re-checks
can catch it."""
import numpy as np

_runs = [0]
_kept = {}


def run(s):
    _runs[0] += 1
    key = id(s["out"])
    if _runs[0] > 60 and key in _kept:
        np.copyto(s["out"], _kept[key])
        return
    np.matmul(s["a"], s["b"], out=s["out"])
    _kept[key] = s["out"].copy()
