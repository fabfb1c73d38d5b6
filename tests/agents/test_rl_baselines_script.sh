#!/usr/bin/env bash
# bench/ocn/rl.sh --size smoke with the baselines of issue 26 §2 (ompn,
# compile; ocn is agents_rl_script's): S1 and S2; results.md has a row per method where it
# runs (ompn: S1 only), their BC runs (nmi "-": no options), the pictures'
# numbers have a group per method, S2's compile run drives both models'
# decoders, a second call trains nothing, and --archive draws a method
# without runs from an earlier call's numbers.
#   test_rl_baselines_script.sh PATH/TO/grove PATH/TO/rl.sh
set -u
grove=$1 rl=$2
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
args=(--size smoke --methods ompn,compile --frames 600 --jobs 2 --device cpu)
bash "$rl" "$grove" "$tmp/rl" "${args[@]}" >"$tmp/out" 2>"$tmp/err" || { fail "rl.sh failed"; cat "$tmp/err"; }
md=$tmp/rl/results.md
for m in ompn compile; do
    grep -qE "^\| DCA \| sparse \| $m \| 1 \| [0-9]+ \| [0-9.]+ ± 0.000 \|" "$md" ||
        fail "no S1 row for $m: $(cat "$md")"
    grep -q "^$m,1," "$tmp/rl/s1/DCA_sparse.csv" || fail "S1 picture lacks $m"
done
for m in compile; do
    grep -qE "^\| ACB \| sparse \| $m \| 1 \|" "$md" || fail "no S2 row for $m"
done
grep -q "^| ACB | sparse | ompn " "$md" && fail "an S2 row for ompn"
[ -d "$tmp/rl/s2/ACB_sparse/ompn_seed1" ] && fail "ompn ran in S2"
grep -qE '^\| bc_ompn \| AC,CD \| - \| [0-9.]+ \|$' "$md" || fail "no OMPN BC row"
grep -qE '^\| bc2_compile \| CD,DC \| - \| [0-9.]+ \|$' "$md" || fail "no S2 compILE BC row"
grep -q '^models 2$' "$tmp/rl/s2/ACB_sparse/compile_seed1/config" || fail "S2 compile does not drive both models"
grep -q '^kind ompn$' "$tmp/rl/s1/DCA_sparse/ompn_seed1/config" || fail "S1 ompn run is not OMPN"
[ -s "$tmp/rl/s2/ACB_sparse.png" ] || fail "no S2 picture"
before=$(stat -c %Y "$tmp/rl/s1/DCA_sparse/ompn_seed1/last.ckpt" "$tmp/rl/s2/ACB_sparse/compile_seed1/last.ckpt")
sleep 1
bash "$rl" "$grove" "$tmp/rl" "${args[@]}" >"$tmp/out2" 2>"$tmp/err" || { fail "second call failed"; cat "$tmp/err"; }
[ "$before" = "$(stat -c %Y "$tmp/rl/s1/DCA_sparse/ompn_seed1/last.ckpt" "$tmp/rl/s2/ACB_sparse/compile_seed1/last.ckpt")" ] ||
    fail "the second call trained again"
# --archive: a method with no runs here (ocn) drawn from an earlier call's
# plotted numbers, marked in the table; a method that has runs here (ompn)
# keeps its runs, not the archive's curve
mkdir -p "$tmp/arch/s1"
printf '%s\n' group,runs,global_step,mean,std,min,max,lo,hi \
    ocn,7,0,0.5,0.1,0.4,0.6,0.4,0.6 ocn,7,600,0.75,0.1,0.6,0.9,0.6,0.9 \
    ompn,7,0,0.5,0,0.5,0.5,0.5,0.5 ompn,7,600,0.5,0,0.5,0.5,0.5,0.5 >"$tmp/arch/s1/DCA_sparse.csv"
bash "$rl" "$grove" "$tmp/rl" "${args[@]}" --methods ocn,ompn,compile --setting s1 \
    --report-only --archive "$tmp/arch" >/dev/null 2>"$tmp/err" || { fail "--archive call failed"; cat "$tmp/err"; }
grep -qE '^\| DCA \| sparse \| ocn \(archive\) \| 7 \| 600 \| 0.750 ± 0.100 \| 0.600-0.900 \| - \| 600 \|$' "$md" ||
    fail "no archive row for ocn: $(cat "$md")"
grep -q "^ocn,7,600,0.75," "$tmp/rl/s1/DCA_sparse.csv" || fail "the S1 picture lacks the archived ocn curve"
grep -q "^ompn,7," "$tmp/rl/s1/DCA_sparse.csv" && fail "the archive's ompn curve replaced the run's"
grep -q "^ompn,1," "$tmp/rl/s1/DCA_sparse.csv" || fail "ompn's run is not drawn beside the archive"
bash "$rl" "$grove" "$tmp/rl" --archive "$tmp/nope" >/dev/null 2>&1
[ $? -eq 2 ] || fail "a missing --archive folder did not exit 2"
bash "$rl" "$grove" "$tmp/x" --methods ocn,ompn2 >/dev/null 2>&1
[ $? -eq 2 ] || fail "an unknown method did not exit 2"
[ $fails -eq 0 ] && echo "agents_rl_baselines_script: all passed"
[ $fails -eq 0 ]
