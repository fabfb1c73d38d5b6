#!/usr/bin/env bash
# The leave-one-out ablation of grove's S1 recipe (ocn.md §6.1) and the
# thesis's comparisons in that recipe; writes OUT_DIR/recipe.md.
#
#   bench/ocn/recipe.sh GROVE OUT_DIR [--part ablation|comparisons|all]
#       [--rows LIST] [--seeds LIST] [--updates N] [--jobs J] [--threads T]
#       [--device D] [--smoke] [--report-only]
#
# Ablation (default 10 seeds, screened at --updates 1000: in the twenty
# measured runs of docs/ocn, NMI >= 0.99 at update 1,000 picks out exactly
# the runs that end at NMI >= 0.99): the full recipe (train bc's default)
# and the recipe with one departure dropped at a time:
#   s1          the full recipe: --n-each 4, 24000 demos per task, a blind
#               controller, options without inventory, balance term 0.1
#   no_demos    ... with 6000 demonstrations per task (the thesis's)
#   no_blind    ... with a controller that reads the observation
#   no_noinv    ... with options that read the inventory
#   no_balance  ... without the option-balance term
#   no_n_each   ... in the one-copy world (departure 1 is adopted already;
#               this row says what it costs)
# A seed passes when NMI >= 0.99 (validation, last metrics row) and the
# success matrix of best.ckpt has a diagonal mean >= 0.95 after the best
# assignment (grove eval options; its minimum is reported too). A row keeps
# the rule when >= 9 of 10 seeds pass; a departure is needed when the row
# without it does not. The default recipe is then the smallest set of
# departures that keeps the rule (change train bc's s1 recipe to it).
#
# Comparisons (default 5 seeds, same length), in the default recipe:
#   tau1 (tau_C = 1), moe (--model moe), k2, k4, k5 (K options); K = 3 is
#   the s1 row.
#
# --rows s1,no_noinv,...: only those rows of the part (the seeds a row
# still needs when a verdict hangs on it). --report-only: no runs, the
# table of what OUT_DIR holds.
#
# --smoke: a tiny size (2 seeds, 4 updates, d = w = 8, 40/10 demos per
# task) that runs every row in seconds: it checks the script, not the
# recipe. Runs go to OUT_DIR/<row>_seed<S>/ and resume (a finished run is
# not run again), so the script can be called again until all are done.
# Time at full size (1,000 updates, d = w = 128, batch 512): about 3
# minutes a run on one core of the 2-core machine of docs/ocn (plus the
# demonstrations, 2 s), so 60 ablation runs are about 3 hours on one core,
# 25 comparison runs 1.3 hours; --jobs runs J at a time (one thread each
# unless --threads).
set -euo pipefail
usage() { sed -n '5,7p' "$0" >&2; exit 2; }
(($# >= 2)) || usage
grove=$1 out=$2
shift 2
part=all seeds= updates=1000 jobs=1 threads=1 device=auto smoke=0 only= report_only=0
while (($#)); do
    case $1 in
    --smoke) smoke=1; shift; continue ;;
    --report-only) report_only=1; shift; continue ;;
    esac
    (($# >= 2)) || usage
    case $1 in
    --part) part=$2 ;;
    --rows) only=$2 ;;
    --seeds) seeds=$2 ;;
    --updates) updates=$2 ;;
    --jobs) jobs=$2 ;;
    --threads) threads=$2 ;;
    --device) device=$2 ;;
    *) echo "recipe.sh: unknown option '$1'" >&2; usage ;;
    esac
    shift 2
done
[[ -x $grove ]] || { echo "recipe.sh: GROVE '$grove' is not an executable" >&2; exit 2; }
case $part in ablation | comparisons | all) ;; *) echo "recipe.sh: --part '$part' is not ablation, comparisons or all" >&2; exit 2 ;; esac
for v in "$updates" "$jobs" "$threads"; do
    [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "recipe.sh: '$v' is not a positive integer" >&2; exit 2; }
done
big=24000 small=6000 size=() evalsize=()
if ((smoke)); then
    updates=4 big=40 small=10
    size=(--hidden 8 --width 8 --batch 8 --eval-every 2)
    evalsize=(--episodes 2 --demos-per-task 2)
fi
abl_seeds=${seeds:-$( ((smoke)) && echo 1,2 || echo 1,2,3,4,5,6,7,8,9,10)}
cmp_seeds=${seeds:-$( ((smoke)) && echo 1,2 || echo 1,2,3,4,5)}
rows=()
[[ $part != comparisons ]] && rows+=(s1 no_demos no_blind no_noinv no_balance no_n_each)
[[ $part != ablation ]] && rows+=(tau1 moe k2 k4 k5)
if [[ -n $only ]]; then
    IFS=, read -r -a want <<<"$only"
    kept=()
    for w in "${want[@]}"; do
        found=0
        for r in "${rows[@]}"; do [[ $r == "$w" ]] && found=1; done
        ((found)) || { echo "recipe.sh: --rows: '$w' is not a row of --part $part (${rows[*]})" >&2; exit 2; }
        kept+=("$w")
    done
    rows=("${kept[@]}")
