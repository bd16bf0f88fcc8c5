#!/usr/bin/env bash
# The core must build without R: fail if any R header is included under core/.
set -euo pipefail
cd "$(dirname "$0")/.."
if grep -rnE '#include *[<"](R\.h|Rinternals\.h|Rdefines\.h|R_ext/|Rcpp)' core; then
  echo "R headers found under core/" >&2
  exit 1
fi
