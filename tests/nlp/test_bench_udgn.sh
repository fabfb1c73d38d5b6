#!/bin/bash
# grove bench nlp --model udgn|structformer --quick --no-baseline (issue 24
# §5): the MLM benchmark runs for both models, exits 0 and prints its
# table; an unknown --model is a usage error (exit 2). No torch needed.
#   test_bench_udgn.sh PATH/TO/grove OUTDIR
set -u
grove=$1
out=$2
mkdir -p "$out"
fail=0
for m in udgn structformer; do
    f="$out/bench_$m.out"
    "$grove" bench nlp --model "$m" --quick --no-baseline --threads 1 \
        --windows 1 --warmup 1 --rounds 2 >"$f" 2>&1
    rc=$?
    cat "$f"
    [ $rc -eq 0 ] || { echo "FAIL: $m exit $rc"; fail=1; }
    grep -q "^| $m quick, wall | [0-9]* tok/s | n/a |" "$f" ||
        { echo "FAIL: $m: no wall row"; fail=1; }
    grep -q "^| $m quick, process CPU time |" "$f" ||
        { echo "FAIL: $m: no CPU-time row"; fail=1; }
    grep -q "over 2 rounds" "$f" || { echo "FAIL: $m: not 2 rounds"; fail=1; }
    grep -q "^grove: [1-9][0-9]* parameters; BLAS: " "$f" ||
        { echo "FAIL: $m: no parameter/BLAS line"; fail=1; }
    grep -q "^baseline: not run" "$f" ||
        { echo "FAIL: $m: baseline ran despite --no-baseline"; fail=1; }
    if grep -q " 0 tok/s" "$f"; then echo "FAIL: $m: 0 tok/s"; fail=1; fi
done
"$grove" bench nlp --model lstm --quick --no-baseline \
    >"$out/bad.out" 2>&1
rc=$?
cat "$out/bad.out"
[ $rc -eq 2 ] || { echo "FAIL: --model lstm exit $rc, want 2"; fail=1; }
grep -q "structformer" "$out/bad.out" ||
    { echo "FAIL: the error does not name the models"; fail=1; }
"$grove" bench nlp --quick --no-baseline --nemb 32 >"$out/bad2.out" 2>&1
rc=$?
cat "$out/bad2.out"
[ $rc -eq 2 ] || { echo "FAIL: --nemb without --model exit $rc, want 2"; fail=1; }
exit $fail
