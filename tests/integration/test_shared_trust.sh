#!/usr/bin/env bash
# Shared builds are trusted explicitly (issue 31, item 3). Agent `evil`
# reports the same toolchain as agent `good` but its compiler poisons what
# it builds (-DKF_POISON: every element off by 1). Both reach `kfleet
# serve` over TCP, as agents on other machines do.
#  1. By default (no trust list) nobody installs evil's build: good
#     compiles its own and validates; evil's own rows fail.
#  2. With evil on the operator's trust list (STATE/keys/builders.trust)
#     good installs evil's build, recorded "from evil", and runs the poison
#     (its validation fails) - what the list is for, and the teeth of 3.
#  3. The coordinator restarted with --no-shared-builds on that home: good
#     does not run the poisoned build in its cache; it compiles its own
#     first and validates.
source "$(dirname "$0")/lib.sh"

mkdir -p "$T/bin" "$T/k"
printf '#!/bin/sh\nexec cc -DKF_POISON "$@"\n' >"$T/bin/evilcc"
chmod +x "$T/bin/evilcc"
cp "$KF_SRC/tests/kernels/poisonable.c" "$T/k/poisonable.c"
printf 'name: trust\nkernels:\n  - path: %s\ntasks: [validate]\nnodes: all\nattempts: 1\nmeasure: {seeds: 1}\n' \
  "$T/k/poisonable.c" >"$T/sweep.yaml"

start_evil() {
  export KF_CC="$T/bin/evilcc"
  start_agent evil
  EVIL_PID=$AGENT_PID
  unset KF_CC
}

# state_of ID AGENT: the validation state of AGENT's row in sweep ID.
state_of() {
  "$KFLEET" report "$1" --format json >"$T/r$1.json"
  python3 - "$T/r$1.json" "$2" <<'PY'
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r.get("node") == sys.argv[2]]
print(rows[0]["validation"]["state"] if rows else "none")
PY
}

# sweep_once: submits the sweep, waits for it; prints its id.
sweep_once() {
  "$KFLEET" submit "$T/sweep.yaml" --follow >"$T/follow.out" 2>&1 || true
  "$KFLEET" status --format json | python3 -c 'import json,sys; print(max(s["sweep_id"] for s in json.load(sys.stdin)["sweeps"]))'
}

# --- 1. default: no trust list, TCP agents build only for themselves.
start_serve
start_evil
wait_agents 1
id=$(sweep_once)
[ "$(state_of "$id" evil)" = failed ] || fail "evil's own poisoned build did not fail its validation"
start_agent good
wait_agents 2
id=$(sweep_once)
[ "$(state_of "$id" good)" = succeeded ] ||
  fail "default trust: good ran evil's poisoned build ($(state_of "$id" good))"
grep -q 'from evil' <("$KFLEET" report "$id") && fail "default trust: a build was installed from evil"
pass "no trust list: good compiled its own build and validated; evil's build was not shared"
kill "$SERVE_PID" "$EVIL_PID" "$AGENT_PID" 2>/dev/null || true
wait "$SERVE_PID" "$EVIL_PID" "$AGENT_PID" 2>/dev/null || true

# --- 2. evil trusted by the operator: its build is shared, and it is poison.
export KFLEET_HOME="$T/home2"
mkdir -p "$KFLEET_HOME/state/keys"
chmod 700 "$KFLEET_HOME" "$KFLEET_HOME/state" "$KFLEET_HOME/state/keys"
echo evil >"$KFLEET_HOME/state/keys/builders.trust"
T_AGENTS=$T/agents2
start_serve
export KF_CC="$T/bin/evilcc"
"$KFAGENT" --coordinator "$ENDPOINT" --workdir "$T_AGENTS/evil" --name evil --log-level debug \
  2>>"$T/agent-evil2.log" &
EVIL_PID=$!
PIDS+=("$EVIL_PID")
unset KF_CC
wait_agents 1
id=$(sweep_once)
"$KFAGENT" --coordinator "$ENDPOINT" --workdir "$T_AGENTS/good" --name good --log-level debug \
  2>>"$T/agent-good2.log" &
GOOD_PID=$!
PIDS+=("$GOOD_PID")
wait_agents 2
id=$(sweep_once)
[ "$(state_of "$id" good)" = failed ] ||
  fail "with evil trusted, good did not install its build (the test shows nothing): $(state_of "$id" good)"
"$KFLEET" report "$id" | grep -q 'from evil' || fail "the installed build is not recorded as from evil"
pass "evil on the trust list: good installed its build (recorded 'from evil') and the poison ran"
kill "$SERVE_PID" "$EVIL_PID" "$GOOD_PID" 2>/dev/null || true
wait "$SERVE_PID" "$EVIL_PID" "$GOOD_PID" 2>/dev/null || true

# --- 3. --no-shared-builds on that home: the poisoned build in good's cache
# is never run again.
start_serve --no-shared-builds
"$KFAGENT" --coordinator "$ENDPOINT" --workdir "$T_AGENTS/good" --name good --log-level debug \
  2>>"$T/agent-good3.log" &
GOOD_PID=$!
PIDS+=("$GOOD_PID")
wait_agents 1
id=$(sweep_once)
[ "$(state_of "$id" good)" = succeeded ] ||
  fail "--no-shared-builds: good ran the poisoned build from its cache ($(state_of "$id" good))"
grep -q 'build.untrusted.*agent=good.*built_by=evil' "$T/serve.log" ||
  fail "the coordinator did not say why good builds again"
pass "--no-shared-builds: good compiled its own build instead of the one installed from evil, and validated"
