#!/usr/bin/env bash
# Builds kfleet's libFuzzer targets with clang (ASan + UBSan + libFuzzer) in
# their own build directory and runs each for a bounded time on its seed
# corpus (tests/fuzz/corpus/TARGET, with tests/fuzz/TARGET.dict when there is
# one). New inputs go to BUILD/corpus/TARGET, never into the repo; a crash,
# leak, UB report or timeout leaves BUILD/artifacts/TARGET-crash-* and makes
# the script exit 1. Bad arguments exit 2.
#
#   tests/fuzz/run.sh [--build DIR] [--seconds N] [--jobs N] [TARGET...]
#   tests/fuzz/run.sh --gen-corpus     # rewrite the generated seeds
#
# `make fuzz` runs every target for FUZZ_SECONDS (300) each; the test suite
# runs them briefly (tests/CMakeLists.txt, fuzz/bounded).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
build="$src/build-fuzz"
seconds=20
jobs=$(nproc 2>/dev/null || echo 2)
gen=0
targets=()

usage() {
    sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=${2:?--build needs a directory}; shift 2 ;;
    --seconds) seconds=${2:?--seconds needs a number}; shift 2 ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift 2 ;;
    --gen-corpus) gen=1; shift ;;
    -h | --help) usage ;;
    -*) echo "fuzz: unknown option '$1'" >&2; usage ;;
    *) targets+=("$1"); shift ;;
    esac
done
case "$seconds" in '' | *[!0-9]*) echo "fuzz: --seconds wants a whole number, got '$seconds'" >&2; exit 2 ;; esac

if ! command -v clang >/dev/null; then
    echo "fuzz: clang not found; install it with: bash deploy/install-deps.sh --test" >&2
    exit 1
fi

echo "fuzz: building in $build"
t0=$(date +%s)
mkdir -p "$build"
if [ ! -f "$build/CMakeCache.txt" ]; then
    CC=clang cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DKF_WERROR=ON -DKF_FUZZ=ON \
        -DBUILD_TESTING=OFF -DKF_SANITIZE=OFF >"$build/configure.log" 2>&1 || {
        cat "$build/configure.log" >&2
        exit 1
    }
fi
if ! cmake --build "$build" -j "$jobs" --target fuzz-targets gen_corpus >"$build/build.log" 2>&1; then
    grep -E "error|Error" "$build/build.log" | head -40 >&2
    echo "fuzz: build failed; the full log is $build/build.log" >&2
    exit 1
fi
echo "fuzz: built in $(($(date +%s) - t0)) s"

if [ "$gen" = 1 ]; then
    ASAN_OPTIONS=detect_leaks=1 "$build/tests/fuzz/gen_corpus" "$here/corpus"
    echo "fuzz: seeds written under $here/corpus"
    exit 0
fi

if [ ${#targets[@]} -eq 0 ]; then
    for bin in "$build"/tests/fuzz/fuzz_*; do
        [ -x "$bin" ] && targets+=("$(basename "$bin" | sed 's/^fuzz_//')")
    done
fi

mkdir -p "$build/artifacts"
failed=()
for t in "${targets[@]}"; do
    bin="$build/tests/fuzz/fuzz_$t"
    if [ ! -x "$bin" ]; then
        echo "fuzz: no target '$t' (have: $(ls "$build"/tests/fuzz/ | sed -n 's/^fuzz_//p' | tr '\n' ' '))" >&2
        exit 2
    fi
    work="$build/corpus/$t"
    mkdir -p "$work"
    args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536
        -print_final_stats=1 -close_fd_mask=2
        -artifact_prefix="$build/artifacts/$t-")
    [ -f "$here/$t.dict" ] && args+=(-dict="$here/$t.dict")
    dirs=("$work")
    [ -d "$here/corpus/$t" ] && dirs+=("$here/corpus/$t")
    log="$build/fuzz_$t.log"
    echo "fuzz: $t for ${seconds}s"
    set +e
    ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$bin" "${args[@]}" "${dirs[@]}" >"$log" 2>&1
    rc=$?
    set -e
    # The last status line and the final stats tell how far it got.
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -E '^#[0-9]+.*cov:' "$log" | tail -1 | sed -E 's/.*(cov: [0-9]+ ft: [0-9]+ corp: [^ ]+).*/\1/')
    echo "fuzz: $t: ${runs:-?} runs, ${cov:-no coverage line}"
    if [ $rc -ne 0 ]; then
        echo "fuzz: $t FAILED (exit $rc); its log: $log" >&2
        grep -E -A30 "ERROR: |runtime error|deadly signal|Test unit written" "$log" | head -60 >&2
        failed+=("$t")
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: failed: ${failed[*]} (reproduce: $build/tests/fuzz/fuzz_TARGET $build/artifacts/TARGET-crash-...)" >&2
    exit 1
fi
echo "fuzz: all ${#targets[@]} targets clean"
