#!/usr/bin/env bash
# grove plot with several runs (issue 20 §4): small synthetic metrics.csv
# files -> one PNG with each group's mean and band, and the numbers behind
# it (--print) checked against values worked out by hand.
# Usage: test_plot_runs.sh GROVE
set -u
grove=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect() { # expect CODE TEXT ARGS...: exit code and a line of stderr
    local code=$1 text=$2; shift 2
    "$grove" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
    [ "$rc" -eq "$code" ] || fail "grove $* exited $rc, not $code: $(cat "$tmp/err")"
    grep -qF -- "$text" "$tmp/err" || fail "grove $*: no '$text' in: $(cat "$tmp/err")"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "grove $*: more than one line: $(cat "$tmp/err")"
}
mk() { mkdir -p "$(dirname "$1")"; printf '%b' "$2" >"$1"; }

# group ocn: two seeds on the same x (a gap row in seed 1); mean 1, 2, 3,
# std 1, min/max = the two runs
mk "$tmp/ocn_seed1/metrics.csv" "global_step,eval_return,sps\n0,0,5\n100,1,5\n150,,5\n200,2,5\n"
mk "$tmp/ocn_seed2/metrics.csv" "global_step,eval_return,sps\n0,2,5\n100,3,5\n200,4,5\n"
# group flat: one run, band of width 0
mk "$tmp/flat_seed1/metrics.csv" "global_step,eval_return,sps\n0,0,1\n50,1,1\n250,1,1\n"
"$grove" plot "$tmp"/ocn_seed1/metrics.csv "$tmp"/ocn_seed2/metrics.csv \
    "$tmp"/flat_seed1/metrics.csv --x global_step --y eval_return --print \
    --out "$tmp/a.png" >"$tmp/print" 2>"$tmp/err" || fail "plot runs: $(cat "$tmp/err")"
