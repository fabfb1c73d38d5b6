#!/usr/bin/env bash
# The README's first command: install what is missing, build grove
# (Release; CUDA when nvcc is found), and run the default job: the scripted
# expert solving the S1 imitation tasks of OCN (AC, CD; craft.md §6.4):
# the 6000 demonstrations per task that behaviour cloning reads (§10),
# recorded as a replay, verified by re-simulation, and summarised.
# Output: runs/default/s1-expert.replay (replaced on every run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
./build/grove version
out=runs/default/s1-expert.replay
mkdir -p "$(dirname "$out")"
echo
./build/grove craft demos --tasks AC,CD --episodes 6000 --seed 1 \
    --out "$out" --force
echo
./build/grove replay verify "$out"
echo
./build/grove replay info "$out"
