#!/usr/bin/env bash
# Build once per fleet (issue 14): four local agents share one toolchain,
# so each kernel of a sweep that runs on all of them is compiled by one
# agent and installed by the other three from its artifact, which the
# coordinator keeps with that build's result. The installed copies are the
# same bytes (one artifact hash), every validation passes on every agent,
# the report says whose artifact each agent runs, and `verify` is clean.
# With --no-shared-builds each agent compiles its own.
source "$(dirname "$0")/lib.sh"

"$KFLEET" run "$KF_SRC/tests/data/sweeps/shared_build.yaml" --agents 4 --format json \
  -o "$T/r.json" >"$T/run.out" 2>"$T/run.log" || fail "kfleet run exited $?: $(tail -3 "$T/run.log")"
python3 - "$T/r.json" <<'PY' || fail "the kernels were not built once"
import collections, json, sys
doc = json.load(open(sys.argv[1]))
builds = collections.defaultdict(list)
for b in doc["builds"]:
    assert b["state"] == "succeeded", b
    builds[b["kernel"]].append(b)
assert sorted(builds) == ["matmul", "reps", "triad"], sorted(builds)
for kernel, bs in sorted(builds.items()):
    nodes = sorted(b["node"] for b in bs)
    assert len(set(nodes)) == 4, f"{kernel}: built for {nodes}, not for each of the 4 agents"
    compiled = [b for b in bs if not b["built_by"] and not b["cached"]]
    assert len(compiled) == 1, f"{kernel}: compiled {len(compiled)} times: {bs}"
    who = compiled[0]["node"]
    for b in bs:
        if b is compiled[0]:
            continue
        assert b["built_by"] == who, f"{kernel} on {b['node']}: built_by {b['built_by']}, not {who}"
        assert b["artifact_hash"] == compiled[0]["artifact_hash"], f"{kernel}: another artifact"
    print(f"ok - {kernel}: compiled once on {who} "
          f"({compiled[0]['compile_s']:.2f} s), installed on {len(bs) - 1} agents")
rows = doc["rows"]
assert rows and all((r.get("validation") or {}).get("state") == "succeeded" for r in rows), \
    [(r["kernel"], (r.get("validation") or {}).get("state")) for r in rows]
assert len({r["node"] for r in rows}) == 4, "not every agent validated"
print(f"ok - {len(rows)} validations passed on 4 agents")
PY
pass "each kernel compiled once for 4 agents with one toolchain"
"$KFLEET" report >"$T/report.txt" || fail "report"
grep -Eq "from local-[0-9]" "$T/report.txt" || fail "the text report does not say whose artifact an agent installed"
pass "the report names the agent that compiled each installed artifact"
"$KFLEET" verify >/dev/null || fail "verify after the shared builds"
pass "verify clean"

# --no-shared-builds (a fresh home: empty caches): every agent compiles.
KFLEET_HOME=$T/home2 "$KFLEET" run "$KF_SRC/tests/data/sweeps/shared_build.yaml" --agents 4 \
  --no-shared-builds --format json -o "$T/r2.json" >/dev/null 2>"$T/run2.log" ||
  fail "kfleet run --no-shared-builds exited $?: $(tail -3 "$T/run2.log")"
python3 - "$T/r2.json" <<'PY' || fail "--no-shared-builds still shared"
import json, sys
bs = json.load(open(sys.argv[1]))["builds"]
assert len(bs) == 12, len(bs)
assert all(b["state"] == "succeeded" and not b["built_by"] and not b["cached"] for b in bs), bs
PY
pass "--no-shared-builds: each of the 4 agents compiled each of the 3 kernels"
