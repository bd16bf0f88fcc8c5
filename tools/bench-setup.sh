#!/usr/bin/env bash
# Install the heavy bench-only peers when absent: bigsnpr and its CRAN
# dependencies (issue 5, P3; issue 15, bench/gwas.R), and logistf, the
# Firth oracle of RfmallocStatgen's test-logistf.R (which skips without
# it); logistf's dependencies that Debian packages come from apt (from
# source they take about 40 minutes); Debian's python3-torch, the PyTorch
# that runs OpenSpliceAI in bench/splice.R (issue 18). Called by `make
# bench`, never by `make test`.
# They go into the first library of .libPaths(): build/rlib when run through
# the Makefile (R_LIBS=build/rlib). The machine's R profile names the CRAN
# mirror. bigsnpr compiles C++ (RcppArmadillo) for several minutes, once.
set -euo pipefail

bash "$(dirname "$0")/apt-need.sh" bench r-cran-mice r-cran-glmnet r-cran-mitml r-cran-shape \
  r-cran-pan r-cran-jomo r-cran-ordinal python3-torch

Rscript -e '
  need <- c("bigsnpr", "logistf")
  miss <- need[!vapply(need, requireNamespace, logical(1), quietly = TRUE)]
  if (length(miss)) {
    lib <- .libPaths()[1]
    message("bench-setup: installing CRAN packages into ", lib, ": ", paste(miss, collapse = " "))
    install.packages(miss, lib = lib, quiet = TRUE,
                     Ncpus = max(1L, min(2L, parallel::detectCores())))
    bad <- miss[!vapply(miss, requireNamespace, logical(1), quietly = TRUE)]
    if (length(bad)) stop("bench-setup: failed to install ", paste(bad, collapse = " "))
  }'
