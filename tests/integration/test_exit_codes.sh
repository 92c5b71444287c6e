#!/usr/bin/env bash
# One exit-code table, true for every command (README, `kfleet --help`):
#   0 success; 1 the work failed or kfleet could not do it (a task failed,
#   no coordinator, a store error); 2 bad usage or input (a flag, a value, a
#   file, a name that does not exist).
# Walks every command's error paths and checks each status and that each
# error is one clear line (plus the usage for a usage error). Also: every
# flag a command accepts is in its --help, and what kfleet prints for
# pasting (the agent command of `serve` and `init`) survives the shell.
source "$(dirname "$0")/lib.sh"

# expect CODE WHAT -- CMD...: runs CMD, checks its exit status is CODE and
# that it said something on stderr when it failed.
expect() {
  local want=$1 what=$2
  shift 3
  set +e
  "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  set -e
  [ "$rc" -eq "$want" ] || fail "$what: exit $rc, want $want: $(head -3 "$T/err")"
  if [ "$want" -ne 0 ]; then
    [ -s "$T/err" ] || fail "$what: exit $rc with nothing said on stderr"
  fi
  CHECKED=$((CHECKED + 1))
}
CHECKED=0

# The table is where the README and --help say it is.
"$KFLEET" --help >"$T/help"
grep -q '0 success' "$T/help" && grep -q '1 the work failed' "$T/help" &&
  grep -q '2 bad usage or input' "$T/help" || fail "kfleet --help lacks the exit-code table"
grep -q '2 bad usage or input' "$KF_SRC/README.md" || fail "README lacks the exit-code table"

# ---- nothing has run with this home: no store, no coordinator ----
expect 2 "unknown command" -- "$KFLEET" frobnicate
expect 2 "unknown global flag" -- "$KFLEET" --frob status
expect 2 "help of an unknown command" -- "$KFLEET" help frobnicate
expect 2 "bad --log-level" -- "$KFLEET" --log-level loud status
expect 1 "status, no coordinator" -- "$KFLEET" status
expect 2 "status, extra argument" -- "$KFLEET" status extra
expect 1 "report, no store" -- "$KFLEET" report
expect 1 "verify, no store" -- "$KFLEET" verify
expect 1 "stop, no coordinator" -- "$KFLEET" stop
expect 1 "cancel, no coordinator" -- "$KFLEET" cancel 1
expect 2 "cancel, no sweep id" -- "$KFLEET" cancel
expect 2 "cancel, not a sweep id" -- "$KFLEET" cancel abc
expect 2 "run, no file" -- "$KFLEET" run
expect 2 "run, missing file" -- "$KFLEET" run "$T/nope.yaml"
expect 2 "run, --agents 0" -- "$KFLEET" run "$KF_SRC/tests/data/sweeps/tiny.yaml" --agents 0
expect 2 "submit, missing file" -- "$KFLEET" submit "$T/nope.yaml"
expect 2 "submit, bad sweep" -- "$KFLEET" submit "$KF_SRC/tests/data/sweeps/bad_unknown_key.yaml"
expect 1 "submit, no coordinator" -- "$KFLEET" submit "$KF_SRC/tests/data/sweeps/tiny.yaml"
expect 2 "serve, --bind without its value" -- "$KFLEET" serve --bind
grep -q -- "--bind" "$T/err" || fail "the missing value is not named by its flag: $(head -1 "$T/err")"
expect 2 "serve, unknown flag" -- "$KFLEET" serve --frob
expect 2 "init, extra argument" -- "$KFLEET" init extra
expect 2 "version, extra argument" -- "$KFLEET" version extra
expect 2 "agent-key, no subcommand" -- "$KFLEET" agent-key
expect 2 "agent-key add, not a key" -- "$KFLEET" agent-key add not-a-key box
expect 2 "agent-key revoke, no such key" -- "$KFLEET" agent-key revoke nobody
expect 2 "launch, no inventory" -- "$KFLEET" launch
expect 2 "launch, missing inventory" -- "$KFLEET" launch "$T/nope.yaml"
printf 'hosts:\n  - name: [oops\n' >"$T/bad-fleet.yaml"
expect 2 "launch, bad inventory" -- "$KFLEET" launch "$T/bad-fleet.yaml"
expect 2 "teardown, missing inventory" -- "$KFLEET" teardown "$T/nope.yaml"
expect 2 "bundle, unknown flag" -- "$KFLEET" bundle --frob
printf 'hosts:\n  - name: p1\n    host: 127.0.0.1\n    port: 1\n' >"$T/fleet.yaml"
expect 1 "launch, no coordinator" -- "$KFLEET" launch "$T/fleet.yaml"
pass "no store, no coordinator: $CHECKED error paths"

