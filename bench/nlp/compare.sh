#!/usr/bin/env bash
# The scaled comparison run of issue 9 ("Results"): grove's ON-LSTM LM and
# the PyTorch reference (onlstm_ref.py train) trained with the same
# configuration, seed policy (a fixed seed each; the random streams differ
# between the two frameworks) and epochs, then their validation perplexity
# side by side per epoch (both with the reference's row divisor, the value
# main.py prints) and the test perplexity of each best model.
#
#   bench/nlp/compare.sh GROVE PTB_DIR OUT_DIR EPOCHS THREADS [model flags]
#   e.g. bench/nlp/compare.sh build/grove ../shared/data/ptb /tmp/cmp 6 1 \
#            --emsize 128 --nhid 256 --chunk-size 8 --batch-size 80
# Model flags use grove's names (--emsize --nhid --nlayers --chunk-size
# --batch-size --bptt --lr --clip --dropout --dropouth --dropouti --dropoute
# --wdrop --seed --max-batches); the script maps them to the reference's.
# The two runs go side by side (THREADS each).
set -euo pipefail
grove=$1 data=$2 out=$3 epochs=$4 threads=$5
shift 5
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
py_args=()
args=("$@")
for ((i = 0; i < ${#args[@]}; i += 2)); do
    flag=${args[i]} val=${args[i + 1]}
    case $flag in
    --chunk-size) py_args+=(--chunk "$val") ;;
    --batch-size) py_args+=(--batch "$val") ;;
    *) py_args+=("$flag" "$val") ;;
    esac
done
t0=$SECONDS
"$grove" nlp lm train --data "$data" --out "$out/grove" --force --epochs "$epochs" \
    --threads "$threads" --test-batch-size 1 --quiet "$@" >"$out/grove.txt" 2>&1 &
gpid=$!
OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads \
    /usr/bin/python3 "$here/onlstm_ref.py" train --data "$data" --epochs "$epochs" \
    --threads "$threads" --test-batch 1 "${py_args[@]}" >"$out/pytorch.csv" 2>"$out/pytorch.err" &
ppid=$!
wait $gpid || { cat "$out/grove.txt"; exit 1; }
wait $ppid || { cat "$out/pytorch.err"; exit 1; }
echo "# grove vs PyTorch reference, $epochs epochs, $((SECONDS - t0)) s; flags: $*"
echo
echo "| epoch | grove valid ppl | PyTorch valid ppl | grove / PyTorch | grove s | PyTorch s |"
echo "|---|---|---|---|---|---|"
# grove: metrics.csv (val_ppl_compat = column 10, wall_s cumulative = 3);
# PyTorch: epoch,val_loss,val_ppl,seconds,phase
paste -d, <(tail -n +2 "$out/grove/metrics.csv") <(grep -E '^[0-9]+,' "$out/pytorch.csv") |
    awk -F, 'BEGIN { prev = 0 }
        { g = $10; p = $17; printf "| %d | %.2f | %.2f | %.4f | %.0f | %.0f |\n", $1, g, p, g / p, $3 - prev, $18; prev = $3 }'
echo
gt=$(sed -n 's/^test_ppl \(.*\)/\1/p' "$out/grove/summary.txt")
gtc=$(sed -n 's/^test_ppl_compat \(.*\)/\1/p' "$out/grove/summary.txt")
pt=$(sed -n 's/.*test_ppl \([0-9.]*\).*/\1/p' "$out/pytorch.csv")
echo "test ppl (best model, batch 1): grove $gt (reference-compatible $gtc), PyTorch $pt"
