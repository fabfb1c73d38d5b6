#!/usr/bin/env bash
# grove bench nlp at tiny sizes, so that it cannot rot: exit status 0, the
# table with its spread column, both sides alternated over 2 rounds, grove's
# BLAS in the header, and the BLAS and threads the PyTorch side ran on (or,
# without torch, the reason the baseline is n/a); --model transformer's
# table and its matrix-product floor table (a row per case).
#   test_bench_nlp.sh PATH/TO/grove
set -u
grove=$1
fails=0
checks=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() {
    checks=$((checks + 1))
    grep -Eq -- "$1" "$tmp/out" || fail "no /$1/ in the output"
}

"$grove" bench nlp --quick --cases batch1,small --windows 1 --warmup 0 \
    --rounds 2 --threads 1 >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/out"
checks=$((checks + 1))
[ "$rc" -eq 0 ] || { fail "grove bench nlp exited $rc"; cat "$tmp/err"; }
has '^grove BLAS: .+'
has '^\| case \| grove \| baseline \| ratio \| spread \|$'
has '^\| batch1 \(quick'
has '^\| small \(quick: 16/32/16.* tok/s \|'
has 'over 2 rounds'
if grep -q '^baseline n/a' "$tmp/out"; then
    has '^baseline BLAS: not reported'
else
    has '^\| small \(quick.* tok/s \| [0-9]+ tok/s \| [0-9.]+x \| [0-9.]+-[0-9.]+x over 2 rounds'
    has '^baseline BLAS: .+; BLAS threads [0-9?]+; torch .*, intra-op threads 1'
fi
# a bad --rounds is a command-line error
"$grove" bench nlp --quick --rounds 0 >"$tmp/out" 2>"$tmp/err"
rc=$?
checks=$((checks + 1))
[ "$rc" -eq 2 ] && grep -q -- "--rounds must be in" "$tmp/err" ||
    fail "--rounds 0: exit $rc, $(cat "$tmp/err")"
# --model transformer: the encoder classifier against torch's layers
"$grove" bench nlp --model transformer --quick --windows 1 --warmup 0 \
    --rounds 1 --threads 1 >"$tmp/out" 2>"$tmp/err"
rc=$?
checks=$((checks + 1))
[ "$rc" -eq 0 ] || { fail "grove bench nlp --model transformer exited $rc"; cat "$tmp/err"; }
has '^# Transformer encoder classifier'
has '^\| classifier \(quick.* tok/s \|'
has '^\| tiny \(quick.* tok/s \|'
grep -q '^baseline:' "$tmp/out" || has '^\| tiny \(quick.* tok/s \| [0-9]+ tok/s \| [0-9.]+x'
# the matrix-product floor of each case, timed in the same rounds
has '^### Matrix-product floor'
has '^\| case \| GFLOP per step \| floor \| grove step \| grove / floor \| baseline / floor \| spread \|$'
has '^\| classifier \(quick.*\) \| [0-9.e-]+ \| [0-9.]+ ms \([0-9.]+ GFLOP/s\) \| [0-9.]+ ms \| [0-9.]+x \| ([0-9.]+x|n/a) \| [0-9.]+-[0-9.]+x over 1 round'
has '^\| tiny \(quick.*\) \| [0-9.e-]+ \| [0-9.]+ ms .* \| [0-9.]+x \|'
"$grove" bench nlp --model lstm >"$tmp/out" 2>"$tmp/err"
rc=$?
checks=$((checks + 1))
[ "$rc" -eq 2 ] && grep -q -- "--model 'lstm': transformer, udgn or structformer" "$tmp/err" ||
    fail "--model lstm: exit $rc, $(cat "$tmp/err")"
echo "nlp_bench: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
