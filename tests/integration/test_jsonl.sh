#!/usr/bin/env bash
# `kfleet submit --follow --format jsonl` (issue 30 item 2): the receipt as
# one JSON line, then one line per finished row (kernel, configuration,
# node), each once, with its verdict and median, while the sweep runs; and
# --format jsonl without --follow refused.
source "$(dirname "$0")/lib.sh"

cat >"$T/sweep.yaml" <<YAML
name: jsonl
kernels:
  - name: triad
    params: {n: [64K, 256K]}
  - name: matmul
    params: {n: [64], block: [16]}
tasks: [build, validate, profile]
baseline: triad
measure: {min_samples: 5, min_time: 20ms, max_noise: 50, timeout: 1s}
YAML

set +e
"$KFLEET" submit "$T/sweep.yaml" --format jsonl >"$T/nofollow.out" 2>"$T/nofollow.err"
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "--format jsonl without --follow: exit $rc, want 2"
grep -q "needs --follow" "$T/nofollow.err" || fail "no reason: $(cat "$T/nofollow.err")"
pass "--format jsonl without --follow refused"

start_serve
start_agent a1
wait_agents 1
"$KFLEET" submit "$T/sweep.yaml" --follow --format jsonl >"$T/rows.jsonl" 2>"$T/follow.log" \
  || fail "submit --follow --format jsonl exited $?"
python3 - "$T/rows.jsonl" <<'PY' || fail "the stream: $(cat "$T/rows.jsonl")"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
objs = [json.loads(l) for l in lines]          # every line one JSON object
receipt, rows = objs[0], objs[1:]
assert "sweep_id" in receipt and receipt["configurations"] == 3, receipt
assert len(rows) == 3, f"{len(rows)} rows, want 3"
keys = {(r["kernel"], json.dumps(r["params"], sort_keys=True), r["node"]) for r in rows}
assert len(keys) == 3, "a row sent twice"
for r in rows:
    assert r["schema"] == "kfleet.row/1" and r["sweep_id"] == receipt["sweep_id"], r
    assert r["verdict"] == "passed", (r["kernel"], r["verdict"])
    assert isinstance(r["median_s"], float) and r["median_s"] > 0, r["median_s"]
    assert r["median_s"] == r["profile"]["median_s"]
    assert isinstance(r["flags"], list)
print("rows:", [(r["kernel"], r["params"], r["verdict"], r["median_s"], r["speedup"]) for r in rows])
PY
pass "one JSON object per finished row, each once, with verdict and median"
