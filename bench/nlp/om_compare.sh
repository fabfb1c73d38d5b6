#!/usr/bin/env bash
# Ordered Memory against the PyTorch reference on the same data (issue 27
# §4): grove's OM logic classifier (`grove nlp classify train --task logic
# --model om`) beside bench/nlp/om_ref.py, written from the spec.
#
#   bench/nlp/om_compare.sh steps  GROVE OUT_DIR [--steps N] [--nhid D]
#                                  [--data DIR] [--fraction F]
#   bench/nlp/om_compare.sh scaled GROVE OUT_DIR [--seeds LIST] [--epochs E]
#                                  [--nhid D] [--data DIR] [--fraction F]
#                                  [--test-fraction F] [--no-dropout]
#                                  [--ref-seeds LIST]
#
# Both modes first write the scaled data set into OUT_DIR/data: every F-th
# pair of train0-6 (default 10: a tenth, 13,553 pairs) and every 4th pair
# of test0-12 (--test-fraction), in the released format, so that both
# sides read the same files and apply the same rule (validation: every
# 10th training pair; ordered_memory.md §9).
#
# steps: the same initial weights and the same batches. grove writes its
# initial model (`--epochs 0`), then trains N steps (default 96, one epoch
# of the tenth; N <= one epoch) with every dropout 0 and
# GROVE_CLASSIFY_TRACE recording each batch and its loss; om_ref.py replay
# starts from that checkpoint, takes the same steps (Adam, clipping, weight
# decay as the spec) in float32 and in float64, and the table gives the
# relative difference of the losses per step.
#
# scaled: independent runs of each side from their own initial weights and
# batch orders (the frameworks' random streams differ), the published
# logic configuration at D (default 64) for E epochs (default 5), one seed
# after another (--seeds, default 1,2,3; --ref-seeds, default the same,
# for the reference, which runs several times slower); then the
# validation-accuracy curves per epoch as mean and range over the seeds,
# both sides, the test accuracy per length at the last epoch, and
# valid_acc.png. A seed whose
# outputs are complete is not run again, so an interrupted run resumes.
# Each process runs on one thread.
set -euo pipefail
usage() { sed -n '6,11p' "$0" >&2; exit 2; }
(($# >= 3)) || usage
mode=$1 grove=$2 out=$3
shift 3
case $mode in steps | scaled) ;; *) echo "om_compare.sh: unknown mode '$mode' (steps or scaled)" >&2; usage ;; esac
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
python=${GROVE_TORCH_PYTHON:-/usr/bin/python3}
# one thread on the PyTorch side in every library: a second, spinning
# thread makes it crawl (a tenth of a core) when the machine has more
# runnable processes than cores
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
ref=$here/om_ref.py
[[ -x $grove ]] || { echo "om_compare.sh: GROVE '$grove' is not an executable" >&2; exit 2; }
data=$src/../shared/data/logic_inference
steps=96 nhid=64 fraction=10 test_fraction=4 seeds=1,2,3 ref_seeds= epochs=5 no_dropout=0
while (($#)); do
    case $1 in
    --steps) steps=${2:?--steps needs a value}; shift 2 ;;
    --nhid) nhid=${2:?--nhid needs a value}; shift 2 ;;
    --data) data=${2:?--data needs a folder}; shift 2 ;;
    --fraction) fraction=${2:?--fraction needs a value}; shift 2 ;;
    --test-fraction) test_fraction=${2:?--test-fraction needs a value}; shift 2 ;;
    --seeds) seeds=${2:?--seeds needs a list like 1,2,3}; shift 2 ;;
    --ref-seeds) ref_seeds=${2:?--ref-seeds needs a list like 1,2}; shift 2 ;;
    --epochs) epochs=${2:?--epochs needs a value}; shift 2 ;;
    --no-dropout) no_dropout=1; shift ;;
    *) echo "om_compare.sh: unknown option '$1'" >&2; usage ;;
    esac
