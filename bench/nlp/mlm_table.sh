#!/usr/bin/env bash
# Issue 24's results table at a scaled size: the three MLMs (UDGN,
# StructFormer, the Transformer) and UDGN's Table 4.4 ablations trained on
# the same treebank, each run's test perplexity (`mlm eval`) and UAS/UUAS
# on the test files' gold trees (`depparse`: argmax and Chu-Liu for the
# UDGN rows, StructFormer's own decoder; the Transformer has no parser),
# beside the left/right-chain and random baselines; writes OUT_DIR/mlm.md.
#
#   bench/nlp/mlm_table.sh GROVE TREEBANK_ZIP OUT_DIR [--rows LIST]
#       [--epochs N] [--nemb N] [--jobs J] [--seed S] [--smoke]
#
# Rows: udgn structformer transformer transformer_sinusoidal
# abl_no_nonlinear abl_no_gates abl_sigmoid abl_single_channel abl_abs_pos
# (the Transformer with learned positions, the default, and with
# --positions sinusoidal; the ablations are udgn with --no-nonlinear,
# --no-gates, --no-competition-sigmoid, --single-channel, --abs-pos). Defaults: 60 epochs, nemb 128, 2 layers, 4 heads/channels
# (UDGN: d_c 32, a 1-layer parser), batches of < 2,048 tokens, seed 1, one
# thread a run: about 8-11 minutes a UDGN row and 20-27 a StructFormer on
# one core of the 2-core machine with NLTK's 10 % WSJ sample. The test
# trees are the treebank's files whose number ends in 9 (the MLM corpus's
# test split). Runs resume: call again until all are done. --smoke: 1
# epoch of 2 batches at nemb 16 (checks the script, not the models).
set -euo pipefail
usage() { sed -n '9,10p' "$0" >&2; exit 2; }
(($# >= 3)) || usage
grove=$1 bank=$2 out=$3
shift 3
rows=udgn,structformer,transformer,transformer_sinusoidal,abl_no_nonlinear,abl_no_gates,abl_sigmoid,abl_single_channel,abl_abs_pos
epochs=60 nemb=128 jobs=1 seed=1 smoke=0
while (($#)); do
    case $1 in
    --smoke) smoke=1; shift; continue ;;
    esac
    (($# >= 2)) || usage
    case $1 in
    --rows) rows=$2 ;;
    --epochs) epochs=$2 ;;
    --nemb) nemb=$2 ;;
    --jobs) jobs=$2 ;;
    --seed) seed=$2 ;;
    *) echo "mlm_table.sh: unknown option '$1'" >&2; usage ;;
    esac
    shift 2
done
[[ -x $grove ]] || { echo "mlm_table.sh: GROVE '$grove' is not an executable" >&2; exit 2; }
[[ -f $bank ]] || { echo "mlm_table.sh: TREEBANK_ZIP '$bank' is not a file" >&2; exit 2; }
for v in "$epochs" "$nemb" "$jobs" "$seed"; do
    [[ $v =~ ^[0-9]+$ && $v != 0 ]] || { echo "mlm_table.sh: '$v' is not a positive integer" >&2; exit 2; }
done
udgn=(--model udgn --head-size 32 --parser-layers 1)
flags() {
    case $1 in
    udgn) echo "${udgn[@]}" ;;
    structformer) echo --model structformer ;;
    transformer) echo --model transformer ;;
    transformer_sinusoidal) echo --model transformer --positions sinusoidal ;;
    abl_no_nonlinear) echo "${udgn[@]}" --no-nonlinear ;;
    abl_no_gates) echo "${udgn[@]}" --no-gates ;;
    abl_sigmoid) echo "${udgn[@]}" --no-competition-sigmoid ;;
    abl_single_channel) echo "${udgn[@]}" --single-channel ;;
    abl_abs_pos) echo "${udgn[@]}" --abs-pos ;;
    *) return 1 ;;
    esac
}
IFS=, read -r -a list <<<"$rows"
for r in "${list[@]}"; do
    flags "$r" >/dev/null || { echo "mlm_table.sh: --rows: '$r' is not a row" >&2; exit 2; }
done
size=(--nemb "$nemb" --nlayers 2 --nheads 4 --batch-tokens 2048)
((smoke)) && epochs=1 size=(--nemb 16 --nlayers 1 --nheads 2 --batch-tokens 512 --max-batches 2 --eval-runs 1)
mkdir -p "$out"

