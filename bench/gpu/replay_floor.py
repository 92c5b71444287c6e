#!/usr/bin/env python3
"""bench/gpu/replay_floor.py [--no-tick] SAMPLES REPORT.json... — the
profile's stopping rule (0.5 % at 95 %, at least 20 samples) replayed on the
samples stored in kfleet JSON reports, with the time floor of 10 ms also met
by SAMPLES samples (agent/runner/harness.h KF_DEFAULT_TIME_FLOOR_SAMPLES; a
huge SAMPLES is the 10 ms floor alone) and, unless --no-tick, a half-width
within one tick of the timer the samples show also precise (common/stats.c
kf_stats_timer_tick, ported below). The replay pools the input sets (the
agent's rule takes the mean of the sets' medians). Per report: the samples
taken, those the rule needs, and how far the early medians sit from each
row's median of all its samples (worst and 90th percentile, %)."""
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


JITTER = 1.5e-9


def timer_tick(v):
    """common/stats.c kf_stats_timer_tick: 0 where the values show no grid."""
    n = len(v)
    if n < 64:
        return 0.0
    s = sorted(v)
    pts, first = [], 0
    for i in range(1, n + 1):
        if i < n and s[i] - s[i - 1] <= JITTER:
            continue
        if s[i - 1] - s[first] > 2 * JITTER or len(pts) == n // 4:
            return 0.0
        pts.append(s[first + (i - 1 - first) // 2])
        first = i
    if len(pts) < 3:
        return 0.0
    tick = min(b - a for a, b in zip(pts, pts[1:]))
    tick = (pts[-1] - pts[0]) / sum(round((b - a) / tick) for a, b in zip(pts, pts[1:]))
    for a, b in zip(pts, pts[1:]):
        k = round((b - a) / tick)
        if k < 1 or abs((b - a) - k * tick) > 2 * JITTER:
            return 0.0
    return tick if tick >= 8 * JITTER else 0.0


def main(argv):
    by_tick = "--no-tick" not in argv
    argv = [a for a in argv if a != "--no-tick"]
    cap = int(argv[1])
    for path in argv[2:]:
        taken = need_all = 0
        shifts = []
        for r in json.load(open(path))["rows"]:
            s = (r.get("profile") or {}).get("sample_seconds") or []
            if not s:
                continue
            full = statistics.median(s)
            need, srt, acc, next_check = len(s), [], 0.0, 0
            for i, x in enumerate(s, 1):
                bisect.insort(srt, x)
                acc += x
                # Checked at most every ~1 % of the samples, as the agent does.
                if i >= 20 and (acc >= 0.01 or i >= cap) and i >= next_check:
                    next_check = i + 1 + i // 100
                    half = ci_half_pct(srt)
                    if half <= 0.5 or (by_tick and half / 100 * statistics.median(srt)
                                       <= timer_tick(srt) * (1 + 1e-9)):
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
