#!/usr/bin/env bash
# Prints the packages of scripts/packages.txt that are not installed, on one
# line (nothing when all are). Fast: one dpkg-query call.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mapfile -t wanted < <(grep -v '^\s*#' "$here/packages.txt" | sed '/^\s*$/d')
# dpkg-query exits 1 when a package is unknown to dpkg (never installed on
# this machine): that is the case this script exists for, not an error.
installed=$({ dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${wanted[@]}" 2>/dev/null || true; } |
  awk '$2 == "installed" {print $1}')
missing=()
for p in "${wanted[@]}"; do
  grep -qx "$p" <<<"$installed" || missing+=("$p")
done
echo "${missing[*]:-}"
