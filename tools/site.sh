#!/usr/bin/env bash
# make site: the documentation site. One pkgdown site per package (reference
# pages with their examples run, vignettes rendered as articles) in
# <dest>/<Pkg>/, and a home page <dest>/index.html: the top README with links
# to every package's site. <dest> is $1, build/site by default.
# The packages are read as installed in R_LIBS (build/rlib: `make install`
# first); pkgdown installs and compiles nothing (devel = FALSE, install =
# FALSE: examples and articles call library(<Pkg>)).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/build/site}
export R_LIBS=${R_LIBS:-$root/build/rlib}
mapfile -t pkgs < "$root/tools/packages"

bash "$root/tools/apt-need.sh" site pandoc r-cran-pkgdown r-cran-knitr r-cran-rmarkdown

SITE_PKGS="${pkgs[*]}" Rscript -e 'for (p in strsplit(Sys.getenv("SITE_PKGS"), " ")[[1]])
  if (!requireNamespace(p, quietly = TRUE))
    stop("site: ", p, " is not installed in R_LIBS (", Sys.getenv("R_LIBS"), "): run make install first", call. = FALSE)'

mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
case "$dest/" in
  "$root/packages/"*) echo "site: the site is never written inside packages/ ($dest)" >&2; exit 1 ;;
esac

log=$(mktemp)
trap 'rm -f "$log"' EXIT
for p in "${pkgs[@]}"; do
  start=$SECONDS
  rm -rf "${dest:?}/$p"
  # pkgdown.internet = FALSE: no look-ups of CRAN or Bioconductor pages (the
  # packages are on neither, and the build runs offline).
  SITE_SRC="$root/packages/$p" SITE_DEST="$dest/$p" Rscript -e 'options(pkgdown.internet = FALSE)
    pkgdown::build_site(Sys.getenv("SITE_SRC"), devel = FALSE, install = FALSE,
                        new_process = FALSE, preview = FALSE,
                        override = list(destination = Sys.getenv("SITE_DEST")))' >"$log" 2>&1 ||
    { cat "$log"; echo "site: pkgdown failed for $p" >&2; exit 1; }
  echo "site: $p ($((SECONDS - start)) s): $dest/$p/index.html"
done
Rscript "$root/tools/site-home.R" "$root" "$dest"
