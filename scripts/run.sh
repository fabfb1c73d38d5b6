#!/usr/bin/env bash
# The README's first command: install what is missing, build grove
# (Release; CUDA when nvcc is found), and run the default job: the agents
# pipeline end to end (issue 20 §3), at a budget of a few minutes on 2
# cores:
#   expert demonstrations of S1's imitation tasks (AC, CD; craft.md §6.4)
#   -> behaviour cloning of 3 options with grove's S1 recipe (ocn.md §6.1;
#      1,000 updates: where the decomposition is decided, docs/ocn)
#   -> the success matrix of the options (which option does which subtask)
#   -> PPO of a new controller over the frozen options on DCA, a task BC
#      never saw, sparse reward (ocn.md §7; 500,000 frames)
#   -> its last evaluation as a replay, verified, and as a contact sheet;
#      the learning curves of both runs.
# Output: runs/default/ (replaced on every run); the last lines say what
# each file is. GROVE_RUN_UPDATES and GROVE_RUN_FRAMES change the budget
# (the full-size commands are in the README).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
G=./build/grove
$G version
out=runs/default
updates=${GROVE_RUN_UPDATES:-1000}
frames=${GROVE_RUN_FRAMES:-500000}
mkdir -p "$out"
t0=$SECONDS
step() { echo; echo "== $* ($((SECONDS - t0)) s)"; }

step "1. expert demonstrations of AC and CD, 24000 each (the S1 world: 4 copies of each primitive)"
$G craft demos --tasks AC,CD --episodes 24000 --seed 1 --out "$out/demos.replay" --force
$G replay verify "$out/demos.replay"

step "2. behaviour cloning from them: 3 options, the S1 recipe, $updates updates"
$G train bc --tasks AC,CD --options 3 --demos "$out/demos.replay" --updates "$updates" \
    --return-every 0 --threads "$(nproc)" --out "$out/bc" --force

step "3. which option does which subtask (success matrix and NMI of best.ckpt)"
$G eval options --checkpoint "$out/bc/best.ckpt" --episodes 50 --demos-per-task 50 \
    --threads "$(nproc)" --out "$out/bc/matrix.csv" --force

step "4. PPO on DCA (sparse reward) over the frozen options, $frames frames"
$G train ppo --options "$out/bc/best.ckpt" --task DCA --reward sparse \
    --total-timesteps "$frames" --out "$out/ppo-dca" --force

step "5. the last evaluation: replay verified, one episode as a contact sheet"
$G replay verify "$out/ppo-dca/eval.replay"
$G replay export "$out/ppo-dca/eval.replay" --episode 0 --sheet --out "$out/sheet" --force

step "done"
cat <<TXT
$out/demos.replay             the expert's demonstrations (grove replay play/dump/info)
$out/bc/metrics.csv, curves.png  BC's validation metrics (NLL, F1, alignment, NMI) per 100 updates
$out/bc/best.ckpt             the options (lowest validation NLL); eval options, watch, craft run use it
$out/bc/matrix.csv            success of each option alone on each subtask
$out/ppo-dca/metrics.csv, curves.png  PPO's returns, success, losses against frames
$out/ppo-dca/best.ckpt        the new controller with the frozen options (craft run --agent ocn --tasks DCA)
$out/ppo-dca/eval.replay      100 greedy evaluation episodes, option in force per step (grove replay play)
$out/sheet/ep0000_sheet.png   one of them as a contact sheet (the option timeline under the map)
TXT
