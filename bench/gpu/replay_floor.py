#!/usr/bin/env python3
"""bench/gpu/replay_floor.py SAMPLES REPORT.json... — the profile's stopping
rule (0.5 % at 95 %, at least 20 samples) replayed on the samples stored
in kfleet JSON reports, with the time floor of 10 ms also met by SAMPLES
samples (agent/runner/harness.h KF_DEFAULT_TIME_FLOOR_SAMPLES; a huge
SAMPLES is the 10 ms floor alone). Per report: the samples taken, those
the rule needs, and how far the early medians sit from each row's median
of all its samples (worst and 90th percentile, %)."""
import bisect
import json
import math
import statistics
import sys


def ci_half_pct(srt):
    n = len(srt)
    m = statistics.median(srt)
    k = max(int(math.floor(n / 2 - 1.96 * math.sqrt(n) / 2)), 0)
    j = min(int(math.ceil(n / 2 + 1.96 * math.sqrt(n) / 2)), n - 1)
    return max(m - srt[k], srt[j] - m) / m * 100


def main(argv):
    cap = int(argv[1])
    for path in argv[2:]:
        taken = need_all = 0
        shifts = []
        for r in json.load(open(path))["rows"]:
            s = (r.get("profile") or {}).get("sample_seconds") or []
            if not s:
                continue
            full = statistics.median(s)
            need, srt, acc = len(s), [], 0.0
            for i, x in enumerate(s, 1):
                bisect.insort(srt, x)
                acc += x
                if i >= 20 and (acc >= 0.01 or i >= cap) and ci_half_pct(srt) <= 0.5:
                    need = i
                    break
            shifts.append(abs(statistics.median(s[:need]) / full - 1) * 100)
            taken += len(s)
            need_all += need
        shifts.sort()
        if not shifts:
            print(f"{path}: no row with samples")
            continue
        print(f"{path}: {len(shifts)} rows, {taken} samples taken, {need_all} under the rule "
              f"({taken / max(need_all, 1):.1f}x fewer); median shift worst {shifts[-1]:.2f} %, "
              f"p90 {shifts[int(len(shifts) * 0.9)]:.2f} %")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv)
