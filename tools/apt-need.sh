#!/usr/bin/env bash
# Install the Debian packages of the list that are not installed yet (dpkg
# -s), with one apt-get; nothing when all are there.
# Usage: tools/apt-need.sh LABEL PKG...   (LABEL prefixes the message)
set -euo pipefail
label=${1:?label}; shift
need=()
for p in "$@"; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
((${#need[@]})) || exit 0
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "$label: installing Debian packages: ${need[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
