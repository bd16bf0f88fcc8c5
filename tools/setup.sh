#!/usr/bin/env bash
# Install what the build, tests and demo need, skipping what is already there.
# Debian packages through apt, CRAN packages through install.packages().
set -euo pipefail

# ISA (Makefile: auto, portable, avx2 or avx512) forces one kernel path;
# BUILD is the build tree of that path (build, or build/isa-$ISA).
isa=${ISA:-auto}
build=${BUILD:-$(pwd)/build}
case $isa in
  auto) ggml=auto ;;
  portable|avx2|avx512)
    # read the levels first: grep -q quits early, and pipefail would then
    # count cpu.sh's SIGPIPE as a failure
    levels=$(bash tools/cpu.sh levels)
    grep -qx "$isa" <<<"$levels" ||
      { echo "setup: ISA=$isa, but this CPU runs only: $(tr '\n' ' ' <<<"$levels")" >&2; exit 1; }
    ggml=$isa ;;
  *) echo "setup: unknown ISA '$isa' (auto, portable, avx2 or avx512)" >&2; exit 1 ;;
esac

# knitr, rmarkdown and pandoc build the vignettes (R CMD build, tests/testthat/test-vignettes.R).
# plink1.9: the oracle of statgen_ld (its --r2 is plain allele-count r^2).
apt_pkgs=(cmake make gcc binutils pkg-config libblas-dev liblapack-dev zlib1g-dev libdeflate-dev libzstd-dev libhts-dev libutf8proc-dev
          r-base-dev plink2 plink1.9 python3 tabix time
          r-cran-cli r-cran-testthat r-cran-rspectra r-cran-irlba r-cran-rcppeigen valgrind
          r-cran-knitr r-cran-rmarkdown r-cran-jsonlite pandoc)
# Optional test dependencies: the tests that use them skip with a message
# when they are absent, so an install that fails only warns.
# r-bioc-delayedarray: Rfmalloc's DelayedArray seed (test-delayedarray.R).
# r-cran-pkgdown, pandoc, chromium, r-cran-png: the documentation site, built
# and looked at in headless Chromium (tests/testthat/test-site.R).
# r-cran-susier, r-cran-data.table, r-cran-ggplot2, r-cran-viridis: coloc's
# dependencies, prebuilt (coloc itself comes from CRAN below).
opt_pkgs=(r-bioc-delayedarray r-cran-pkgdown pandoc chromium r-cran-png
          r-cran-susier r-cran-data.table r-cran-ggplot2 r-cran-viridis)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
opt_missing=()
for p in "${opt_pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || opt_missing+=("$p")
done
if ((${#missing[@]} + ${#opt_missing[@]})); then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
fi
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ((${#opt_missing[@]})); then
  echo "setup: installing optional Debian packages: ${opt_missing[*]}"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${opt_missing[@]}" >/dev/null ||
    echo "setup: warning: could not install ${opt_missing[*]}; the tests that need them will be skipped" >&2
fi

# CRAN packages not in Debian 12 (mirai, with nanonext, about 50 s: the
# daemons of the scale-out tests).
# The machine's R profile names the CRAN mirror.
Rscript -e '
  need <- c("pcaone", "mirai")
  miss <- need[!vapply(need, requireNamespace, logical(1), quietly = TRUE)]
  if (length(miss)) {
    message("setup: installing CRAN packages: ", paste(miss, collapse = " "))
    install.packages(miss, quiet = TRUE)
  }'

# coloc, the oracle of RfmallocStatgen's colocalisation tests (test-coloc.R,
# which skip with a message without it): pure R, about 15 s from CRAN once
# its dependencies above are there. Optional: a failure only warns.
Rscript -e '
  if (!requireNamespace("coloc", quietly = TRUE)) {
    message("setup: installing CRAN package coloc (test oracle)")
    try(install.packages("coloc", quiet = TRUE))
    if (!requireNamespace("coloc", quietly = TRUE))
      message("setup: warning: coloc could not be installed; test-coloc.R will skip its comparisons")
  }'

# GGML comes from the CRAN package ggmlR, built for this CPU into the
# project's own library and verified there (tools/ggmlr-setup.sh).
bash tools/ggmlr-setup.sh "$build/rlib" "$ggml"

# llama.cpp as the reference for Rllm's tests (prebuilt, from npm); tests
# that need it skip with a message when npm is unavailable. A forced ISA
# gets a copy that can load only that path's CPU variant. ORACLE=0 (make
# demo) skips it: nothing but the tests uses it.
if [ "${ORACLE:-1}" = 0 ]; then
  echo "setup: the llama.cpp oracle is not installed (ORACLE=0; make test installs it)"
elif command -v npm >/dev/null 2>&1; then
  bash tools/llama-oracle/install.sh
  case $isa in
    portable|avx2) bash tools/llama-oracle/variant.sh "$isa" "$build/llama-oracle" ;;
  esac
else
  echo "setup: npm not found; the llama.cpp oracle tests will be skipped"
fi
