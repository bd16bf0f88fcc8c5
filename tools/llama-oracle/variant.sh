#!/usr/bin/env bash
# A copy of the llama.cpp oracle that runs one CPU path of llama.cpp.
#
#   tools/llama-oracle/variant.sh portable|avx2 DEST
#
# node-llama-cpp's prebuilt linux-x64 binary ships GGML's CPU backend in
# variants (libggml-cpu-<name>.so: x64, sse42, haswell, skylakex, ...,
# sapphirerapids) and loads the best one this CPU runs, from the folder of
# its addon. DEST gets oracle.mjs and a hard-linked copy of node_modules
# whose bins folder holds one variant: x64 (no SIMD) for portable, haswell
# (AVX2, FMA, F16C, BMI2: what an AVX2-only CPU such as an AMD EPYC Zen 2/3
# loads) for avx2. Rllm's tests use it through RLLM_ORACLE_DIR=DEST
# (Makefile ISA=...). The variant loaded is checked (check.mjs prints
# llama.cpp's system info), never assumed.
set -euo pipefail
isa=${1:?usage: variant.sh portable|avx2 DEST}
dest=${2:?usage: variant.sh portable|avx2 DEST}
here=$(cd "$(dirname "$0")" && pwd)
case $isa in
  portable) keep=x64 ;;
  avx2) keep=haswell ;;
  *) echo "llama-oracle: no variant for '$isa' (portable or avx2)" >&2; exit 1 ;;
esac
[ -d "$here/node_modules/node-llama-cpp" ] || { echo "llama-oracle: not installed; variant $isa skipped" >&2; exit 0; }
rm -rf "$dest"
mkdir -p "$dest"
cp "$here"/oracle.mjs "$here"/check.mjs "$here"/package.json "$dest"/
cp -al "$here/node_modules" "$dest/node_modules"
bins=$dest/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
[ -f "$bins/libggml-cpu-$keep.so" ] || { echo "llama-oracle: $bins has no libggml-cpu-$keep.so" >&2; exit 1; }
for f in "$bins"/libggml-cpu-*.so; do
  [ "$(basename "$f")" = "libggml-cpu-$keep.so" ] || rm -f "$f"
done
info=$(cd "$dest" && node check.mjs --system-info) || { echo "llama-oracle: the $keep variant does not load" >&2; exit 1; }
echo "setup: llama.cpp oracle for ISA=$isa in $dest: variant $keep; $info"
case $isa:$info in
  portable:*"AVX = 1"* | avx2:*"AVX512 = 1"* | avx2:*"AVX2 = 0"*)
    echo "llama-oracle: the copy for $isa loaded another variant" >&2; exit 1 ;;
esac
