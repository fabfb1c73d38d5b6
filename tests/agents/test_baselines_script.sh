#!/usr/bin/env bash
# bench/ocn/baselines.sh (issue 26, Fig 5.7 left), tiny: OCN, OMPN and
# compILE, two seeds, 10 updates at d = 4; the CSV of means has its header
# and one row per validation update with a number for every column, the
# picture exists, the table has a row per run; a second call trains
# nothing (the runs are done) and rewrites the same CSV; bad arguments
# exit 2 with one line.
#   test_baselines_script.sh PATH/TO/grove PATH/TO/baselines.sh
set -u
grove=$1
script=$2
fails=0
checks=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

args=(--updates 10 --seeds 1,2 --demos-per-task 10 --eval-every 5 --hidden 4 --device cpu)
checks=$((checks + 1))
bash "$script" "$grove" "$tmp/o" "${args[@]}" >"$tmp/table" 2>"$tmp/err" ||
    { fail "first call: exit $?"; cat "$tmp/err"; }
csv=$tmp/o/fig57_left.csv
checks=$((checks + 1))
[ "$(head -1 "$csv")" = "update,ocn_f1_tol1,ompn_f1_tol1,compile_f1_tol1,ocn_align_acc,ompn_align_acc,compile_align_acc" ] ||
    fail "csv header: $(head -1 "$csv")"
checks=$((checks + 1))
[ "$(cut -d, -f1 "$csv" | tail -n +2 | tr '\n' ' ')" = "0 5 10 " ] || fail "csv updates: $(cat "$csv")"
checks=$((checks + 1))
awk -F, 'NR > 1 { for (i = 2; i <= 7; i++) if ($i !~ /^0\.[0-9]+$|^1\.0+$/) bad = 1 } END { exit bad }' "$csv" ||
    fail "csv cells: $(cat "$csv")"
# the mean of the two seeds' last f1_tol1 for OMPN, from their own files
want=$(for s in 1 2; do awk -F, 'NR > 1 { v = $5 } END { print v }' "$tmp/o/ompn_seed$s/metrics.csv"; done |
    awk '{ t += $1 } END { printf "%.6f", t / 2 }')
checks=$((checks + 1))
[ "$(tail -1 "$csv" | cut -d, -f3)" = "$want" ] || fail "ompn mean $(tail -1 "$csv" | cut -d, -f3), want $want"
checks=$((checks + 1))
[ -s "$tmp/o/fig57_left.png" ] || fail "no picture"
for y in f1_tol1 align_acc; do
    checks=$((checks + 1))
    [ -s "$tmp/o/fig57_$y.png" ] || fail "no $y picture"
done
checks=$((checks + 1))
[ "$(grep -c '^| [a-z]*_seed[12] | 10 |' "$tmp/table")" -eq 6 ] || fail "table: $(cat "$tmp/table")"
checks=$((checks + 1))
grep -q '^| ompn_seed1 | 10 | .* | - |$' "$tmp/table" || fail "ompn's nmi is not '-': $(cat "$tmp/table")"
# again: nothing to train, the same CSV
cp "$csv" "$tmp/first.csv"
stamp=$(stat -c %Y "$tmp/o/ompn_seed1/last.ckpt")
checks=$((checks + 1))
bash "$script" "$grove" "$tmp/o" "${args[@]}" >/dev/null 2>"$tmp/err2" || fail "second call: exit $?"
checks=$((checks + 1))
! grep -q 'done' "$tmp/err2" && [ "$stamp" = "$(stat -c %Y "$tmp/o/ompn_seed1/last.ckpt")" ] ||
    fail "the second call trained again: $(cat "$tmp/err2")"
checks=$((checks + 1))
cmp -s "$csv" "$tmp/first.csv" || fail "the second CSV differs"
# bad arguments
for bad in "--models ocn,foo" "--updates 0" "--seeds a" "--frobnicate 1"; do
    checks=$((checks + 1))
    # shellcheck disable=SC2086
    bash "$script" "$grove" "$tmp/x" $bad >/dev/null 2>"$tmp/err3"
    rc=$?
    [ "$rc" -eq 2 ] || fail "'$bad': exit $rc"
done

echo "agents_baselines_script: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