[ "$(head -c 8 "$tmp/a.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
    fail "a.png is not a PNG"
cat >"$tmp/want" <<'W'
group,runs,global_step,mean,std,min,max,lo,hi
ocn,2,0,1,1,0,2,0,2
ocn,2,100,2,1,1,3,1,3
ocn,2,200,3,1,2,4,2,4
flat,1,0,0,0,0,0,0,0
flat,1,50,1,0,1,1,1,1
flat,1,250,1,0,1,1,1,1
W
diff "$tmp/want" "$tmp/print" || fail "--print (minmax) differs from the hand-computed table"

# --band std: lo/hi = mean -+ std; the picture changes with the band
"$grove" plot "$tmp"/ocn_seed1/metrics.csv "$tmp"/ocn_seed2/metrics.csv \
    "$tmp"/flat_seed1/metrics.csv --x global_step --y eval_return --band std \
    --print --out "$tmp/b.png" >"$tmp/print" 2>/dev/null || fail "plot --band std"
grep -qx "ocn,2,100,2,1,1,3,1,3" "$tmp/print" || fail "std band at 100: $(cat "$tmp/print")"
# runs at different x: read by linear interpolation on the union grid,
# restricted to the range both cover
mk "$tmp/d/metrics.csv" "global_step,eval_return\n0,0\n100,10\n"
mk "$tmp/e/metrics.csv" "global_step,eval_return\n0,0\n50,5\n100,0\n300,9\n"
"$grove" plot "$tmp/d/metrics.csv" "$tmp/e/metrics.csv" --group x,x --band std \
    --x global_step --y eval_return --print --out "$tmp/c.png" >"$tmp/print" 2>/dev/null ||
    fail "plot with --group"
cat >"$tmp/want" <<'W'
group,runs,global_step,mean,std,min,max,lo,hi
x,2,0,0,0,0,0,0,0
x,2,50,5,0,5,5,5,5
x,2,100,5,5,0,10,0,10
W
diff "$tmp/want" "$tmp/print" || fail "interpolated group differs"
# the shaded band is drawn: the same mean with a wider band is another image
"$grove" plot "$tmp/d/metrics.csv" "$tmp/e/metrics.csv" --group x,x --band minmax \
    --x global_step --y eval_return --out "$tmp/c2.png" >/dev/null 2>&1 || fail "minmax"
cmp -s "$tmp/c.png" "$tmp/c2.png" && fail "std and min-max bands give the same image"
# default groups: folder names without _seedN, so these two are two groups
grep -q "2 groups, 3 runs" <("$grove" plot "$tmp"/ocn_seed1/metrics.csv \
    "$tmp"/ocn_seed2/metrics.csv "$tmp"/flat_seed1/metrics.csv --x global_step \
    --y eval_return --out "$tmp/d.png") || fail "default groups"

# a summary (--print's CSV) read back beside new runs: its groups come back
# exactly as printed, a new run's group is added after them, and --band std
# rebuilds lo/hi from its std
"$grove" plot "$tmp"/ocn_seed1/metrics.csv "$tmp"/ocn_seed2/metrics.csv \
    "$tmp"/flat_seed1/metrics.csv --x global_step --y eval_return --print \
    --out "$tmp/s.png" >"$tmp/summary.csv" 2>/dev/null || fail "summary print"
"$grove" plot "$tmp/summary.csv" "$tmp/d/metrics.csv" --group new --x global_step \
    --y eval_return --print --out "$tmp/s2.png" >"$tmp/print" 2>"$tmp/err" ||
    fail "summary and a run: $(cat "$tmp/err")"
{ cat "$tmp/summary.csv"; printf 'new,1,0,0,0,0,0,0,0\nnew,1,100,10,0,10,10,10,10\n'; } >"$tmp/want"
diff "$tmp/want" "$tmp/print" || fail "summary read back differs from what was printed"
"$grove" plot "$tmp/summary.csv" --x global_step --y eval_return --band std --print \
    --out "$tmp/s3.png" >"$tmp/print" 2>/dev/null || fail "summary alone, --band std"
grep -qx "ocn,2,0,1,1,0,2,0,2" "$tmp/print" || fail "std band of a summary: $(cat "$tmp/print")"
grep -q "3 groups, 4 runs" <("$grove" plot "$tmp/summary.csv" "$tmp/d/metrics.csv" \
    --x global_step --y eval_return --out "$tmp/s4.png") || fail "summary legend counts"
cmp -s "$tmp/s.png" "$tmp/s3.png" && fail "a summary's std band draws as its min-max band"
expect 1 "x is 'global_step', not 'sps'" plot "$tmp/summary.csv" --x sps --y eval_return --out "$tmp/z.png"
expect 2 "both a summary's" plot "$tmp/summary.csv" "$tmp/ocn_seed1/metrics.csv" --x global_step --y eval_return --out "$tmp/z.png"
expect 1 "group 'ocn' is in an earlier summary too" plot "$tmp/summary.csv" "$tmp/summary.csv" --x global_step --y eval_return --out "$tmp/z.png"
mk "$tmp/split.csv" "group,runs,global_step,mean,std,min,max,lo,hi\na,1,0,1,0,1,1,1,1\nb,1,0,1,0,1,1,1,1\na,1,5,1,0,1,1,1,1\n"
expect 1 "split.csv:4: group 'a' again" plot "$tmp/split.csv" --x global_step --y eval_return --out "$tmp/z.png"
mk "$tmp/runs.csv" "group,runs,global_step,mean,std,min,max,lo,hi\na,2,0,1,0,1,1,1,1\na,3,5,1,0,1,1,1,1\n"
expect 1 "runs.csv:3: runs '3'" plot "$tmp/runs.csv" --x global_step --y eval_return --out "$tmp/z.png"
mk "$tmp/cell.csv" "group,runs,global_step,mean,std,min,max,lo,hi\na,1,0,x,0,1,1,1,1\n"
expect 1 "cell.csv:2: column 'mean'" plot "$tmp/cell.csv" --x global_step --y eval_return --out "$tmp/z.png"
mk "$tmp/inf.csv" "group,runs,global_step,mean,std,min,max,lo,hi\na,1,0,1,0,1,1,1,1\na,1,5,inf,0,1,1,1,1\n"
expect 1 "inf.csv:3: column 'mean': 'inf' is not a finite number" plot "$tmp/inf.csv" --x global_step --y eval_return --out "$tmp/z.png"

# one file without the runs flags: the old single-file plot, several columns
"$grove" plot "$tmp/ocn_seed1/metrics.csv" --x global_step --y eval_return,sps \
    --out "$tmp/single.png" >/dev/null || fail "single-file plot"

# bad input: one line, exit 2 for the command line, 1 for the files
expect 1 "exists" plot "$tmp/d/metrics.csv" "$tmp/e/metrics.csv" --x global_step --y eval_return --out "$tmp/c.png"
expect 2 "--band" plot "$tmp/d/metrics.csv" "$tmp/e/metrics.csv" --x global_step --y eval_return --band iqr --out "$tmp/z.png"
expect 2 "--group names 1 labels for 2 files" plot "$tmp/d/metrics.csv" "$tmp/e/metrics.csv" --group x --x global_step --y eval_return --out "$tmp/z.png"
expect 2 "one column" plot "$tmp/d/metrics.csv" "$tmp/e/metrics.csv" --x global_step --y eval_return,sps --out "$tmp/z.png"
mk "$tmp/late/metrics.csv" "global_step,eval_return\n500,1\n600,2\n"
expect 1 "do not overlap" plot "$tmp/d/metrics.csv" "$tmp/late/metrics.csv" --group x,x --x global_step --y eval_return --out "$tmp/z.png"
mk "$tmp/back/metrics.csv" "global_step,eval_return\n0,1\n100,2\n50,3\n"
expect 1 "x decreases" plot "$tmp/back/metrics.csv" "$tmp/d/metrics.csv" --x global_step --y eval_return --out "$tmp/z.png"
expect 1 "no column 'nope'" plot "$tmp/d/metrics.csv" "$tmp/e/metrics.csv" --x global_step --y nope --out "$tmp/z.png"
[ ! -e "$tmp/z.png" ] || fail "a failed plot wrote its PNG"
echo "plot runs: ok"