done
for v in steps nhid fraction test_fraction epochs; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "om_compare.sh: --${v//_/-} '${!v}' is not a positive integer" >&2; exit 2; }
done
ref_seeds=${ref_seeds:-$seeds}
[[ $seeds =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "om_compare.sh: --seeds '$seeds' is not a list like 1,2,3" >&2; exit 2; }
[[ $ref_seeds =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "om_compare.sh: --ref-seeds '$ref_seeds' is not a list like 1,2" >&2; exit 2; }
for k in 0 1 2 3 4 5 6; do
    [[ -f $data/train$k ]] || { echo "om_compare.sh: --data '$data' has no train$k" >&2; exit 2; }
done
$python -c "import torch, msgpack, numpy" 2>/dev/null ||
    { echo "om_compare.sh: $python lacks torch, msgpack or numpy (Debian: python3-torch python3-msgpack)" >&2; exit 2; }
mkdir -p "$out"

# the scaled data set (rewritten only when missing)
d=$out/data
if [[ ! -f $d/.complete ]]; then
    rm -rf "$d" && mkdir -p "$d"
    for k in 0 1 2 3 4 5 6; do awk -v f="$fraction" 'NR % f == 0' "$data/train$k" >"$d/train$k"; done
    for k in $(seq 0 12); do awk -v f="$test_fraction" 'NR % f == 0' "$data/test$k" >"$d/test$k"; done
    echo "every ${fraction}th train pair, every ${test_fraction}th test pair of $data" >"$d/.complete"
fi
echo "data: $out/data ($(cat "$d/.complete")): $(cat "$d"/train[0-6] | wc -l) training pairs, $(cat "$d"/test* | wc -l) test pairs"

size=(--emsize "$nhid" --nhid "$nhid")
# every dropout 0 (grove and om_ref.py share the flag names)
nodrop=(--dropouti 0 --dropout 0 --dropoutm 0 --dropouto 0)

if [[ $mode == steps ]]; then
    rm -rf "$out/init" "$out/trace_run" "$out/trace.txt"
    "$grove" nlp classify train --task logic --model om --data "$d" "${size[@]}" \
        --epochs 0 --seed 1 --threads 1 --quiet --out "$out/init" >/dev/null
    GROVE_CLASSIFY_TRACE=$out/trace.txt "$grove" nlp classify train --task logic \
        --model om --data "$d" "${size[@]}" "${nodrop[@]}" --epochs 1 \
        --max-batches "$steps" --test-every 1000 --seed 1 --threads 1 --quiet \
        --out "$out/trace_run" >/dev/null
    n=$(grep -c '^batch' "$out/trace.txt")
    ((n == steps)) || echo "note: one epoch holds $n batches, fewer than --steps $steps"
    for prec in single double; do
        extra=()
        [[ $prec == double ]] && extra=(--double)
        "$python" "$ref" replay --init "$out/init/last.ckpt" --trace "$out/trace.txt" \
            "${size[@]}" "${nodrop[@]}" --nslot 12 --threads 1 "${extra[@]}" >"$out/replay_$prec.txt"
    done
    echo "same initial weights (grove's, seed 1), the same $n batches of 128 pairs, every dropout 0, D $nhid, 12 slots:"
    echo "| step | grove loss | PyTorch float32 | relative difference | PyTorch float64 | relative difference |"
    echo "|---|---|---|---|---|---|"
    paste -d' ' <(sed -n '2,$p' "$out/replay_single.txt" | grep -v worst) \
        <(sed -n '2,$p' "$out/replay_double.txt" | grep -v worst) |
        awk -v n="$n" '$1 <= 3 || $1 == 5 || $1 % 10 == 0 || $1 == n {
            printf "| %d | %.7f | %.7f | %.1e | %.7f | %.1e |\n", $1, $2, $3, $4, $7, $8 }'
    echo "worst over the $n steps: float32 $(awk '/worst/ {print $2}' "$out/replay_single.txt"), float64 $(awk '/worst/ {print $2}' "$out/replay_double.txt")"
    exit 0
fi

# scaled
extra=()
if ((no_dropout)); then extra=("${nodrop[@]}"); fi
files=() groups=()
for s in $(echo "${seeds//,/ } ${ref_seeds//,/ }" | tr ' ' '\n' | sort -nu); do
    g=$out/grove_s$s
    if [[ ,$seeds, == *,$s,* ]]; then
        if [[ ! -f $g/metrics.csv ]] || (($(wc -l <"$g/metrics.csv") < epochs + 1)); then
            echo "seed $s: grove ($(date +%T))"
            "$grove" nlp classify train --task logic --model om --data "$d" "${size[@]}" \
                "${extra[@]}" --epochs "$epochs" --seed "$s" --threads 1 --quiet --force \
                --out "$g" >"$g.log" 2>&1 || { echo "om_compare.sh: grove failed, see $g.log" >&2; exit 1; }
        fi
        files+=("$g/metrics.csv") groups+=(grove)
    fi
    r=$out/ref_s$s.csv
    if [[ ,$ref_seeds, == *,$s,* ]]; then
        if [[ ! -f $r ]] || (($(wc -l <"$r") < epochs + 1)); then
            echo "seed $s: PyTorch ($(date +%T))"
            "$python" "$ref" train --data "$d" --out "$r.tmp" "${size[@]}" "${extra[@]}" \
                --epochs "$epochs" --seed "$s" --threads 1 >"$out/ref_s$s.log" 2>&1 ||
                { echo "om_compare.sh: om_ref.py failed, see $out/ref_s$s.log" >&2; exit 1; }
            mv "$r.tmp" "$r"
        fi
        files+=("$r") groups+=(PyTorch)
    fi
done
glist=$(IFS=,; echo "${groups[*]}")
"$grove" plot --x epoch --y valid_acc --group "$glist" --print --force --quiet \
    --title "OM, 1/$fraction of logic, D $nhid: valid accuracy (mean, min-max)" \
    --out "$out/valid_acc.png" "${files[@]}" >"$out/valid_acc_summary.csv"
echo "validation accuracy per epoch, mean [min, max] over seeds (grove $seeds, PyTorch $ref_seeds):"
echo "| epoch | grove | PyTorch |"
echo "|---|---|---|"
awk -F, 'NR > 1 { v[$1, $3] = sprintf("%.3f [%.3f, %.3f]", $4, $6, $7); if ($3 > m) m = $3 }
    END { for (e = 1; e <= m; e++) printf "| %d | %s | %s |\n", e, v["grove", e], v["PyTorch", e] }' \
    "$out/valid_acc_summary.csv"
echo "test accuracy at epoch $epochs (last epoch's model), by operators, mean over seeds:"
echo "| side | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10 | 11 | 12 |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for side in grove PyTorch; do
    for i in "${!files[@]}"; do
        if [[ ${groups[$i]} == "$side" ]]; then echo "${files[$i]}"; fi
    done | xargs awk -F, -v side="$side" -v ep="$epochs" '
        FNR == 1 { for (c = 1; c <= NF; c++) col[$c] = c; next }
        $col["epoch"] == ep { n++; for (k = 1; k <= 12; k++) s[k] += $col["test_acc_" k] }
        END { printf "| %s", side; for (k = 1; k <= 12; k++) printf " | %.1f", 100 * s[k] / n; print " |" }'
done
echo "plot: $out/valid_acc.png"
