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
headers_changed=0
sync_one() { # from to
  if [ $check -eq 1 ]; then
    cmp -s "$1" "$2" || { echo "drift: $2 differs from $1"; status=1; }
  elif ! cmp -s "$1" "$2" 2>/dev/null; then
    cp "$1" "$2"
    case $2 in *.h) headers_changed=1 ;; esac
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
# R's make tracks no header dependencies: objects built against an older
# header (a struct that grew a field) would link into a crashing package.
if [ $headers_changed -eq 1 ]; then rm -f "$src"/*.o "$src"/*.so; fi
exit $status
