"""rest_probe — how a power-bound kernel's time depends on the rest before
each sample and on the GPU's temperature (issue 32's thermal protocol).

Times a bf16 cuBLAS GEMM with CUDA events, one launch per sample, with a
host sleep of `gap` between samples, after a rest; prints per series the
first/last/median sample and the spread, with NVML's temperature. Usage:
python3 rest_probe.py [OUT.json]"""
import json
import subprocess
import sys
import time

import torch


def smi():
    q = "temperature.gpu,clocks.sm,power.draw,clocks_event_reasons.active"
    out = subprocess.run(["nvidia-smi", "--query-gpu=" + q, "--format=csv,noheader,nounits"],
                         capture_output=True, text=True).stdout.strip()
    return out


def series(a, b, n, gap_s):
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(n)]
    for s, e in ev:
        s.record()
        torch.matmul(a, b)
        e.record()
        if gap_s > 0:
            e.synchronize()
            time.sleep(gap_s)
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1e3 for s, e in ev]  # us


def summ(t):
    m = sorted(t)[len(t) // 2]
    return {"first": t[0], "first5": sorted(t[:5])[2], "last20": sorted(t[-20:])[10],
            "median": m, "min": min(t), "max": max(t)}


def main():
    outp = sys.argv[1] if len(sys.argv) > 1 else "rest_probe.json"
    res = {"gpu": torch.cuda.get_device_name(), "series": []}
    for size in (8192, 4096):
        a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        series(a, b, 3, 0)
        gaps = (0, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05) if size == 8192 else (0, 0.002, 0.01)
        for g in gaps:
            time.sleep(2.0)
            before = smi()
            t = series(a, b, 60, g)
            r = {"size": size, "gap_ms": g * 1e3, "smi_before": before, "smi_after": smi(),
                 "samples_us": t, **summ(t)}
            res["series"].append(r)
            print("size %d gap %5.1f ms: first %.0f first5 %.0f last20 %.0f median %.0f "
                  "min %.0f max %.0f | before %s | after %s" %
                  (size, g * 1e3, r["first"], r["first5"], r["last20"], r["median"], r["min"],
                   r["max"], before, r["smi_after"]), flush=True)
    # temperature: a hot GPU after sustained load, then the same burst after a rest
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for label, pre in (("hot", "load"), ("rested10", 10.0), ("rested30", 30.0)):
        if pre == "load":
            t0 = time.time()
            sus = []
            while time.time() - t0 < 15:
                sus += series(a, b, 50, 0)
            print("sustained 15 s: %d samples, median %.0f, last50 median %.0f | %s" %
                  (len(sus), sorted(sus)[len(sus) // 2], sorted(sus[-50:])[25], smi()), flush=True)
            res["sustained_us"] = sus[::10]
        else:
            time.sleep(pre)
        for g in (0.01, 0.02):
            before = smi()
            t = series(a, b, 30, g)
            r = {"label": label, "size": 8192, "gap_ms": g * 1e3, "smi_before": before,
                 "samples_us": t, **summ(t)}
            res["series"].append(r)
            print("%s gap %.0f ms: first %.0f first5 %.0f last20 %.0f median %.0f min %.0f max %.0f"
                  " | before %s" % (label, g * 1e3, r["first"], r["first5"], r["last20"],
                                    r["median"], r["min"], r["max"], before), flush=True)
    json.dump(res, open(outp, "w"))


main()
