#!/usr/bin/env bash
# Files that would hang or exhaust a command are refused before they are
# read (issue 20): a kernel whose quoted #include names a FIFO (opening it
# would wait for a writer forever), one whose include is a symlink to
# /dev/zero (reading it never ends), a kernel source that is a FIFO, a
# header over 1 MiB, a sweep file that is a FIFO. Each `kfleet submit` exits
# 2 within seconds, naming the file and the rule. No coordinator is needed:
# these are refused before one is asked.
source "$(dirname "$0")/lib.sh"

mkdir -p "$T/k"
cp "$KF_SRC/tests/kernels/wrong.c" "$T/k/base.c"
sweep() { # FILE KERNEL
  printf 'name: hostile\nkernels:\n  - path: %s\ntasks: [validate]\n' "$2" >"$1"
}

# expect_refused WHAT PATTERN CMD...: exit 2 within 20 s, the pattern said.
expect_refused() {
  local what=$1 pat=$2
  shift 2
  local rc=0 t0=$SECONDS
  timeout 20 "$@" >"$T/out" 2>"$T/err" || rc=$?
  [ $rc -ne 124 ] || fail "$what: still running after 20 s (hung)"
  [ $rc -eq 2 ] || fail "$what: exit $rc, expected 2: $(head -c 400 "$T/err")"
  grep -q -- "$pat" "$T/err" || fail "$what: no '$pat' in: $(head -c 400 "$T/err")"
  pass "$what: exit 2 in $((SECONDS - t0)) s: $(head -c 200 "$T/err" | tr '\n' ' ')"
}

# An include naming a FIFO.
mkfifo "$T/k/pipe.h"
{ echo '#include "pipe.h"'; cat "$T/k/base.c"; } >"$T/k/fifo_inc.c"
sweep "$T/fifo_inc.yaml" "$T/k/fifo_inc.c"
expect_refused "include of a FIFO" "pipe.h (included by the kernel): is a FIFO, not a regular file" \
  "$KFLEET" submit "$T/fifo_inc.yaml"

# An include that is a symlink to /dev/zero.
ln -s /dev/zero "$T/k/zero.h"
{ echo '#include "zero.h"'; cat "$T/k/base.c"; } >"$T/k/zero_inc.c"
sweep "$T/zero_inc.yaml" "$T/k/zero_inc.c"
expect_refused "include of /dev/zero" "zero.h (included by the kernel): is a character device" \
  "$KFLEET" submit "$T/zero_inc.yaml"

# A header over the 1 MiB limit.
head -c $((1024 * 1024 + 1)) /dev/zero | tr '\0' ' ' >"$T/k/big.h"
{ echo '#include "big.h"'; cat "$T/k/base.c"; } >"$T/k/big_inc.c"
sweep "$T/big_inc.yaml" "$T/k/big_inc.c"
expect_refused "a 1 MiB + 1 byte header" "big.h (included by the kernel): is 1048577 bytes; at most 1048576" \
  "$KFLEET" submit "$T/big_inc.yaml"

# The kernel source itself a FIFO.
mkfifo "$T/k/src.c"
sweep "$T/fifo_src.yaml" "$T/k/src.c"
expect_refused "kernel source that is a FIFO" "fifo_src.yaml:3:11: path .* is not a regular file" \
  "$KFLEET" submit "$T/fifo_src.yaml"

# The sweep file a FIFO.
mkfifo "$T/sweep.yaml"
expect_refused "sweep file that is a FIFO" "sweep.yaml: the sweep file is a FIFO" \
  "$KFLEET" submit "$T/sweep.yaml"
