#!/usr/bin/env bash
# make docs: write every package's man/*.Rd and NAMESPACE from its roxygen
# comments (the source of truth), with roxygen2 from CRAN installed once into
# build/rlib-docs (a docs-only library: the tests never need it). The
# packages are read as installed (load_installed), so run `make install`
# first (and again after it when a package imports a new export of another;
# DOCS_RLIB names another build library than build/rlib);
# nothing is compiled here.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
lib="$root/build/rlib-docs"
mkdir -p "$lib"
export R_LIBS="$lib:${DOCS_RLIB:-$root/build/rlib}"
# (the version the man pages were written with: a Debian roxygen2 7 elsewhere
# on the library path rewrites every page)
Rscript -e 'if (!requireNamespace("roxygen2", quietly = TRUE) ||
                packageVersion("roxygen2") < "8.1.1")
  install.packages("roxygen2", lib = .libPaths()[1], quiet = TRUE)'
for p in $(cat "$root/tools/packages"); do
  Rscript -e "roxygen2::roxygenise('$root/packages/$p', roclets = c('rd', 'namespace'),
                                   load_code = roxygen2::load_installed)"
done
