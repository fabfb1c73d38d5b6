#!/usr/bin/env bash
# The README's first command: install what is missing, build grove
# (Release; CUDA when nvcc is found), and run the default job.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
./build/grove version
