#!/usr/bin/env bash
# The S1 experiment of issue 8 ("Results"; ocn.md §6, §9, thesis Table 5.2):
# behaviour cloning on AC and CD with K = 3, for OCN tau_C = 10, OCN
# tau_C = 1 and the MoE baseline (and, on request, blind10, blind1 and
# blindmoe: the same three with the controller blind to the observation,
# train bc --blind-controller, the variant of docs/ocn; blindnoinv10,
# blindnoinv1, blindnoinvmoe: the same with --options-without-inventory
# too; blindnoinvbal10: blindnoinv10 with --balance-options 0.1), several
# seeds each; then, for every run,
# the option -> subtask success matrix of best.ckpt (`grove eval options`)
# and greedy returns (`grove craft run --agent ocn`), and one table with a
# row per run and the means per configuration.
#
#   bench/ocn/s1.sh GROVE OUT_DIR [--updates N] [--seeds 1,2,3,4,5]
#                   [--configs ocn10,ocn1,moe,blind10,...] [--jobs J] [--device D]
#                   [--threads T] [--demos-per-task N] [--n-each N]
#   e.g. bench/ocn/s1.sh build/grove runs/s1 --updates 10000 --jobs 2
#
# Every configuration starts from train bc --recipe thesis (ocn.md §3-§6)
# and adds its own departures, so the names mean what they say whatever
# train bc's default recipe is.
# --n-each sets the copies of each primitive on the maps (train bc
# --n-each; default 1, craft.md §3); the checkpoints keep it, so the
# success matrix and the greedy returns are measured in the same world.
#
# Runs go into OUT_DIR/<config>_seed<S>/ and resume: a run that stopped
# early continues from its last.ckpt (bit for bit), a finished one is not
# run again, so the script can be called repeatedly (for instance once per
# time-limited session on a lent GPU) until every run is done. --jobs runs
# that many trainings at once (each with --threads threads).
set -euo pipefail
usage() { sed -n '14,17p' "$0" >&2; exit 2; }
(($# >= 2)) || usage
grove=$1 out=$2
shift 2
updates=10000 seeds=1,2,3,4,5 configs=ocn10,ocn1,moe jobs=1 device=auto
threads=1 per_task=6000 n_each=1
while (($#)); do
    (($# >= 2)) || usage
    case $1 in
    --updates) updates=$2 ;;
    --seeds) seeds=$2 ;;
    --configs) configs=$2 ;;
    --jobs) jobs=$2 ;;
    --device) device=$2 ;;
    --threads) threads=$2 ;;
    --demos-per-task) per_task=$2 ;;
    --n-each) n_each=$2 ;;
    *) echo "s1.sh: unknown option '$1'" >&2; usage ;;
    esac
    shift 2
done
[[ -x $grove ]] || { echo "s1.sh: GROVE '$grove' is not an executable" >&2; exit 2; }
posint() {
    [[ $2 =~ ^[1-9][0-9]*$ ]] || { echo "s1.sh: $1 '$2' is not a positive integer" >&2; exit 2; }
}
posint --updates "$updates"
posint --jobs "$jobs"
posint --threads "$threads"
posint --demos-per-task "$per_task"
posint --n-each "$n_each"
IFS=, read -r -a seed_list <<<"$seeds"
IFS=, read -r -a config_list <<<"$configs"
for s in "${seed_list[@]}"; do
    [[ $s =~ ^[0-9]+$ ]] || { echo "s1.sh: bad seed '$s'" >&2; exit 2; }
done
for c in "${config_list[@]}"; do
    case $c in
    ocn10 | ocn1 | moe | blind10 | blind1 | blindmoe | blindnoinv10 | blindnoinv1 | blindnoinvmoe | blindnoinvbal10) ;;
    *) echo "s1.sh: unknown config '$c' (ocn10, ocn1, moe, blind10, blind1, blindmoe, blindnoinv10, blindnoinv1, blindnoinvmoe, blindnoinvbal10)" >&2; exit 2 ;;
    esac
done
mkdir -p "$out"

# One run: train (or resume), then the success matrix and greedy returns.
run_one() {
    local c=$1 s=$2 d=$out/$1_seed$2 model=ocn tau=10 blind=()
    case $c in
    ocn1) tau=1 ;;
    moe) model=moe ;;
    blind10) blind=(--blind-controller) ;;
    blind1) tau=1 blind=(--blind-controller) ;;
    blindmoe) model=moe blind=(--blind-controller) ;;
    blindnoinv10) blind=(--blind-controller --options-without-inventory) ;;
    blindnoinv1) tau=1 blind=(--blind-controller --options-without-inventory) ;;
    blindnoinvmoe) model=moe blind=(--blind-controller --options-without-inventory) ;;
    blindnoinvbal10) blind=(--blind-controller --options-without-inventory --balance-options 0.1) ;;
    esac
    if ! grep -q "^$updates," "$d/metrics.csv" 2>/dev/null; then
        local start=--force
        [[ -f $d/last.ckpt ]] && start=--resume
        "$grove" train bc --recipe thesis --tasks AC,CD --options 3 --model "$model" \
            --tau "$tau" --seed "$s" --updates "$updates" --device "$device" \
            --demos-per-task "$per_task" --n-each "$n_each" \
            --threads "$threads" "${blind[@]}" --quiet --out "$d" "$start" >>"$d.log" 2>&1 ||
            { echo "s1.sh: $c seed $s failed; see $d.log" >&2; return 1; }
    fi
    if [[ ! -s $d/returns.txt || $d/returns.txt -ot $d/best.ckpt ]]; then
        "$grove" eval options --checkpoint "$d/best.ckpt" --device "$device" \
            --threads "$threads" --out "$d/matrix.csv" --force >"$d/matrix.txt" 2>&1 &&
            "$grove" craft run --agent ocn --checkpoint "$d/best.ckpt" \
                --episodes 100 --device "$device" --threads "$threads" --quiet \
                >"$d/returns.txt" 2>&1 ||
            { echo "s1.sh: evaluating $c seed $s failed; see $d/" >&2; return 1; }
    fi
    echo "s1.sh: $c seed $s done" >&2
}

