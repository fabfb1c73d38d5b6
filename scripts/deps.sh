#!/usr/bin/env bash
# Installs the Debian packages grove builds and tests with, when any is
# missing (apt-get update first). Idempotent and quick when all are there.
set -euo pipefail
packages=(cmake make gcc libc6-dev git pkg-config libsdl2-dev libpng-dev
          libmsgpack-dev libopenblas-dev zlib1g-dev libzip-dev xvfb xauth
          clang libclang-rt-14-dev libopenmpi-dev openmpi-bin python3
          python3-numpy python3-msgpack)
missing=()
for p in "${packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi
echo "deps: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
