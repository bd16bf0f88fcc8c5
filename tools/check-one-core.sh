#!/usr/bin/env bash
# One compiled core per R process: every function the core defines (the
# global symbols of the standalone build's libfmalloc.a and
# libfmalloc_ggml.a) is exported by exactly one of the installed packages'
# shared objects, no package exports a core function twice over, and none
# leaves a core function undefined (a client reaches the core through its
# function tables' forwarders, never through the dynamic linker).
# Usage: tools/check-one-core.sh RLIB CORE_BUILD_DIR
set -euo pipefail
rlib=${1:?library of the installed packages}
core=${2:?build folder of the standalone core}
pkgs="Rfmalloc Rpgen Rgguf Rllm"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for lib in "$core"/libfmalloc.a "$core"/libfmalloc_ggml.a; do
  [ -f "$lib" ] || { echo "check-one-core: $lib is missing (run make core)" >&2; exit 1; }
  nm --defined-only -g "$lib" | awk '$2 == "T" && $3 ~ /^fm_/ {print $3}'
done | sort -u >"$tmp/core"
for p in $pkgs; do
  so="$rlib/$p/libs/$p.so"
  [ -f "$so" ] || { echo "check-one-core: $so is missing (run make install)" >&2; exit 1; }
  nm -D --defined-only "$so" | awk '$2 == "T" && $3 ~ /^fm_/ {print $3}' | sort -u >"$tmp/$p"
  printf '%-9s exports %4d core functions\n' "$p" "$(wc -l <"$tmp/$p")"
  nm -D --undefined-only "$so" | awk '$2 ~ /^fm_/ {print $2}' >"$tmp/$p.undef"
done
status=0
for p in $pkgs; do
  if [ -s "$tmp/$p.undef" ]; then
    echo "check-one-core: $p.so leaves core functions undefined: $(tr '\n' ' ' <"$tmp/$p.undef" | head -c 600)" >&2
    status=1
  fi
done
twice=$(for p in $pkgs; do cat "$tmp/$p"; done | sort | uniq -d)
if [ -n "$twice" ]; then
  echo "check-one-core: defined in more than one package: $(echo $twice | head -c 600)" >&2
  status=1
fi
missing=$(for p in $pkgs; do cat "$tmp/$p"; done | sort -u | comm -23 "$tmp/core" -)
if [ -n "$missing" ]; then
  echo "check-one-core: core functions no package exports: $(echo $missing | head -c 600)" >&2
  status=1
fi
[ $status -eq 0 ] && echo "one core: each of $(wc -l <"$tmp/core") core functions is defined once across $pkgs"
exit $status
