#!/usr/bin/env bash
# Build the core's libFuzzer targets (core/fuzz/*.c, CMake option FM_FUZZ) with
# clang into build/fuzz and run each for a fixed number of executions on a
# copy of its seed corpus (core/fuzz/corpus/<target>/ -> build/fuzz/corpus/).
# Exits non-zero when a build fails or any target crashes, reports a
# sanitizer error, breaks an invariant, hangs (-timeout) or runs out of
# memory; the failing input is kept in build/fuzz/artifacts/<target>/ and
# replays with: build/fuzz/fuzz/<target> <file>
#
# Usage: tools/fuzz.sh [runs_per_target]      (default 100000)
# Environment: CC (default: clang, else the newest clang-N on PATH),
#   FUZZ_TARGETS (default: every core/fuzz/*.c), FUZZ_ARGS (extra libFuzzer
#   flags, e.g. "-seed=1"), JOBS (build parallelism, default 2).
# Needs clang's libFuzzer runtime (Debian: libclang-rt-<N>-dev).
set -euo pipefail
runs=${1:-100000}
case $runs in '' | *[!0-9]*) echo "usage: $0 [runs_per_target]" >&2; exit 2 ;; esac
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build/fuzz

cc=${CC:-}
if [ -z "$cc" ]; then
  if command -v clang >/dev/null; then cc=clang; else
    cc=$(compgen -c clang- | grep -E '^clang-[0-9]+$' | sort -t- -k2 -n | tail -1 || true)
  fi
fi
if [ -z "$cc" ] || ! command -v "$cc" >/dev/null; then
  echo "fuzz.sh: no clang found; install clang and its libFuzzer runtime or set CC" >&2
  exit 2
fi

# Fixed input bounds: the encodings are documented at the top of each target.
max_len() {
  case $1 in
    fuzz_map_open) echo 8192 ;; # raw images of a 4 KiB header and slots, or patch lists
    *) echo 4096 ;;
  esac
}

targets=${FUZZ_TARGETS:-$(cd "$top/core/fuzz" && ls -1 *.c | sed 's/\.c$//')}

CC=$cc cmake -S "$top/core" -B "$build" -DFM_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# shellcheck disable=SC2086
cmake --build "$build" -j"${JOBS:-2}" --target $targets

status=0
summary=""
for t in $targets; do
  corpus=$build/corpus/$t
  art=$build/artifacts/$t
  rm -rf "$corpus"
  mkdir -p "$corpus" "$art"
  if [ -d "$top/core/fuzz/corpus/$t" ]; then cp "$top/core/fuzz/corpus/$t"/* "$corpus"/; fi
  echo "== $t: $runs runs, -max_len=$(max_len "$t")"
  log=$build/$t.log
  start=$(date +%s)
  rc=0
  # shellcheck disable=SC2086
  "$build/fuzz/$t" -runs="$runs" -max_len="$(max_len "$t")" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$art/" ${FUZZ_ARGS:-} "$corpus" >"$log" 2>&1 || rc=$?
  secs=$(($(date +%s) - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  grep -E '^(#[0-9]+ +DONE|Done )' "$log" | tail -2 || true
  if [ $rc -ne 0 ]; then
    echo "FAILED: $t exited $rc; log $log; artifacts in $art" >&2
    grep -E 'ERROR|runtime error|invariant failed|SUMMARY|Test unit written' "$log" | head -20 >&2 || true
    status=1
    summary+="$t: FAILED (exit $rc) after ${execs:-?} execs, ${secs}s"$'\n'
  else
    summary+="$t: ok, ${execs:-?} execs, ${secs}s"$'\n'
  fi
done
printf '%s' "$summary"
exit $status
