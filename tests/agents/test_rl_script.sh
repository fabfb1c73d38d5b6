#!/usr/bin/env bash
# bench/ocn/rl.sh end to end, tiny (issue 20 §4): S1 at the quick size with
# one seed, two methods and few frames; results.md has a row per method,
# the picture and its numbers exist, the contact sheet is written, and a
# second call runs nothing again; bad arguments exit 2.
#   test_rl_script.sh PATH/TO/grove PATH/TO/rl.sh
set -u
grove=$1 rl=$2
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
args=(--size quick --setting s1 --seeds 1 --methods ocn,flat --frames 3000 --jobs 2 --device cpu)
bash "$rl" "$grove" "$tmp/rl" "${args[@]}" >"$tmp/out" 2>"$tmp/err" || { fail "rl.sh failed"; cat "$tmp/err"; }
for m in ocn flat; do
    grep -qE "^\| DCA \| sparse \| $m \| 1 \| [0-9]+ \| [0-9.]+ ± 0.000 \|" "$tmp/rl/results.md" ||
        fail "no results row for $m: $(cat "$tmp/rl/results.md")"
done
grep -qE '^\| bc_ocn \| AC,CD \| [0-9.]+ \| [0-9.]+ \|$' "$tmp/rl/results.md" || fail "no BC row"
[ -s "$tmp/rl/s1/DCA_sparse.png" ] || fail "no picture"
[ "$(head -1 "$tmp/rl/s1/DCA_sparse.csv")" = "group,runs,global_step,mean,std,min,max,lo,hi" ] &&
    grep -q "^ocn,1," "$tmp/rl/s1/DCA_sparse.csv" && grep -q "^flat,1," "$tmp/rl/s1/DCA_sparse.csv" ||
    fail "plotted numbers: $(cat "$tmp/rl/s1/DCA_sparse.csv")"
[ -s "$tmp/rl/s1/sheet_DCA/ep0000_sheet.png" ] || fail "no contact sheet"
grep -q "^world n_each 4$" "$tmp/rl/s1/bc_ocn/config" || fail "BC is not in the S1 world"
# a second call: every run is done, nothing is trained again
before=$(stat -c %Y "$tmp/rl/s1/DCA_sparse/ocn_seed1/last.ckpt" "$tmp/rl/s1/bc_ocn/best.ckpt")
sleep 1
bash "$rl" "$grove" "$tmp/rl" "${args[@]}" >"$tmp/out2" 2>"$tmp/err" || { fail "second call failed"; cat "$tmp/err"; }
[ "$before" = "$(stat -c %Y "$tmp/rl/s1/DCA_sparse/ocn_seed1/last.ckpt" "$tmp/rl/s1/bc_ocn/best.ckpt")" ] ||
    fail "the second call trained again"
cmp -s "$tmp/out" "$tmp/out2" || fail "the second call's table differs"
# --report-only with a seed that has no run: nothing trained, the table
# keeps the one run per method that exists
rm "$tmp/rl/results.md"
bash "$rl" "$grove" "$tmp/rl" "${args[@]/#1/1,2}" --report-only >"$tmp/out3" 2>"$tmp/err" ||
    { fail "--report-only failed"; cat "$tmp/err"; }
[ ! -e "$tmp/rl/s1/DCA_sparse/ocn_seed2" ] || fail "--report-only trained seed 2"
grep -qE "^\| DCA \| sparse \| ocn \| 1 \|" "$tmp/rl/results.md" || fail "--report-only table: $(cat "$tmp/rl/results.md")"
# --bc-updates replaces the size's BC updates (train bc refuses a flag twice)
bash "$rl" "$grove" "$tmp/bcu" --size smoke --setting s1 --methods ocn --bc-updates 3 \
    --device cpu >/dev/null 2>"$tmp/err" || { fail "--bc-updates failed"; cat "$tmp/err"; }
[ "$(tail -1 "$tmp/bcu/s1/bc_ocn/metrics.csv" | cut -d, -f1)" = 3 ] || fail "--bc-updates 3 did not stop BC at 3"
grep -q "runs stopped at 3 updates" "$tmp/bcu/results.md" || fail "results.md does not say --bc-updates"
# bad arguments
for bad in "--size huge" "--setting s3" "--methods ocn,lstm" "--jobs 0" "--rewards none" "--bc-updates 0"; do
    # shellcheck disable=SC2086
    bash "$rl" "$grove" "$tmp/x" $bad >/dev/null 2>&1
    [ $? -eq 2 ] || fail "rl.sh $bad did not exit 2"
done
[ $fails -eq 0 ] && echo "agents_rl_script: all passed"
[ $fails -eq 0 ]
