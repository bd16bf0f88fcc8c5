#!/usr/bin/env bash
# Copy the C core into an R package's src/ (generated, never committed), or
# with --check report whether the package's copy has drifted from core/.
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
for f in "$top"/core/src/*.c "$top"/core/src/*.h; do
  [ -e "$f" ] && sync_one "$f" "$src/$(basename "$f")"
done
for f in "$top"/core/include/fm/*.h; do
  sync_one "$f" "$src/fm/$(basename "$f")"
done
exit $status
