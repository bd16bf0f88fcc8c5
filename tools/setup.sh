#!/usr/bin/env bash
# Install what the build, tests and demo need, skipping what is already there.
# Debian packages through apt, CRAN packages through install.packages().
set -euo pipefail

apt_pkgs=(cmake make gcc pkg-config libblas-dev liblapack-dev zlib1g-dev libdeflate-dev libzstd-dev libhts-dev libutf8proc-dev
          r-base-dev plink2 python3 tabix time
          r-cran-cli r-cran-testthat r-cran-rspectra r-cran-irlba r-cran-rcppeigen valgrind)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# CRAN packages not in Debian 12.
# The machine's R profile names the CRAN mirror.
Rscript -e '
  need <- c("pcaone")
  miss <- need[!vapply(need, requireNamespace, logical(1), quietly = TRUE)]
  if (length(miss)) {
    message("setup: installing CRAN packages: ", paste(miss, collapse = " "))
    install.packages(miss, quiet = TRUE)
  }'

# GGML comes from the CRAN package ggmlR (static libggml.a + headers). Its
# quantized kernels are several times faster when built with --with-simd,
# which needs AVX2, FMA and F16C; the choice is made here and said.
simd_args=""
if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && grep -qw f16c /proc/cpuinfo; then
  simd_args="--with-simd"
fi
Rscript -e '
  args <- commandArgs(TRUE)
  choice <- if (length(args)) "with --with-simd (CPU has avx2, fma, f16c)" else
            "without --with-simd (CPU lacks avx2, fma or f16c)"
  if (!requireNamespace("ggmlR", quietly = TRUE)) {
    message("setup: installing ggmlR from CRAN ", choice)
    install.packages("ggmlR", configure.args = paste(args, collapse = " "), quiet = TRUE)
    if (!requireNamespace("ggmlR", quietly = TRUE)) stop("setup: ggmlR failed to install")
  } else {
    message("setup: ggmlR ", utils::packageVersion("ggmlR"), " already installed; this CPU calls for a build ",
            choice, " (reinstall it that way if it was built otherwise)")
  }' $simd_args

# llama.cpp as the reference for Rllm's tests (prebuilt, from npm); tests
# that need it skip with a message when npm is unavailable.
if command -v npm >/dev/null 2>&1; then
  bash tools/llama-oracle/install.sh
else
  echo "setup: npm not found; the llama.cpp oracle tests will be skipped"
fi
