#!/usr/bin/env bash
# R CMD check --as-cran of every package, as CRAN checks a submission: each
# tarball from R CMD build (vignettes built), checked with its tests,
# examples, vignettes and PDF manual against the build library (Rpgen,
# Rgguf and Rllm need Rfmalloc installed). Installs the tools --as-cran uses
# when missing: qpdf (PDF sizes), tidy (HTML of the help pages) and LaTeX
# (the manual). Suggested packages that are absent (bigstatsr: make bench)
# are not forced. Ends with each package's status line.
# Usage: tools/check.sh OUT_DIR PKG_DIR...
set -euo pipefail
out=${1:?output folder}; shift
bash "$(dirname "$0")/apt-need.sh" check qpdf tidy texlive-latex-base texlive-latex-recommended \
  texlive-fonts-recommended devscripts
mkdir -p "$out"
cd "$out"
for dir in "$@"; do
  pkg=$(basename "$dir")
  rm -rf "$pkg".Rcheck "$pkg"_*.tar.gz
  R CMD build "$dir" >"$pkg-build.log" 2>&1 || { cat "$pkg-build.log"; exit 1; }
  # Left out: CRAN's incoming checks that ask CRAN's servers (is the name
  # taken, are the URLs live) and the file-timestamp check, which asks a
  # time server; the machine reaches CRAN only for installs. The manual is
  # set in Times without Inconsolata (texlive-fonts-extra, 1 GB, has it).
  R_RD4PDF=times,hyper \
  _R_CHECK_FORCE_SUGGESTS_=false _R_CHECK_CRAN_INCOMING_REMOTE_=false _R_CHECK_SYSTEM_CLOCK_=false \
    R CMD check --as-cran "$pkg"_*.tar.gz >"$pkg-check.log" 2>&1 || true
  echo "$pkg: $(grep -E '^Status:' "$pkg-check.log" || echo 'no status (see the log)')"
  grep -E '^\* checking .*\.\.\. (NOTE|WARNING|ERROR)' -A12 "$pkg-check.log" || true
done