# ---- a store with sweep 1 (a failing task in it), and a coordinator ----
cat >"$T/fails.yaml" <<YAML
name: fails
kernels:
  - path: $KF_SRC/tests/kernels/wrong.c
    name: wrong
tasks: [validate]
YAML
expect 1 "run, a task fails" -- "$KFLEET" run "$T/fails.yaml"
expect 0 "run, all succeed" -- "$KFLEET" run "$KF_SRC/tests/data/sweeps/tiny.yaml"
expect 2 "report, no such sweep" -- "$KFLEET" report 99
expect 2 "report, not a sweep id" -- "$KFLEET" report abc
expect 2 "report, --baseline not a kernel" -- "$KFLEET" report 2 --baseline nope
expect 2 "report, unknown format" -- "$KFLEET" report 2 --format yaml
expect 0 "report" -- "$KFLEET" report 2
expect 2 "verify, no such sweep" -- "$KFLEET" verify 99
expect 0 "verify" -- "$KFLEET" verify 2
expect 2 "compare, one sweep" -- "$KFLEET" compare 1
expect 2 "compare, no such sweep" -- "$KFLEET" compare 1 99
expect 2 "compare, bad threshold" -- "$KFLEET" compare 1 2 --threshold lots

start_serve
expect 2 "cancel, no such sweep" -- "$KFLEET" cancel 99
expect 1 "serve, a second one on this home" -- "$KFLEET" serve
expect 0 "status" -- "$KFLEET" status
pass "with a store and a coordinator: $CHECKED error paths in all"

# ---- every flag a command takes is in its --help ----
python3 - "$KF_SRC/coordinator/cli" "$KFLEET" <<'EOF' || fail "a flag missing from --help"
import re, subprocess, sys, pathlib
cli, kfleet = pathlib.Path(sys.argv[1]), sys.argv[2]
bad = []
for src in sorted(cli.glob("cmd_*.c")):
    text = src.read_text()
    # Each command entry: const kf_cmd_entry kf_cmd_NAME = {"NAME", fn, ...}.
    # A file may hold several commands (launch/teardown/bundle) with their
    # own option arrays: a flag counts when some help of the file names it.
    names = re.findall(r'kf_cmd_entry kf_cmd_\w+ = \{\s*"([\w-]+)"', text)
    flags = set(re.findall(r'\{"([a-z][\w-]*)", (?:required|no|optional)_argument', text))
    helps = ""
    for name in names:
        out = subprocess.run([kfleet, name, "--help"], capture_output=True, text=True)
        if out.returncode != 0:
            bad.append(f"kfleet {name} --help exited {out.returncode}")
        helps += out.stdout
    for f in sorted(flags - {"help"}):  # -h/--help: every command, said once in kfleet --help
        if f"--{f}" not in helps:
            bad.append(f"{src.name}: --{f} is accepted but no --help of its commands names it")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
EOF
pass "every accepted flag is named in --help"

# ---- what is printed for pasting survives the shell ----
line=$(sed -n 's/^  start one: //p' "$T/serve.out")
[ -n "$line" ] || fail "kfleet serve printed no agent command: $(cat "$T/serve.out")"
bash -n -c "$line" || fail "the printed agent command does not parse: $line"
mkdir -p "$T/pastebin"
ln -s "$KFAGENT" "$T/pastebin/kfleet-agent"
(PATH="$T/pastebin:$PATH" bash -c "exec $line --name pasted --workdir '$T/pasted'" 2>"$T/agent-pasted.log") &
PIDS+=("$!")
wait_agents 1
grep -q 'agent.register agent=pasted' "$T/serve.log" || fail "the pasted agent did not register"
pass "serve's agent command, pasted into bash, registers: $line"
eline=$(sed -n 's/^  elsewhere: //p' "$T/serve.out")
bash -n -c "$eline" || fail "serve's command for an agent elsewhere does not parse: $eline"
ekey=$(bash -c "set -- $eline; while [ \$# -gt 0 ]; do [ \"\$1\" = --server-key ] && { echo \"\$2\"; exit; }; shift; done")
[ "$ekey" = "$(sed -n 1p "$KFLEET_HOME/state/keys/coordinator.pub")" ] ||
  fail "serve's --server-key does not come through the shell intact: '$ekey'"
"$KFLEET" init >"$T/init.out"
iline=$(sed -n 's/^agents connect with: //p' "$T/init.out")
bash -n -c "$iline" || fail "init's agent command does not parse: $iline"
key=$(bash -c "set -- $iline; while [ \$# -gt 0 ]; do [ \"\$1\" = --server-key ] && { echo \"\$2\"; exit; }; shift; done")
[ "$key" = "$(sed -n 1p "$KFLEET_HOME/state/keys/coordinator.pub")" ] ||
  fail "init's --server-key does not come through the shell intact: '$key'"
pass "init's agent command parses and carries the key intact"
