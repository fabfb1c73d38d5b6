#!/usr/bin/env bash
# grove bench ppo at tiny sizes (issue 20 §5), so that the benchmark cannot
# rot: exit status and table with --no-baseline and with the PyTorch baseline
# (its numbers required wherever /usr/bin/python3 has torch and can load
# this build's libgrove.so, else the line saying why it did not run), the
# breakdown's rows, --help, and bad command lines (exit 2, one line).
#   test_ppo_bench.sh PATH/TO/grove PATH/TO/libgrove.so SOURCE_DIR
set -u
grove=$1
lib=$2
src=$3
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

num='[0-9][0-9.e+]*'

# no baseline: grove's numbers, n/a and the reason
"$grove" bench ppo --quick --no-baseline --device cpu --threads 1 --quiet \
    >"$tmp/a" 2>"$tmp/a.err" || fail "--no-baseline: exit $?: $(cat "$tmp/a.err")"
grep -q "^| PPO training frames/s, CPU, 4 worlds (baseline: PyTorch, .*) | $num | n/a | n/a | grove " \
    "$tmp/a" || fail "--no-baseline: no frames/s row with n/a"
grep -q "^| PPO iterations/s, CPU, 4 worlds .* | $num | n/a | n/a |" "$tmp/a" ||
    fail "--no-baseline: no iterations/s row"
grep -q "^baseline not measured: skipped (--no-baseline)" "$tmp/a" ||
    fail "--no-baseline: the reason is missing"
[ -s "$tmp/a.err" ] && fail "--quiet printed on stderr: $(cat "$tmp/a.err")"

# with the baseline where it can run
can=0
if GROVE_LIB="$lib" PYTHONPATH="$src/python" /usr/bin/python3 -c \
    "import torch, numpy, grove; grove.Craft(1, ['DCA'], n_each=4)" \
    >/dev/null 2>&1; then
    can=1
fi
"$grove" bench ppo --quick --device cpu --threads 1 --quiet \
    >"$tmp/b" 2>"$tmp/b.err" || fail "with the baseline: exit $?: $(cat "$tmp/b.err")"
if [ "$can" -eq 1 ]; then
    grep -q "^| PPO training frames/s, CPU, 4 worlds (baseline: PyTorch [^,]*, .*) | $num | $num | $num""x | " \
        "$tmp/b" || fail "baseline: no frames/s row with both sides and a ratio"
    grep -q "^baseline BLAS: .*torch" "$tmp/b" || fail "baseline: no BLAS line"
    grep -q "^| environment (Craft steps, truncation copies) | .* | $num | [0-9]*% |$" \
        "$tmp/b" || fail "baseline: no environment row for PyTorch"
    grep -q "^| frames / decisions per iteration | $num / 16 | | $num / 16 | |$" \
        "$tmp/b" || fail "baseline: frames / decisions row"
else
    echo "note: /usr/bin/python3 cannot run the baseline here (torch or libgrove missing)"
    grep -q "^baseline not measured: " "$tmp/b" || fail "no reason for the missing baseline"
fi
cat "$tmp/b"

# --help, and bad command lines: exit 2, one line
"$grove" bench ppo --help >"$tmp/h" 2>&1 || fail "--help: exit $?"
for f in --no-baseline --quick --num-envs --num-steps --options --threads; do
    grep -q -- "$f" "$tmp/h" || fail "--help lacks $f"
done
for bad in "--num-envs 0" "--runs 0" "--bogus" "--quick --quick"; do
    # shellcheck disable=SC2086
    "$grove" bench ppo $bad >"$tmp/o" 2>"$tmp/e"
    rc=$?
    [ "$rc" -eq 2 ] || fail "bench ppo $bad: exit $rc, want 2"
    [ "$(wc -l <"$tmp/e")" -eq 1 ] || fail "bench ppo $bad: not one line: $(cat "$tmp/e")"
done
"$grove" bench ppo --quick --no-baseline --quiet --options "$tmp/none.ckpt" \
    >"$tmp/o" 2>"$tmp/e"
rc=$?
[ "$rc" -ne 0 ] || fail "missing --options file: exit 0"
grep -q "none.ckpt" "$tmp/e" || fail "missing --options file: $(cat "$tmp/e")"

if [ "$fails" -ne 0 ]; then
    echo "agents_ppo_bench: $fails failure(s)"
    exit 1
fi
echo "agents_ppo_bench: ok"
