#!/usr/bin/env bash
# Copy the core modules an R package lists in <pkg>/core-modules (one name a
# line: "x" means core/src/x.c, "x.h" a private header) and every public
# header into the package's src/ (generated, never committed), or with
# --check report whether the package's copy has drifted from core/.
# Usage: tools/sync-core.sh [--check] packages/Rfmalloc
set -euo pipefail
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
pkg=${1:?package directory}
top=$(cd "$(dirname "$0")/.." && pwd)
src="$pkg/src"
mkdir -p "$src/fm"
status=0
sync_one() { # from to
  if [ $check -eq 1 ]; then
    cmp -s "$1" "$2" || { echo "drift: $2 differs from $1"; status=1; }
  else
    cmp -s "$1" "$2" 2>/dev/null || cp "$1" "$2"
  fi
}
while read -r name; do
  case $name in '' | '#'*) continue ;; esac
  case $name in *.h) f=$top/core/src/$name ;; *) f=$top/core/src/$name.c ;; esac
  [ -e "$f" ] || { echo "sync-core: $pkg/core-modules names $name, but $f does not exist" >&2; exit 1; }
  sync_one "$f" "$src/$(basename "$f")"
done < "$pkg/core-modules"
for f in "$top"/core/include/fm/*.h; do
  sync_one "$f" "$src/fm/$(basename "$f")"
done
exit $status
