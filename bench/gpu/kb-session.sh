#!/usr/bin/env bash
# bench/gpu/kb-session.sh MODE ... — KernelBench levels on a lent GPU machine
# whose commands are cut at 10 minutes (docs/benchmarks.md): a level's
# sweep runs in a process session of its own, outliving the command that
# started it, and later commands wait for it.
#
#   ab KB_LEVEL_DIR NUM...   each problem NUM judged alone (kernelbench-level.sh
#                            NUM NUM), first with the bundle in $KF_OLD, then
#                            with bundle/: the baseline in the same session
#   start KB_LEVEL_DIR...    the levels one after the other (OUT of each
#                            /tmp/kb-sess/levelN), detached (setsid)
#   wait SECONDS             until `start`'s levels are done or SECONDS pass;
#                            then each level's summary, its slowest problems'
#                            phases and its reports (xz) into $OUT
#   fg KB_LEVEL_DIR SECONDS  one level in this command, its wait cut at
#                            SECONDS (then the unfinished rows' reports too)
#
# A watchdog beside each level logs the machine's memory and disk every 10 s
# and ends the level before the machine runs out (used
# memory over 112 GiB of the H200 machine's 128, or under 4 GB of disk
# left): a machine that stops answering returns nothing. The log is
# /tmp/kb-sess/watch.log, copied to $OUT by `wait` and `fg`. KF_REFS_MAX_GB
# bounds the agent's references (16 GB unless set).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
S=/tmp/kb-sess
RES=${OUT:-/tmp/kb-sess-out}
mkdir -p "$S" "$RES"

# The phases of the n slowest problems of a level's reports.
slowest() {
  python3 - "$1" "${2:-8}" <<'PY'
import glob, json, os, sys
rows = []
for p in glob.glob(os.path.join(sys.argv[1], "*.json")):
    try:
        d = json.load(open(p))
    except Exception:
        continue
    s = d.get("schedule") or {}
    ph = {}
    for r in d.get("rows") or []:
        for k in ("validation", "profile"):
            for a, b in ((r.get(k) or {}).get("phases_s") or {}).items():
                ph["%s.%s" % (k[0], a)] = ph.get("%s.%s" % (k[0], a), 0) + b
    refs = (s.get("slot_time") or {}).get("phases_s", {}).get("reference", 0)
    rows.append((s.get("gpu_busy_s") or 0, os.path.basename(p)[:-5], refs, ph))
for busy, name, refs, ph in sorted(rows, reverse=True)[: int(sys.argv[2])]:
    top = sorted(ph.items(), key=lambda kv: -kv[1])[:7]
    print("%-40s %6.1f s  slot reference %5.1f  %s" % (
        name, busy, refs, ", ".join("%s %.1f" % kv for kv in top)))
PY
}

export KF_REFS_MAX_GB=${KF_REFS_MAX_GB:-16}

# watch PID_TO_END: logs memory, disk and the largest processes; ends the
# level's process group when the machine is about to run out.
watch() {
  while kill -0 "$1" 2>/dev/null; do
    used=$(awk '/^MemTotal/{t=$2}/^MemAvailable/{a=$2}END{printf "%d", (t-a)/1048576}' /proc/meminfo)
    shm=$(awk '/^Shmem:/{printf "%d", $2/1048576}' /proc/meminfo)
    disk=$(df -BG --output=avail /tmp | tail -1 | tr -dc 0-9)
    echo "$(date -u +%T) used ${used}G shmem ${shm}G disk-left ${disk}G top: $(ps -eo rss=,comm= --sort=-rss | head -3 | awk '{printf "%s %dM; ", $2, $1/1024}')"
    if [ "$used" -gt 112 ] || [ "$disk" -lt 4 ]; then
      echo "watchdog: ending the level (used ${used}G, disk left ${disk}G)"
      kill -- -"$(ps -o pgid= "$1" | tr -d ' ')" 2>/dev/null
      pkill -f kfleet-agent
      break
    fi
    sleep 10
  done >>"$S/watch.log" 2>&1
}

case ${1:-} in
ab)
  LEVEL=$2
  shift 2
  for num in "$@"; do
    for which in old new; do
      bin=$ROOT/bundle
      [ "$which" = old ] && bin=${KF_OLD:?KF_OLD: the baseline bundle}
      o=$S/ab-$which-$num
      KF_BIN=$bin OUT=$o bash "$HERE/kernelbench-level.sh" "$LEVEL" "$num" "$num" >"$o.log" 2>&1
      echo "== $which (problem $num)"
      tail -4 "$o.log"
      slowest "$o/reports" 1
    done
  done 2>&1 | tee -a "$RES/ab.txt"
  ;;
start)
  shift
  : >"$S/levels"
  n=0
  for level in "$@"; do
    n=$((n + 1))
    echo "$S/level$n $level" >>"$S/levels"
  done
  # setsid: the levels outlive this command (the machine keeps a process
  # of its own session until it is given back).
  setsid bash -c '
    while read -r o level; do
      OUT=$o bash "$0/kernelbench-level.sh" "$level" >"$o.log" 2>&1
      echo done >"$o.done"
    done <"$1/levels"' "$HERE" "$S" </dev/null >/dev/null 2>&1 &
  (setsid bash -c "$(declare -f watch); S=$S watch $!" </dev/null >/dev/null 2>&1 &)
  echo "started $n levels: $(cut -d" " -f2 "$S/levels" | tr "\n" " ")"
  ;;
fg)
  o=$S/fg
  WAIT_LIMIT=${3:?seconds} OUT=$o setsid bash "$HERE/kernelbench-level.sh" "$2" >"$o.log" 2>&1 &
  lv=$!
  watch "$lv" &
  wait "$lv"
  tail -8 "$o.log"
  slowest "$o/reports" 12
  cp "$o/summary.txt" "$RES/summary-fg.txt"
  tar -C "$o" -cJf "$RES/reports-fg.tar.xz" reports 2>/dev/null
  cp "$S/watch.log" "$RES/"
  tail -3 "$S/watch.log"
  ;;
wait)
  end=$(($(date +%s) + ${2:?seconds}))
  while [ "$(date +%s)" -lt "$end" ]; do
    all=1
    while read -r o _; do [ -e "$o.done" ] || all=0; done <"$S/levels"
    [ "$all" = 1 ] && break
    sleep 5
  done
  n=0
  while read -r o level; do
    n=$((n + 1))
    echo "== level $n ($level): $([ -e "$o.done" ] && echo finished || echo running)"
    if [ -e "$o.done" ]; then
      tail -6 "$o.log"
      slowest "$o/reports" 10
      cp "$o/summary.txt" "$RES/summary$n.txt"
      tar -C "$o" -cJf "$RES/reports$n.tar.xz" reports 2>/dev/null
    elif [ -d "$o/home" ]; then
      # How far it got: the finished sweeps of `kfleet status`.
      KFLEET_HOME=$o/home "$ROOT/bundle/kfleet" status 2>/dev/null | tail -12
    fi
  done <"$S/levels"
  cp "$S/watch.log" "$RES/"
  tail -4 "$S/watch.log"
  ;;
*)
  sed -n '2,16p' "$0"
  exit 2
  ;;
esac