fi
mkdir -p "$out"

# flags of a row: from --recipe thesis, its departures added one by one
flags() {
    local n_each=(--n-each 4) demos=(--demos-per-task "$big") blind=(--blind-controller)
    local noinv=(--options-without-inventory) bal=(--balance-options 0.1) extra=()
    case $1 in
    no_demos) demos=(--demos-per-task "$small") ;;
    no_blind) blind=() ;;
    no_noinv) noinv=() ;;
    no_balance) bal=() ;;
    no_n_each) n_each=(--n-each 1) ;;
    tau1) extra=(--tau 1) ;;
    moe) extra=(--model moe) ;;
    k2) extra=(--options 2) ;;
    k4) extra=(--options 4) ;;
    k5) extra=(--options 5) ;;
    esac
    echo --recipe thesis "${n_each[@]}" "${demos[@]}" "${blind[@]}" "${noinv[@]}" "${bal[@]}" "${extra[@]}"
}

run_one() {
    local row=$1 s=$2 d=$out/$1_seed$2
    if ! grep -q "^$updates," "$d/metrics.csv" 2>/dev/null; then
        local start=--force
        [[ -f $d/last.ckpt ]] && start=--resume
        # shellcheck disable=SC2046
        "$grove" train bc --tasks AC,CD $(flags "$row") "${size[@]}" --seed "$s" \
            --updates "$updates" --return-every 0 --device "$device" --threads "$threads" \
            --quiet --out "$d" "$start" >"$d.log" 2>&1 ||
            { echo "recipe.sh: $row seed $s failed; see $d.log" >&2; return 1; }
    fi
    if [[ ! -s $d/matrix.txt || $d/matrix.txt -ot $d/best.ckpt ]]; then
        "$grove" eval options --checkpoint "$d/best.ckpt" "${evalsize[@]}" --device "$device" \
            --threads "$threads" >"$d/matrix.txt" 2>&1 ||
            { echo "recipe.sh: eval options on $d failed" >&2; return 1; }
    fi
}

pids=() failed=0
((report_only)) || for row in "${rows[@]}"; do
    case $row in s1 | no_*) list=$abl_seeds ;; *) list=$cmp_seeds ;; esac
    IFS=, read -r -a ss <<<"$list"
    for s in "${ss[@]}"; do
        [[ $s =~ ^[0-9]+$ ]] || { echo "recipe.sh: bad seed '$s'" >&2; exit 2; }
        run_one "$row" "$s" &
        pids+=($!)
        while (($(jobs -rp | wc -l) >= jobs)); do wait -n || failed=1; done
    done
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done

# The table: per row, seeds passing each part of the rule, and the means.
{
    echo "| row | flags | seeds | NMI >= 0.99 | diag mean >= 0.95 | both (rule: >= 90 %) | mean NMI | mean diag mean | mean diag min |"
    echo "|---|---|---|---|---|---|---|---|---|"
    for row in "${rows[@]}"; do
        case $row in s1 | no_*) list=$abl_seeds ;; *) list=$cmp_seeds ;; esac
        IFS=, read -r -a ss <<<"$list"
        vals="" # a seed without a run (yet) is left out of the counts
        for s in "${ss[@]}"; do
            d=$out/${row}_seed$s
            nmi=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "nmi") c = i } NR > 1 && $c != "" { v = $c } END { print v }' "$d/metrics.csv" 2>/dev/null || true)
            diag=$(sed -n 's/.*diagonal mean \([0-9.]*\), min \([0-9.]*\).*/\1 \2/p' "$d/matrix.txt" 2>/dev/null || true)
            # K < 3 options have no one-to-one assignment (no diagonal)
            [[ -n $nmi ]] && vals+="$nmi ${diag:-x x}"$'\n'
        done
        printf '%s' "$vals" | awk -v row="$row" -v flags="$(flags "$row")" '
            NF == 3 { n++; a += ($1 >= 0.99); sn += $1
                      if ($2 != "x") { m++; b += ($2 >= 0.95); c += ($1 >= 0.99 && $2 >= 0.95); sd += $2; sm += $3 } }
            END { if (n == 0) { printf "| %s | `%s` | 0 | - | - | - | - | - | - |\n", row, flags; exit }
                  if (m == 0) { printf "| %s | `%s` | %d | %d | - | - | %.3f | - | - |\n", row, flags, n, a, sn / n; exit }
                  printf "| %s | `%s` | %d | %d | %d | %d (%s) | %.3f | %.3f | %.3f |\n", row, flags, n, a, b, c,
                         (c >= 0.9 * n ? "keeps" : "fails"), sn / n, sd / m, sm / m }'
    done
} >"$out/recipe.md"
cat "$out/recipe.md"
exit "$failed"
