#!/usr/bin/env bash
# Print the CPU and the instruction-set path of every kernel with several,
# so that a test failure can be read against the machine (make isa-report,
# run by make test). Reads what was built and verified, never assumes:
#   BUILD   the build tree (build, or build/isa-$FM_ISA)
#   FM_ISA  the forced path (auto, portable, avx2, avx512)
#   RLLM_ORACLE_DIR  the llama.cpp oracle the tests use
set -uo pipefail
build=${BUILD:?BUILD is the build tree}
echo "isa-report: CPU: $(bash "$(dirname "$0")/cpu.sh" describe)"
# The core's run-time choice, as the core's own test reports it (fm_cpu.h).
line=$("$build/core/test_cpu" 2>/dev/null | grep '^FM_ISA=')
echo "isa-report: fused genotype kernels and .bed counts: ${line:-unknown (core not built)}"
ggml=$(cat "$build/rlib/.ggmlr/isa" 2>/dev/null) && ggml="$ggml build" || ggml="no verified build (make setup ISA=... builds one)"
echo "isa-report: GGML (ggmlR in $build/rlib, linked by Rgguf, Rllm and the core's llm tests): $ggml"
oracle=${RLLM_ORACLE_DIR:-tools/llama-oracle}
if command -v node >/dev/null 2>&1 && [ -d "$oracle/node_modules/node-llama-cpp" ]; then
  variants=$(cd "$oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64" 2>/dev/null &&
             ls libggml-cpu-*.so | sed 's/libggml-cpu-//; s/\.so//' | tr '\n' ' ')
  info=$(cd "$oracle" && node check.mjs --system-info 2>&1)
  echo "isa-report: llama.cpp oracle ($oracle; CPU variants present: ${variants:-?}): loads $info"
else
  echo "isa-report: llama.cpp oracle: not installed (its tests skip)"
fi
blas=$(Rscript -e 'cat(extSoftVersion()[["BLAS"]], La_library())' 2>/dev/null)
echo "isa-report: R's BLAS/LAPACK: ${blas:-unknown}"
