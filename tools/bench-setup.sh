#!/usr/bin/env bash
# Install the heavy bench-only peers (issue 5, P3: bigsnpr and its CRAN
# dependencies) when absent. Called by `make bench`, never by `make test`.
# They go into the first library of .libPaths(): build/rlib when run through
# the Makefile (R_LIBS=build/rlib). The machine's R profile names the CRAN
# mirror. bigsnpr compiles C++ (RcppArmadillo) for several minutes, once.
set -euo pipefail

Rscript -e '
  need <- c("bigsnpr")
  miss <- need[!vapply(need, requireNamespace, logical(1), quietly = TRUE)]
  if (length(miss)) {
    lib <- .libPaths()[1]
    message("bench-setup: installing CRAN packages into ", lib, ": ", paste(miss, collapse = " "))
    install.packages(miss, lib = lib, quiet = TRUE,
                     Ncpus = max(1L, min(2L, parallel::detectCores())))
    bad <- miss[!vapply(miss, requireNamespace, logical(1), quietly = TRUE)]
    if (length(bad)) stop("bench-setup: failed to install ", paste(bad, collapse = " "))
  }'
