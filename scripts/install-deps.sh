#!/usr/bin/env bash
# Installs the Debian packages mbopt needs, only those that are missing (non-interactive).
# Then the JavaScript libraries that the HTML pages inline (package.json, versions pinned in
# package-lock.json) into node_modules/ with npm ci, when they are missing or older than the lock.
set -euo pipefail
packages=(cmake make gcc g++ libnlopt-dev libopenblas-dev liblapacke-dev libsuitesparse-dev libcjson-dev
          gnuplot-nox clang libclang-rt-dev python3 python3-numpy python3-scipy python3-pytest chromium)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
# node and npm from Debian, unless a node with its npm is there already
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
cd "$(dirname "$0")/.."
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "installing the JavaScript libraries of package-lock.json into node_modules/ (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi
