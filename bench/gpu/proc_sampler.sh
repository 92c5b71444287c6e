#!/bin/bash
# bench/gpu/proc_sampler.sh OUT_FILE — every 0.1 s, each kfleet-agent process (the agent,
# warm runners and the runners forked from them, checkers): time, pid, role, state, utime and
# stime in ticks, wchan, RSS in kB, one line each, until killed. What showed where a KernelBench
# problem's compare goes (docs/benchmarks.md, 2026-12-01).
out=${1:?usage: proc_sampler.sh OUT_FILE}
while :; do
  t=$(date +%s.%N)
  for p in $(pgrep -f kfleet-agent); do
    [ -r /proc/$p/stat ] || continue
    role=$(tr '\0' ' ' </proc/$p/cmdline 2>/dev/null | grep -o -- '--\(runner\|checker\|warm\|serve\|build\)[a-z-]*' | tr '\n' ',' )
    st=$(cut -d' ' -f3,14,15 /proc/$p/stat 2>/dev/null)
    w=$(cat /proc/$p/wchan 2>/dev/null)
    rss=$(awk '/VmRSS/{print $2}' /proc/$p/status 2>/dev/null)
    echo "$t $p ${role:-agent} $st $w $rss"
  done
  sleep 0.1
done >"$out"
