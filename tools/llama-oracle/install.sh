#!/usr/bin/env bash
# Install llama.cpp's prebuilt Node binding (node-llama-cpp 3.21.1 and its
# linux-x64 CPU binaries) into tools/llama-oracle/node_modules, once, from
# package.json / package-lock.json (exact versions). It is the oracle that
# Rllm's tests and bench/llm compare against (oracle.mjs).
#
# No network when it is already installed. npm's postinstall of
# node-llama-cpp is not run (--ignore-scripts): it only probes the prebuilt
# binary and, if that fails, tries to build llama.cpp from downloaded
# sources; we probe the binary ourselves instead (check.mjs).
#
# When npm or node is missing or the install fails, it says so and exits 0,
# so setup goes on and the oracle tests skip with a message; set
# LLAMA_ORACLE_REQUIRED=1 to make that an error (exit 1).
set -euo pipefail
cd "$(dirname "$0")"
want=3.21.1
required=${LLAMA_ORACLE_REQUIRED:-0}

give_up() {
  echo "llama-oracle: $1" >&2
  echo "llama-oracle: the llama.cpp oracle is unavailable; tests that need it will be skipped" >&2
  if [ "$required" = 1 ]; then exit 1; fi
  exit 0
}

installed_version() {
  node -e 'try { console.log(require("./node_modules/" + process.argv[1] + "/package.json").version) } catch (e) { console.log("") }' "$1" 2>/dev/null || true
}

command -v node >/dev/null 2>&1 || give_up "node not found"

if [ "$(installed_version node-llama-cpp)" = "$want" ] &&
   [ "$(installed_version @node-llama-cpp/linux-x64)" = "$want" ]; then
  if node check.mjs >/dev/null 2>&1; then exit 0; fi
  echo "llama-oracle: node-llama-cpp $want is installed but its prebuilt binary does not load; reinstalling" >&2
fi

command -v npm >/dev/null 2>&1 || give_up "npm not found"
echo "setup: installing node-llama-cpp@$want (llama.cpp oracle) from npm"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! npm ci --omit=optional --ignore-scripts --no-audit --no-fund --loglevel=error >"$log" 2>&1; then
  cat "$log" >&2
  give_up "npm ci failed (is the npm registry reachable?)"
fi
if ! node check.mjs; then
  give_up "node-llama-cpp $want installed, but its prebuilt linux-x64 CPU binary does not load"
fi
