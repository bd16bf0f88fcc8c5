#!/usr/bin/env bash
# One compiled core per R process: every function the core defines (the
# global symbols of the standalone build's libfmalloc.a and
# libfmalloc_ggml.a) is exported by exactly one of the installed packages'
# shared objects, no package exports a core function twice over, and none
# leaves a core function undefined (a client reaches the core through its
# function tables' forwarders, never through the dynamic linker). Also: each
# table's lines (Rfmalloc_core_list.h, Rgguf_llm_list.h) have the core
# headers' types: a table filled from the core's own functions compiles with
# -Werror (the packages' builds cannot use that flag portably).
# Usage: tools/check-one-core.sh RLIB CORE_BUILD_DIR
set -euo pipefail
rlib=${1:?library of the installed packages}
core=${2:?build folder of the standalone core}
pkgs=$(cat "$(dirname "$0")/packages")
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
top=$(cd "$(dirname "$0")/.." && pwd)
cat >"$tmp/tables.c" <<'EOF'
#include <Rgguf_llm.h>
static const Rfmalloc_core_api core_api = {RFMALLOC_CORE_VERSION, RFMALLOC_CORE_N,
#define FM_CORE_FN(ret, name, params, args) name,
#define FM_CORE_VOID(name, params, args) name,
#include <Rfmalloc_core_list.h>
};
static const Rgguf_llm_api llm_api = {RGGUF_LLM_VERSION, RGGUF_LLM_N,
#define FM_LLM_FN(ret, name, params, args) name,
#define FM_LLM_VOID(name, params, args) name,
#include <Rgguf_llm_list.h>
};
const void *tables_check(int i);
const void *tables_check(int i) { return i ? (const void *)&core_api : (const void *)&llm_api; }
EOF
if ! cc -std=c11 -Wall -Wextra -Werror -c "$tmp/tables.c" -o "$tmp/tables.o" -I"$top/core/include" \
  -I"$top/packages/Rfmalloc/inst/include" -I"$top/packages/Rgguf/inst/include"; then
  echo "check-one-core: a line of the function tables disagrees with the core headers" >&2
  exit 1
fi
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
