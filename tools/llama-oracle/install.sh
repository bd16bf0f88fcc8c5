#!/usr/bin/env bash
# Install llama.cpp's prebuilt Node binding (node-llama-cpp) into
# tools/llama-oracle/node_modules, once. It is the oracle that Rllm's tests
# and bench/llm compare against.
set -euo pipefail
cd "$(dirname "$0")"
if [ -d node_modules/node-llama-cpp ] && [ -d node_modules/@node-llama-cpp/linux-x64 ]; then exit 0; fi
echo "setup: installing node-llama-cpp@3.21.1 (llama.cpp oracle) from npm"
npm i -E --omit=optional --no-audit --no-fund --loglevel=error \
  node-llama-cpp@3.21.1 @node-llama-cpp/linux-x64@3.21.1 >/dev/null
