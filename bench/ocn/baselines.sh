#!/usr/bin/env bash
# Fig 5.7 left of the thesis (issue 26 §3; ocn.md §10): parsing during
# imitation, OCN against its baselines OMPN and compILE. Behaviour cloning
# on AC and CD (grove train bc --model ocn|ompn|compile, each with its own
# IL defaults of batch and learning rate: OCN 512 and 1e-3, OMPN 256 and
# 1e-3, compILE 256 and 1e-4; the same --updates for all, the figure's x
# axis), several seeds each; then one CSV and one picture of the mean F1
# (tolerance 1) and alignment accuracy per model against updates, one
# picture per metric with each model's mean and min-max band over the
# seeds, and a table of the last rows.
#
#   bench/ocn/baselines.sh GROVE OUT_DIR [--updates N] [--seeds 1,2,3,4,5]
#                          [--models ocn,ompn,compile] [--device D]
#                          [--threads T] [--demos-per-task N] [--n-each N]
#                          [--eval-every N] [--hidden D]
#   e.g. bench/ocn/baselines.sh build/grove runs/fig57 --updates 10000 --device cuda
#
# Runs go into OUT_DIR/<model>_seed<S>/ and resume like bench/ocn/s1.sh: a
# run that stopped continues from its last.ckpt, a finished one is not run
# again. Outputs: OUT_DIR/fig57_left.csv (update, then <model>_f1_tol1 and
# <model>_align_acc: means over the seeds, on the updates every seed of
# that model has reached), OUT_DIR/fig57_left.png, OUT_DIR/fig57_f1_tol1.png
# and OUT_DIR/fig57_align_acc.png (bands), the table on stdout.
# --demos-per-task and --n-each default to train bc's own (the S1 recipe of
# ocn.md §6.1: 24,000 demonstrations per task in the four-copy world).
# --hidden (default: each model's 128) sets d for all three (and the OCN's
# width), for small runs.
set -euo pipefail
usage() { sed -n '11,15p' "$0" >&2; exit 2; }
(($# >= 2)) || usage
grove=$1 out=$2
shift 2
updates=10000 seeds=1,2,3,4,5 models=ocn,ompn,compile device=auto
threads=1 per_task= n_each= eval_every=100 hidden=
while (($#)); do
    (($# >= 2)) || usage
    case $1 in
    --updates) updates=$2 ;;
    --seeds) seeds=$2 ;;
    --models) models=$2 ;;
    --device) device=$2 ;;
    --threads) threads=$2 ;;
    --demos-per-task) per_task=$2 ;;
    --n-each) n_each=$2 ;;
    --eval-every) eval_every=$2 ;;
    --hidden) hidden=$2 ;;
    *) echo "baselines.sh: unknown option '$1'" >&2; usage ;;
    esac
    shift 2
done
[[ -x $grove ]] || { echo "baselines.sh: GROVE '$grove' is not an executable" >&2; exit 2; }
posint() {
    [[ $2 =~ ^[1-9][0-9]*$ ]] || { echo "baselines.sh: $1 '$2' is not a positive integer" >&2; exit 2; }
}
posint --updates "$updates"
posint --threads "$threads"
[[ -z $per_task ]] || posint --demos-per-task "$per_task"
[[ -z $n_each ]] || posint --n-each "$n_each"
posint --eval-every "$eval_every"
[[ -z $hidden ]] || posint --hidden "$hidden"
IFS=, read -r -a seed_list <<<"$seeds"
IFS=, read -r -a model_list <<<"$models"
for s in "${seed_list[@]}"; do
    [[ $s =~ ^[0-9]+$ ]] || { echo "baselines.sh: bad seed '$s'" >&2; exit 2; }
done
for m in "${model_list[@]}"; do
    case $m in
    ocn | ompn | compile) ;;
    *) echo "baselines.sh: unknown model '$m' (ocn, ompn, compile)" >&2; exit 2 ;;
    esac
done
mkdir -p "$out"

t0=$SECONDS
failed=0
for m in "${model_list[@]}"; do
    for s in "${seed_list[@]}"; do
        d=$out/${m}_seed$s
        grep -q "^$updates," "$d/metrics.csv" 2>/dev/null && continue
        start=--force
        [[ -f $d/last.ckpt ]] && start=--resume
        size=()
        [[ -z $per_task ]] || size+=(--demos-per-task "$per_task")
        [[ -z $n_each ]] || size+=(--n-each "$n_each")
        if [[ -n $hidden ]]; then
            size+=(--hidden "$hidden")
            [[ $m == ocn ]] && size+=(--width "$hidden")
        fi
        "$grove" train bc --tasks AC,CD --model "$m" --seed "$s" \
            --updates "$updates" --eval-every "$eval_every" --return-every 0 \
            --device "$device" --threads "$threads" "${size[@]}" \
            --quiet --out "$d" "$start" >>"$d.log" 2>&1 ||
            { echo "baselines.sh: $m seed $s failed; see $d.log" >&2; failed=1; continue; }
        echo "baselines.sh: $m seed $s done" >&2
    done
