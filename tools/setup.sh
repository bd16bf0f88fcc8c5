#!/usr/bin/env bash
# Install what the build, tests and demo need, skipping what is already there.
# Debian packages through apt, CRAN packages through install.packages().
set -euo pipefail

apt_pkgs=(cmake make gcc pkg-config libblas-dev liblapack-dev zlib1g-dev libdeflate-dev libzstd-dev libhts-dev
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
