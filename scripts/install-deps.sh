#!/usr/bin/env bash
# Installs the Debian packages mbopt needs, only those that are missing (non-interactive).
set -euo pipefail
packages=(cmake make gcc g++ libnlopt-dev libopenblas-dev liblapacke-dev libsuitesparse-dev libcjson-dev
          gnuplot-nox clang libclang-rt-dev python3 python3-numpy python3-scipy python3-pytest)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