done

# The means per model and update over the seeds that have the row.
csv=$out/fig57_left.csv
for m in "${model_list[@]}"; do
    for s in "${seed_list[@]}"; do
        f=$out/${m}_seed$s/metrics.csv
        [[ -f $f ]] && awk -F, -v m="$m" '
            NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
            { print m, $col["update"], $col["f1_tol1"], $col["align_acc"] }' "$f"
    done
done | awk -v models="$models" -v nseeds="${#seed_list[@]}" '
    { k = $1 SUBSEP $2; n[k]++; f1[k] += $3; al[k] += $4; up[$2] = 1 }
    END {
        nm = split(models, ms, ",")
        printf "update"
        for (i = 1; i <= nm; i++) printf ",%s_f1_tol1", ms[i]
        for (i = 1; i <= nm; i++) printf ",%s_align_acc", ms[i]
        printf "\n"
        nu = 0
        for (u in up) us[++nu] = u + 0
        for (i = 1; i <= nu; i++)            # insertion sort: a few hundred rows
            for (j = i; j > 1 && us[j - 1] > us[j]; j--) { t = us[j]; us[j] = us[j - 1]; us[j - 1] = t }
        for (i = 1; i <= nu; i++) {
            u = us[i]; line = u; any = 0
            for (j = 1; j <= nm; j++) {
                k = ms[j] SUBSEP u
                if (n[k] == nseeds) { line = line sprintf(",%.6f", f1[k] / n[k]); any = 1 } else line = line ","
            }
            for (j = 1; j <= nm; j++) {
                k = ms[j] SUBSEP u
                line = line (n[k] == nseeds ? sprintf(",%.6f", al[k] / n[k]) : ",")
            }
            if (any) print line
        }
    }' >"$csv"
ys=$(head -1 "$csv" | cut -d, -f2-)
"$grove" plot "$csv" --x update --y "$ys" \
    --title "F1 tol 1, align acc: mean of ${#seed_list[@]} seeds" \
    --out "$out/fig57_left.png" --force --quiet >&2 ||
    { echo "baselines.sh: the picture failed" >&2; failed=1; }

# each metric on its own: every model's mean with its seeds' min-max band
files=() groups=()
for m in "${model_list[@]}"; do
    for s in "${seed_list[@]}"; do
        f=$out/${m}_seed$s/metrics.csv
        [[ -f $f ]] && { files+=("$f"); groups+=("$m"); }
    done
done
if ((${#files[@]})); then
    for y in f1_tol1 align_acc; do
        "$grove" plot "${files[@]}" --x update --y "$y" \
            --group "$(IFS=,; echo "${groups[*]}")" \
            --title "$y, AC + CD: mean and min-max of ${#seed_list[@]} seeds" \
            --out "$out/fig57_$y.png" --force --quiet >&2 ||
            { echo "baselines.sh: the $y picture failed" >&2; failed=1; }
    done
fi

echo "# Fig 5.7 left: AC, CD, $updates updates, seeds $seeds${n_each:+, n_each $n_each}${per_task:+, $per_task demonstrations per task} ($((SECONDS - t0)) s)"
echo
echo "| run | update | nll | action_acc | f1_tol0 | f1_tol1 | align_acc | nmi |"
echo "|---|---|---|---|---|---|---|---|"
for m in "${model_list[@]}"; do
    for s in "${seed_list[@]}"; do
        f=$out/${m}_seed$s/metrics.csv
        [[ -f $f ]] || continue
        awk -F, -v name="${m}_seed$s" '
            NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
            { last = $0 }
            END {
                split(last, f, ",")
                printf "| %s | %s | %.4f | %.3f | %.3f | %.3f | %.3f | %s |\n", name,
                    f[col["update"]], f[col["nll"]], f[col["action_acc"]],
                    f[col["f1_tol0"]], f[col["f1_tol1"]], f[col["align_acc"]],
                    f[col["nmi"]] == "" ? "-" : sprintf("%.3f", f[col["nmi"]])
            }' "$f"
    done
done
exit "$failed"