t0=$SECONDS
failed=0
running=0
for c in "${config_list[@]}"; do
    for s in "${seed_list[@]}"; do
        if ((running >= jobs)); then
            wait -n || failed=1
            running=$((running - 1))
        fi
        run_one "$c" "$s" &
        running=$((running + 1))
    done
done
while ((running > 0)); do
    wait -n || failed=1
    running=$((running - 1))
done

# The table: the last validation row of each run's metrics.csv, its lowest
# validation NLL, the success matrix's diagonal after the best one-to-one
# assignment (printed by grove eval options) and the greedy returns; then,
# from the same eval options on best.ckpt (new demonstrations), the NMI per
# step and per subtask segment and the mean e_t right after a boundary and
# elsewhere (below 0.9 after a boundary: a task's boundary is not marked).
echo "# S1: AC, CD, K = 3, $updates updates, seeds $seeds, n_each $n_each ($((SECONDS - t0)) s)"
echo
echo "| run | update | nll | best nll | action_acc | f1_tol1 | align_acc | nmi | diag mean | diag min | greedy AC | greedy CD | train wall | best: nmi steps / segments | best: e_t after boundary / elsewhere |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for c in "${config_list[@]}"; do
    for s in "${seed_list[@]}"; do
        d=$out/${c}_seed$s
        [[ -f $d/metrics.csv ]] || continue
        diag=$(sed -n 's/.*diagonal mean \([0-9.]*\), min \([0-9.]*\).*/\1 \2/p' "$d/matrix.txt" 2>/dev/null)
        ret=$(awk '$1 == "AC" || $1 == "CD" { printf "%s %s ", $3, $4 }' "$d/returns.txt" 2>/dev/null)
        align=$(sed -n 's/^NMI \([0-9.]*\) over [0-9]* steps (\([0-9.]*\) over .* e_t \([0-9.a-z]*\) on the first .*), \([0-9.a-z]*\) on the other .*/\1 \2 \3 \4/p' "$d/matrix.txt" 2>/dev/null)
        awk -F, -v name="${c}_seed$s" -v diag="${diag:-- -}" -v ret="${ret:-- - - -}" \
            -v align="${align:-- - - -}" '
            NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
            { best = (best == "" || $col["nll"] < best) ? $col["nll"] : best; last = $0 }
            END {
                split(last, f, ","); split(diag, dg, " "); split(ret, r, " ")
                split(align, a, " ")
                printf "| %s | %s | %.4f | %.4f | %.3f | %.3f | %.3f | %.3f | %s | %s | %s (%s) | %s (%s) | %.0f min | %s / %s | %s / %s |\n",
                    name, f[col["update"]], f[col["nll"]], best, f[col["action_acc"]],
                    f[col["f1_tol1"]], f[col["align_acc"]], f[col["nmi"]], dg[1], dg[2],
                    r[1], r[2], r[3], r[4], f[col["wall_s"]] / 60, a[1], a[2], a[3], a[4]
            }' "$d/metrics.csv"
    done
done | tee "$out/table.md.tmp"
echo
echo "Means per configuration (NMI >= 0.99 counts as 1.0):"
echo
echo "| config | runs | nmi | runs with nmi 1.0 | diag mean | diag min | action_acc | runs with a boundary unmarked |"
echo "|---|---|---|---|---|---|---|---|"
awk -F'|' '
    { split($2, n, "_seed"); c = n[1]; gsub(/ /, "", c)
      if (!(c in k)) order[++nc] = c
      k[c]++; nmi[c] += $9; one[c] += ($9 >= 0.99)
      if ($10 ~ /[0-9]/) { dm[c] += $10; dn[c] += $11; nd[c]++ }
      acc[c] += $6
      split($16, e, "/"); if (e[1] ~ /[0-9]/) { ne[c]++; low[c] += (e[1] + 0 < 0.9) } }
    END {
        for (i = 1; i <= nc; i++) {
            c = order[i]
            printf "| %s | %d | %.3f | %d of %d | %s | %s | %.3f | %s |\n", c, k[c], nmi[c] / k[c],
                one[c], k[c], nd[c] ? sprintf("%.3f", dm[c] / nd[c]) : "-",
                nd[c] ? sprintf("%.3f", dn[c] / nd[c]) : "-", acc[c] / k[c],
                ne[c] ? sprintf("%d of %d", low[c], ne[c]) : "-"
        }
    }' "$out/table.md.tmp"
rm -f "$out/table.md.tmp"
exit "$failed"
