#!/usr/bin/env bash
# bench/nlp/mlm_table.sh --smoke (issue 24's results table, tiny): the
# three MLM rows run (the Transformer with learned and with sinusoidal
# positions), each with its decoders (UDGN argmax and Chu-Liu,
# StructFormer its own, the Transformer none), the chain baselines' UAS
# as depparse gives it, a second call resumes instead of retraining, and
# bad arguments exit 2. Exit 77 without the treebank sample.
#   test_mlm_table.sh PATH/TO/grove PATH/TO/mlm_table.sh SHARED_DATA
set -u
grove=$1 script=$2 bank=$3/treebank_sample/treebank.zip
[ -f "$bank" ] || { echo "skip: no $bank"; exit 77; }
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
bash "$script" "$grove" "$bank" "$tmp/t" --smoke --rows udgn,structformer,transformer,transformer_sinusoidal --jobs 2 \
    >"$tmp/out" 2>"$tmp/err" || { fail "mlm_table.sh failed"; cat "$tmp/err"; }
md=$tmp/t/mlm.md
num='[0-9]+\.[0-9]+'
grep -qE "^\| udgn \| .* \| $num \| $num \(1\) \| $num / $num \| $num / $num \| - / - \|" "$md" || fail "udgn row: $(grep '^| udgn' "$md")"
grep -qE "^\| structformer \| .* \| $num \| $num \(1\) \| - / - \| - / - \| $num / $num \|" "$md" || fail "structformer row: $(grep '^| structformer' "$md")"
grep -qE "^\| transformer \| .* \| $num \| $num \(1\) \| - / - \| - / - \| - / - \|" "$md" || fail "transformer row: $(grep '^| transformer' "$md")"
grep -qE "^\| transformer_sinusoidal \| \`--model transformer --positions sinusoidal\` \| $num \| $num \(1\) \| - / - \| - / - \| - / - \|" "$md" \
    || fail "transformer_sinusoidal row: $(grep '^| transformer_sin' "$md")"
grep -q "^positions sinusoidal$" "$tmp/t/transformer_sinusoidal/config" || fail "transformer_sinusoidal is not sinusoidal"
grep -q "^positions learned$" "$tmp/t/transformer/config" || fail "transformer is not learned"
# the right chain's UAS is depparse's own
want=$("$grove" nlp depparse --baseline right --trees "$tmp/t/test_trees/treebank/combined" --decoder argmax \
    --quiet 2>/dev/null | sed -n 's/^UAS \([0-9.]*\) .*/\1/p')
[ -n "$want" ] && grep -qE "^\| right chain \| .* \| $want / " "$md" || fail "right chain: want UAS $want: $(grep '^| right' "$md")"
# the test split is the files numbered NNN9 and only those
[ "$(ls "$tmp/t/test_trees/treebank/combined" | grep -cv '9\.mrg$')" = 0 ] || fail "test trees not all NNN9"
# a second call finds the runs done: the checkpoints are not rewritten
touch -d '2000-01-01' "$tmp/t/udgn/last.ckpt"
bash "$script" "$grove" "$bank" "$tmp/t" --smoke --rows udgn >/dev/null 2>&1 || fail "second call failed"
[ "$(date -r "$tmp/t/udgn/last.ckpt" +%Y)" = 2000 ] || fail "second call retrained udgn"
for bad in "--rows nope" "--epochs 0" "--jobs x" "--frobnicate 1"; do
    # shellcheck disable=SC2086
    bash "$script" "$grove" "$bank" "$tmp/x" $bad >/dev/null 2>&1
    [ $? -eq 2 ] || fail "mlm_table.sh $bad did not exit 2"
done
bash "$script" "$grove" "$tmp/none.zip" "$tmp/x" >/dev/null 2>&1
[ $? -eq 2 ] || fail "a missing treebank did not exit 2"
[ $fails -eq 0 ] && echo "nlp_mlm_table: all passed"
[ $fails -eq 0 ]
