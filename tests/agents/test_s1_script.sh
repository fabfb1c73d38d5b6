#!/usr/bin/env bash
# bench/ocn/s1.sh end to end, tiny: four configurations x one seed of 2
# updates on 100 demonstrations per task, two at a time; the table has a
# row per run (with best.ckpt's alignment: MoE's e_t is 1) and the means; a second call with more updates resumes every
# run (its rows 0 and 2 are kept); bad arguments exit 2.
#   test_s1_script.sh PATH/TO/grove PATH/TO/s1.sh
set -u
grove=$1 s1=$2
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

args=(--seeds 1 --configs ocn10,moe,blind10,blindnoinv10 --jobs 2 --device cpu --demos-per-task 100 --n-each 4)
if ! bash "$s1" "$grove" "$tmp/s1" --updates 2 "${args[@]}" >"$tmp/out" 2>"$tmp/err"; then
    fail "s1.sh --updates 2 failed"; cat "$tmp/err"
fi
rows=$(grep -cE '^\| (ocn10|moe|blind10|blindnoinv10)_seed1 \| 2 \|' "$tmp/out")
[[ $rows == 4 ]] || { fail "expected 4 run rows at update 2, got $rows"; cat "$tmp/out"; }
grep -q '^controller blind$' "$tmp/s1/blind10_seed1/config" || fail "blind10 is not blind"
grep -q '^controller' "$tmp/s1/ocn10_seed1/config" && fail "ocn10 has a controller line"
grep -q '^options_ignore' "$tmp/s1/blind10_seed1/config" && fail "blind10 hides the inventory"
grep -q '^controller blind$' "$tmp/s1/blindnoinv10_seed1/config" &&
    grep -q '^options_ignore 1050:1071$' "$tmp/s1/blindnoinv10_seed1/config" ||
    fail "blindnoinv10 is not blind with options without inventory"
grep -qE '^\| ocn10 \| 1 \| [0-9.]+ \| [01] of 1 \|.* [01] of 1 \|$' "$tmp/out" ||
    { fail "no means row for ocn10"; cat "$tmp/out"; }
# the alignment columns of best.ckpt: numbers for the OCN; the MoE's end
# probability is 1 everywhere, so it never leaves a boundary unmarked
grep -qE '^\| ocn10_seed1 \| 2 \|.*\| [0-9.]+ / [0-9.]+ \| [0-9.]+ / [0-9.]+ \|$' "$tmp/out" ||
    { fail "no alignment columns for ocn10"; cat "$tmp/out"; }
grep -qE '^\| moe_seed1 \| 2 \|.*\| 1\.000 / 1\.000 \|$' "$tmp/out" ||
    { fail "MoE's e_t is not 1 / 1"; cat "$tmp/out"; }
grep -qE '^\| moe \| 1 \|.*\| 0 of 1 \|$' "$tmp/out" ||
    { fail "MoE counted with a boundary unmarked"; cat "$tmp/out"; }
for d in ocn10_seed1 moe_seed1; do
    [[ -s $tmp/s1/$d/matrix.csv && -s $tmp/s1/$d/returns.txt ]] ||
        fail "$d: no success matrix or returns"
    grep -q '^world n_each 4$' "$tmp/s1/$d/config" || fail "$d: --n-each 4 did not reach train bc"
done

if ! bash "$s1" "$grove" "$tmp/s1" --updates 4 "${args[@]}" >"$tmp/out" 2>"$tmp/err"; then
    fail "s1.sh --updates 4 (resume) failed"; cat "$tmp/err"
fi
rows=$(grep -cE '^\| (ocn10|moe|blind10|blindnoinv10)_seed1 \| 4 \|' "$tmp/out")
[[ $rows == 4 ]] || { fail "expected 4 run rows at update 4, got $rows"; cat "$tmp/out"; }
# resumed, not restarted: the first call's final row (update 2) is kept
# before the new final row (a fresh 4-update run has rows 0 and 4 only)
rows=$(cut -d, -f1 "$tmp/s1/ocn10_seed1/metrics.csv" | tr '\n' ' ')
[[ $rows == "update 0 2 4 " ]] || fail "metrics.csv after resuming has updates '$rows' (want 'update 0 2 4 ')"

for bad in "--updates x" "--configs ocn7" "--seeds 1,a" "--jobs 0" "--nope 1" "--n-each 0"; do
    # shellcheck disable=SC2086
    bash "$s1" "$grove" "$tmp/bad" $bad >/dev/null 2>"$tmp/err"
    rc=$?
    [[ $rc == 2 && $(wc -l <"$tmp/err") -ge 1 ]] || fail "s1.sh $bad: exit $rc (want 2 and a message)"
done
bash "$s1" /nonexistent/grove "$tmp/bad" >/dev/null 2>&1
[[ $? == 2 ]] || fail "s1.sh with a missing grove should exit 2"

if ((fails)); then
    echo "agents_s1_script: $fails failed"
    exit 1
fi
echo "agents_s1_script: all passed"
