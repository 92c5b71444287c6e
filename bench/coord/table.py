#!/usr/bin/env python3
"""Turns the RESULT lines of bench/coord/run.sh into the table of
docs/performance.md: one row per figure, with the issue's target and a
verdict, then kfleet's throughput as a ratio to each peer setting."""
import os
import platform
import sys


def parse(path):
    rows = []
    with open(path) as f:
        for line in f:
            if not line.startswith("RESULT "):
                continue
            kv = dict(p.split("=", 1) for p in line.split()[1:])
            rows.append(kv)
    return rows


def find(rows, **want):
    for r in rows:
        if all(r.get(k) == str(v) for k, v in want.items()):
            return r
    return None


def num(x):
    return float(x) if x is not None else None


def fmt(x, unit=""):
    if x is None:
        return "-"
    if x >= 100:
        s = f"{x:,.0f}"
    elif x >= 10:
        s = f"{x:.1f}"
    else:
        s = f"{x:.2f}"
    return s + unit


def verdict(ok):
    return "-" if ok is None else ("PASS" if ok else "**MISS**")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def main():
    rows = parse(sys.argv[1])
    out = []
    add = out.append
    add(f"machine: {os.cpu_count()} cores, {cpu_model()}, {platform.system()} {platform.release()}")
    add("")
    add("| figure | measured | target | verdict |")
    add("| --- | --- | --- | --- |")
    peers = [r for r in rows if r["bench"] in ("beanstalkd", "gearmand")]
    durable = [r for r in peers if r["label"].endswith(("binlog", "sqlite"))]
    for n in (8, 64):
        d = find(rows, bench="dispatch", agents=n)
        if not d:
            continue
        rate = num(d["tasks_per_s"])
        best = max((r for r in durable if r["workers"] == str(n)),
                   key=lambda r: num(r["jobs_per_s"]), default=None)
        add(f"| dispatch, {n} agents, durable (tasks/s, median of {d['runs']}) | {fmt(rate)} "
            f"(min {fmt(num(d['min']))}, max {fmt(num(d['max']))}; "
            f"{d['coord_cpu_us_per_task']} µs coordinator CPU a task) | "
            + ("≥ 20,000" if n == 64 else "-") + " | "
            + (verdict(rate >= 20000) if n == 64 else "-") + " |")
        if best:
            ratio = rate / num(best["jobs_per_s"])
            add(f"| dispatch, {n} agents vs best durable peer ({best['label']}, {n} workers) | "
                f"{ratio:.1f}× ({fmt(num(best['jobs_per_s']))} jobs/s) | ≥ 3× | {verdict(ratio >= 3)} |")
    lat = find(rows, bench="latency")
    if lat:
        p50 = num(lat["submit_to_start_p50_us"])
        add(f"| latency submit-to-start, p50 / p99 ({lat['iterations']} tasks) | "
            f"{p50 / 1000:.2f} / {num(lat['submit_to_start_p99_us']) / 1000:.2f} ms | p50 < 1 ms | "
            f"{verdict(p50 < 1000)} |")
        add(f"| latency result-to-commit, p50 / p99 | "
            f"{num(lat['result_to_commit_p50_us']) / 1000:.2f} / "
            f"{num(lat['result_to_commit_p99_us']) / 1000:.2f} ms | - | - |")
    ing = find(rows, bench="ingest")
    if ing:
        r = num(ing["samples_per_s"])
        add(f"| ingest, {ing['agents']} agents, batches of {ing['batch']} (samples/s committed) | "
            f"{fmt(r)} ({ing['coord_cpu_s_per_million']} coordinator CPU s per million) | "
            f"≥ 1,000,000 | {verdict(r >= 1e6)} |")
    op = find(rows, bench="open")
    if op:
        ms = num(op["open_ms_p50"])
        add(f"| store open after ingest, {num(op['store_mib']):.0f} MiB, every page checked "
            f"(median of {op['runs']}) | {ms:.0f} ms (max {num(op['open_ms_max']):.0f}) | "
            f"< 1 s | {verdict(ms < 1000)} |")
    sc = find(rows, bench="scale")
    if sc:
        cpu = num(sc["idle_cpu_pct"])
        add(f"| {sc['agents']} agents at 1 Hz, idle: coordinator CPU, RSS | {cpu:.1f} % of a core, "
            f"{num(sc['rss_idle_kib']) / 1024:.0f} MiB ({sc['heartbeats_per_s']} heartbeats/s; "
            f"connected in {sc['connect_s']} s) | < 10 % | {verdict(cpu < 10)} |")
        ratio = num(sc["ratio"])
        add(f"| {sc['agents']} agents: sweep of {sc['tasks']} tasks of {sc['task_ms']} ms | "
            f"{num(sc['sweep_s']):.2f} s vs ideal {num(sc['ideal_s']):.2f} s = {ratio:.2f}× | "
            f"≤ 2× | {verdict(ratio <= 2)} |")
    z = find(rows, bench="zmq")
    if z:
        add(f"| ceiling: ZeroMQ DEALER↔ROUTER, CURVE, loopback (round trips/s) | "
            f"{fmt(num(z['roundtrips_per_s_window1']))} one in flight "
            f"({z['rtt_us']} µs), {fmt(num(z['roundtrips_per_s_window64']))} with 64 | - | - |")
    lm = find(rows, bench="lmdb")
    if lm:
        add(f"| ceiling: LMDB durable puts, {lm['batch']} a transaction (puts/s) | "
            f"{fmt(num(lm['puts_per_s']))}; one-put commits: {fmt(num(lm['commits_per_s']))}/s, "
            f"p50 {lm['commit_p50_us']} µs, p99 {lm['commit_p99_us']} µs | - | - |")
    if peers:
        add("")
        add("| peer setting | workers | jobs/s (median of 3) | kfleet (same agent count) ÷ peer |")
        add("| --- | --- | --- | --- |")
        for p in peers:
            d = find(rows, bench="dispatch", agents=p["workers"])
            ratio = (f"{num(d['tasks_per_s']) / num(p['jobs_per_s']):.2f}×" if d else "-")
            add(f"| {p['label']} | {p['workers']} | {fmt(num(p['jobs_per_s']))} | {ratio} |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
