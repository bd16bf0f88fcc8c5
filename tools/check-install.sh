#!/usr/bin/env bash
# Installable as users install: from a copy of the repository's files (what
# a clean clone holds; git's tracked and unignored files, links kept), with
# only the system libraries and the CRAN dependencies present,
#   1. R CMD INSTALL packages/<Pkg> for every package in dependency order;
#   2. R CMD build packages/<Pkg>, then R CMD INSTALL of each tarball from a
#      folder that holds nothing else, in the same order;
# and each installed set loads and runs one core call per package.
# Usage: tools/check-install.sh DEPS_LIB   (the library holding ggmlR)
set -euo pipefail
deps_lib=${1:?library that holds ggmlR}
top=$(cd "$(dirname "$0")/.." && pwd)
pkgs=$(cat "$top/tools/packages")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Dependencies: ggmlR alone (the site library holds the other CRAN packages).
mkdir -p "$tmp/deps"
ln -s "$deps_lib/ggmlR" "$tmp/deps/ggmlR"
(cd "$top" && git ls-files -z --cached --others --exclude-standard |
  tar --null -T - -cf - 2>/dev/null) | (mkdir -p "$tmp/clone" && cd "$tmp/clone" && tar -xf -)

smoke() { # lib: load every package and make one core call through each
  R_LIBS="$1:$tmp/deps" Rscript -e '
    suppressPackageStartupMessages({library(Rfmalloc); library(Rpgen); library(RfmallocStatgen)
                                    library(Rgguf); library(Rllm)})
    d <- tempfile(); dir.create(d)
    rt <- open_fmalloc(file.path(d, "rt.fm"), 0.01, "scratch")
    g <- matrix(c(0L, 1L, 2L, NA), 2)
    stopifnot(isTRUE(all.equal(unname(as.matrix(fmalloc_bed(g, rt))), g * 1)))
    writeLines(c("1 rs1 0 100", "1 rs2 0 200"), file.path(d, "t.map"))
    writeLines(c("F1 I1 0 0 1 -9 A A C G", "F2 I2 0 0 2 -9 A G G G"), file.path(d, "t.ped"))
    stopifnot(identical(dim(rpgen_read(file.path(d, "t.ped"), runtime = rt)), c(2L, 2L)))
    gguf_write(file.path(d, "t.gguf"), metadata = list(general.name = "t"))
    stopifnot(identical(gguf_metadata(gguf_open(file.path(d, "t.gguf")))[["general.name"]], "t"))
    stopifnot(is.character(rllm_ggml_info()$isa))
    y <- c(0.1, 0.9, -0.2, 1.4, 0.3, 2.2)
    G <- fmalloc_bed(matrix(c(0L, 1L, 0L, 1L, 0L, 2L), 6, 1), rt)
    b <- statgen_gwas(G, y)$BETA
    stopifnot(isTRUE(all.equal(b, unname(coef(lm(y ~ as.vector(G[, 1])))[2]))))
    cat("loaded and ran:", paste(sapply(readLines("'"$top"'/tools/packages"),
        function(p) paste(p, packageVersion(p))), collapse = ", "), "\n")'
}

install_log() { # what lib args...
  local what=$1 lib=$2; shift 2
  if ! R_LIBS="$lib:$tmp/deps" R CMD INSTALL -l "$lib" "$@" >"$tmp/log" 2>&1; then
    cat "$tmp/log"; echo "check-install: $what failed" >&2; exit 1
  fi
}

mkdir -p "$tmp/lib-dir"
for p in $pkgs; do
  install_log "R CMD INSTALL packages/$p" "$tmp/lib-dir" "$tmp/clone/packages/$p"
  echo "R CMD INSTALL packages/$p: ok"
done
smoke "$tmp/lib-dir"

mkdir -p "$tmp/built" "$tmp/lib-tar"
for p in $pkgs; do
  (cd "$tmp/built" && R_LIBS="$tmp/lib-tar:$tmp/deps" R CMD build --no-build-vignettes \
    "$tmp/clone/packages/$p" >"$tmp/log" 2>&1) || { cat "$tmp/log"; echo "check-install: R CMD build $p failed" >&2; exit 1; }
  tarball=$(ls "$tmp/built/${p}"_*.tar.gz)
  rm -rf "$tmp/alone" && mkdir "$tmp/alone" && cp "$tarball" "$tmp/alone/"
  (cd "$tmp/alone" && install_log "R CMD INSTALL $(basename "$tarball")" "$tmp/lib-tar" "$(basename "$tarball")")
  echo "R CMD build + INSTALL $(basename "$tarball") ($(du -k "$tarball" | cut -f1) kB): ok"
done
smoke "$tmp/lib-tar"
