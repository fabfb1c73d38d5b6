#!/usr/bin/env bash
# bench/ocn/rl.sh --size smoke with the baselines of issue 26 §2 (ompn,
# compile; ocn is agents_rl_script's): S1 and S2; results.md has a row per method where it
# runs (ompn: S1 only), their BC runs (nmi "-": no options), the pictures'
# numbers have a group per method, S2's compile run drives both models'
# decoders, and a second call trains nothing.
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
bash "$rl" "$grove" "$tmp/x" --methods ocn,ompn2 >/dev/null 2>&1
[ $? -eq 2 ] || fail "an unknown method did not exit 2"
[ $fails -eq 0 ] && echo "agents_rl_baselines_script: all passed"
[ $fails -eq 0 ]
