#!/usr/bin/env bash
# The scaled comparison run of issue 9 ("Results"): grove's ON-LSTM LM and
# the PyTorch reference (onlstm_ref.py train) trained with the same
# configuration, seed policy (a fixed seed each; the random streams differ
# between the two frameworks) and epochs, then their validation perplexity
# side by side per epoch (both with the reference's row divisor, the value
# main.py prints) and the test perplexity of each best model.
#
#   bench/nlp/compare.sh GROVE PTB_DIR OUT_DIR EPOCHS THREADS [--seeds LIST]
#                        [--same-init | --same-rng] [model flags]
#   e.g. bench/nlp/compare.sh build/grove ../shared/data/ptb /tmp/cmp 4 1 \
#            --seeds 141,1,2,3,4 --emsize 128 --nhid 256 --chunk-size 8 \
#            --batch-size 40
#
# One seed gives two curves whose gap is mostly seed noise early in
# training (different random streams); --seeds runs every seed on both
# sides (grove and PyTorch side by side, THREADS each) and compares the
# means, with the spread. A seed whose outputs are already complete in
# OUT_DIR/seed<S>/ is not run again, so an interrupted comparison resumes.
# --same-init removes what differs between the two sides besides the code:
# grove exports its initial weights (`nlp lm train --epochs 0`, last.ckpt),
# the reference starts from them (--init-grove), and both use windows of
# exactly --bptt steps (--fixed-windows). With every dropout set to 0 the
# two runs then compute the same thing, and the gap is the implementations'
# (float rounding, amplified by training) rather than seed noise.
# --same-rng goes further: the same initial weights, and the reference
# draws its window lengths and every dropout mask with grove's generator
# (onlstm_ref.py --grove-rng, a port of grove's Philox streams), so the
# two runs compute the same steps with every dropout on.
# Model flags use grove's names (--emsize --nhid --nlayers --chunk-size
# --batch-size --bptt --lr --clip --dropout --dropouth --dropouti --dropoute
# --wdrop --max-batches); the script maps them to the reference's.
set -euo pipefail
if (($# < 5)); then
    sed -n '9,13p' "$0" >&2
    exit 2
fi
grove=$1 data=$2 out=$3 epochs=$4 threads=$5
shift 5
here=$(cd "$(dirname "$0")" && pwd)
[[ -x $grove ]] || { echo "compare.sh: GROVE '$grove' is not an executable" >&2; exit 2; }
for f in ptb.train.txt ptb.valid.txt ptb.test.txt; do
    [[ -f $data/$f ]] || { echo "compare.sh: PTB_DIR '$data' has no $f" >&2; exit 2; }
done
[[ $epochs =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: EPOCHS '$epochs' is not a positive integer" >&2; exit 2; }
[[ $threads =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: THREADS '$threads' is not a positive integer" >&2; exit 2; }
# same_init: 0 independent starts, 1 --same-init, 2 --same-rng
seeds=141 same_init=0
args=()
while (($#)); do
    case $1 in
    --seeds) seeds=${2:?--seeds needs a list like 141,1,2}; shift 2 ;;
    --seed) seeds=${2:?--seed needs a value}; shift 2 ;;
    --same-init) same_init=1; shift ;;
    --same-rng) same_init=2; shift ;;
    *) args+=("$1"); shift ;;
    esac
done
if ((${#args[@]} % 2)); then
    echo "compare.sh: model flags come in pairs (--flag value): ${args[*]}" >&2
    exit 2
fi
py_args=()
for ((i = 0; i < ${#args[@]}; i += 2)); do
    flag=${args[i]} val=${args[i + 1]}
    case $flag in
    --chunk-size) py_args+=(--chunk "$val") ;;
    --batch-size) py_args+=(--batch "$val") ;;
    *) py_args+=("$flag" "$val") ;;
    esac
done
mkdir -p "$out"
t0=$SECONDS
IFS=, read -r -a seed_list <<<"$seeds"
for s in "${seed_list[@]}"; do
    [[ $s =~ ^[0-9]+$ ]] || { echo "compare.sh: bad seed '$s'" >&2; exit 2; }
    d=$out/seed$s
    mkdir -p "$d"
    gpid= ppid=
    g_extra=() p_extra=()
    if ((same_init)); then
        if [[ ! -f $d/init/last.ckpt ]]; then
            "$grove" nlp lm train --data "$data" --out "$d/init" --force \
                --epochs 0 --threads "$threads" --quiet --seed "$s" \
                "${args[@]}" >"$d/init.txt" 2>&1 ||
                { cat "$d/init.txt" >&2; exit 1; }
        fi
        if ((same_init == 1)); then
            g_extra=(--fixed-windows) p_extra=(--fixed-windows --init-grove "$d/init/last.ckpt")
        else
            p_extra=(--grove-rng --init-grove "$d/init/last.ckpt")
        fi
    fi
    if ! grep -q '^test_ppl ' "$d/grove/summary.txt" 2>/dev/null; then
        "$grove" nlp lm train --data "$data" --out "$d/grove" --force \
            --epochs "$epochs" --threads "$threads" --test-batch-size 1 \
            --quiet --seed "$s" "${args[@]}" ${g_extra[@]+"${g_extra[@]}"} \
            >"$d/grove.txt" 2>&1 &
        gpid=$!
    fi
    if ! grep -q '^test_loss ' "$d/pytorch.csv" 2>/dev/null; then
        OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads \
            /usr/bin/python3 "$here/onlstm_ref.py" train --data "$data" \
            --epochs "$epochs" --threads "$threads" --test-batch 1 --seed "$s" \
            "${py_args[@]}" ${p_extra[@]+"${p_extra[@]}"} >"$d/pytorch.csv" \
            2>"$d/pytorch.err" &
        ppid=$!
    fi
    if [[ -n $gpid ]] && ! wait "$gpid"; then cat "$d/grove.txt" >&2; exit 1; fi
    if [[ -n $ppid ]] && ! wait "$ppid"; then cat "$d/pytorch.err" >&2; exit 1; fi
done

# Per seed: grove's metrics.csv (val_ppl_compat = column 10) and
# summary.txt (test_ppl_compat: the reference's row divisor, as in the
# validation column and in PyTorch's test_ppl); PyTorch's rows
# epoch,val_loss,val_ppl,seconds,phase and "test_loss L test_ppl P".
collect() {
    for s in "${seed_list[@]}"; do
        d=$out/seed$s
        tail -n +2 "$d/grove/metrics.csv" | awk -F, -v s="$s" '{ print "g", s, $1, $10 }'
        sed -n 's/^test_ppl_compat \(.*\)/g '"$s"' test \1/p' "$d/grove/summary.txt"
        grep -E '^[0-9]+,' "$d/pytorch.csv" | awk -F, -v s="$s" '{ print "p", s, $1, $3 }'
        sed -n 's/.*test_ppl \([0-9.]*\).*/p '"$s"' test \1/p' "$d/pytorch.csv"
    done
}
echo "# grove vs PyTorch reference: $epochs epochs, seeds $seeds, $((SECONDS - t0)) s; flags: ${args[*]}$( ((same_init == 1)) && echo ' (same initial weights, fixed windows)')$( ((same_init == 2)) && echo " (same initial weights, grove's window lengths and dropout masks on both sides)")"
echo
echo "Validation perplexity per epoch (the reference's row divisor on both sides) and"
echo "test perplexity of the best model (batch 1); mean ± sample sd over the seeds;"
echo "the interval: ratio of geometric means ± 2 standard errors (seed-to-seed noise)."
if ((same_init)); then
    echo "Paired (both sides of a seed start from the same weights): the mean of the"
    echo "per-seed ratios and its interval, geometric mean ± 2 standard errors of the"
    echo "per-seed log ratios, which the noise shared by a seed's two runs leaves out."
fi
echo
collect | awk -v paired="$same_init" '
    { key = $3; v = $4 + 0; side = $1
      n[side, key]++; sum[side, key] += v; sq[side, key] += v * v
      ls[side, key] += log(v); lq[side, key] += log(v) * log(v)
      val[side, $2, key] = v; if (!($2 in sseen)) { sseen[$2] = 1; sorder[++ns] = $2 }
      if (!(key in seen)) { seen[key] = 1; order[++nk] = key } }
    function var(s, q, k,   m) {
        if (k < 2) return 0
        m = s / k; m = (q - k * m * m) / (k - 1)
        return m > 0 ? m : 0 }
    END {
        if (paired)
            printf "| epoch | grove | PyTorch | grove / PyTorch (means) | 95 %% interval | paired ratio | paired 95 %% interval |\n|---|---|---|---|---|---|---|\n"
        else
            printf "| epoch | grove | PyTorch | grove / PyTorch (means) | 95 %% interval |\n|---|---|---|---|---|\n"
        for (i = 1; i <= nk; i++) {
            k = order[i]; a = n["g", k]; b = n["p", k]
            if (!a || !b) continue
            g = sum["g", k] / a; p = sum["p", k] / b
            # the ratio of geometric means, +- 2 standard errors of the
            # difference of mean log perplexities (seeds as samples)
            d = ls["g", k] / a - ls["p", k] / b
            se = sqrt(var(ls["g", k], lq["g", k], a) / a + var(ls["p", k], lq["p", k], b) / b)
            ci = (a > 1 && b > 1) ? sprintf("%.3f - %.3f", exp(d - 2 * se), exp(d + 2 * se)) : "-"
            printf "| %s | %.2f ± %.2f (%d) | %.2f ± %.2f (%d) | %.4f | %s |", k, g, sqrt(var(sum["g", k], sq["g", k], a)), a, p, sqrt(var(sum["p", k], sq["p", k], b)), b, g / p, ci
            if (paired) {
                # seeds with both runs: log(grove / PyTorch) per seed
                m = 0; s1 = 0; s2 = 0
                for (j = 1; j <= ns; j++) {
                    sd_ = sorder[j]
                    if (!(("g", sd_, k) in val) || !(("p", sd_, k) in val)) continue
                    r = log(val["g", sd_, k] / val["p", sd_, k])
                    m++; s1 += r; s2 += r * r
                }
                if (m > 1) {
                    mr = s1 / m; se = sqrt(var(s1, s2, m) / m)
                    printf " %.4f (%d) | %.3f - %.3f |", exp(mr), m, exp(mr - 2 * se), exp(mr + 2 * se)
                } else if (m == 1) {
                    printf " %.4f (1) | - |", exp(s1)
                } else {
                    printf " - | - |"
                }
            }
            printf "\n"
        }
    }'
echo
echo "Per seed (grove / PyTorch):"
echo
collect | awk '
    { v[$1, $2, $3] = $4; if (!($2 in ss)) { ss[$2] = 1; so[++ns] = $2 }
      if (!($3 in ks)) { ks[$3] = 1; ko[++nk] = $3 } }
    END {
        printf "| seed |"; for (i = 1; i <= nk; i++) printf " %s |", ko[i]; printf "\n|---|"
        for (i = 1; i <= nk; i++) printf "---|"; printf "\n"
        for (j = 1; j <= ns; j++) {
            printf "| %s |", so[j]
            for (i = 1; i <= nk; i++) printf " %.1f / %.1f |", v["g", so[j], ko[i]], v["p", so[j], ko[i]]
            printf "\n"
        }
    }'