# the test split's gold trees: the files numbered NNN9
trees=$out/test_trees
if [[ ! -d $trees/treebank/combined ]]; then
    mkdir -p "$trees"
    unzip -q -o "$bank" 'treebank/combined/wsj_*9.mrg' -d "$trees" ||
        { echo "mlm_table.sh: no treebank/combined/wsj_NNN9.mrg in $bank (NLTK's treebank.zip?)" >&2; exit 2; }
fi
trees=$trees/treebank/combined

run_one() {
    local name=$1 d=$out/$1
    if ! grep -q "^$epochs," "$d/metrics.csv" 2>/dev/null; then
        local start=--force
        [[ -f $d/last.ckpt ]] && start=--resume
        # shellcheck disable=SC2046
        "$grove" nlp mlm train --data "$bank" $(flags "$name") "${size[@]}" --epochs "$epochs" \
            --seed "$seed" --threads 1 --quiet --out "$d" "$start" >"$d.log" 2>&1 ||
            { echo "mlm_table.sh: $name failed; see $d.log" >&2; return 1; }
    fi
    "$grove" nlp mlm eval --checkpoint "$d/best.ckpt" --threads 1 --quiet >"$d.eval" 2>&1 ||
        { echo "mlm_table.sh: mlm eval of $name failed" >&2; return 1; }
    local decs=(argmax chuliu)
    [[ $name == structformer ]] && decs=(structformer)
    [[ $name == transformer* ]] && decs=()
    for dec in "${decs[@]}"; do
        "$grove" nlp depparse --checkpoint "$d/best.ckpt" --trees "$trees" --decoder "$dec" \
            --threads 1 --quiet >"$d.dep_$dec" 2>&1 ||
            { echo "mlm_table.sh: depparse $dec of $name failed" >&2; return 1; }
    done
}

failed=0
for r in "${list[@]}"; do
    run_one "$r" &
    while (($(jobs -rp | wc -l) >= jobs)); do wait -n || failed=1; done
done
while (($(jobs -rp | wc -l) > 0)); do wait -n || failed=1; done
for b in left right random; do
    for dec in argmax chuliu; do
        "$grove" nlp depparse --baseline "$b" --trees "$trees" --decoder "$dec" --seed "$seed" \
            --threads 1 --quiet >"$out/base_${b}.dep_$dec" 2>&1 || failed=1
    done
done

# "UAS u  UUAS v  root r" of a depparse output, or "- -"
uas() { sed -n 's/^UAS \([0-9.]*\)  UUAS \([0-9.]*\).*/\1 \2/p' "$1" 2>/dev/null | head -1 | grep . || echo "- -"; }
{
    echo "| row | flags | test ppl | best valid ppl (epoch) | argmax UAS / UUAS | Chu-Liu UAS / UUAS | own decoder UAS / UUAS | train s |"
    echo "|---|---|---|---|---|---|---|---|"
    for r in "${list[@]}"; do
        d=$out/$r
        ppl=$(sed -n 's/.*perplexity \([0-9.]*\).*/\1/p' "$d.eval" 2>/dev/null)
        best=$(awk -F, 'NR > 1 && (b == "" || $3 < b) { b = $3; e = $1 } END { if (b != "") printf "%.1f (%d)", b, e }' "$d/metrics.csv" 2>/dev/null)
        wall=$(tail -n 1 "$d/metrics.csv" 2>/dev/null | awk -F, '{ printf "%.0f", $NF }')
        read -r a1 a2 <<<"$(uas "$d.dep_argmax")"
        read -r c1 c2 <<<"$(uas "$d.dep_chuliu")"
        read -r s1 s2 <<<"$(uas "$d.dep_structformer")"
        echo "| $r | \`$(flags "$r")\` | ${ppl:--} | ${best:--} | $a1 / $a2 | $c1 / $c2 | $s1 / $s2 | ${wall:--} |"
    done
    for b in left right random; do
        read -r a1 a2 <<<"$(uas "$out/base_${b}.dep_argmax")"
        read -r c1 c2 <<<"$(uas "$out/base_${b}.dep_chuliu")"
        label="$b chain"
        [[ $b == random ]] && label="random heads"
        echo "| $label | \`depparse --baseline $b\` | - | - | $a1 / $a2 | $c1 / $c2 | - | - |"
    done
} >"$out/mlm.md"
cat "$out/mlm.md"
exit "$failed"
