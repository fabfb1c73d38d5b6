#!/usr/bin/env bash
# grove craft run and grove bench craft as a user meets them.
#   test_craft_cli.sh PATH/TO/grove
set -u
grove=$1
fails=0
checks=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
check() { checks=$((checks + 1)); }

# The expert solves the S1 imitation tasks: success 100%, return 2.
check
"$grove" craft run --agent expert --tasks AC,CD --episodes 300 --quiet >"$tmp/ex" 2>"$tmp/err" || fail "expert run exited $?"
grep -Eq '^AC +[0-9]+ +[0-9]+ +2\.0000 +100\.00% ' "$tmp/ex" || { fail "AC not solved"; cat "$tmp/ex"; }
grep -Eq '^CD +[0-9]+ +[0-9]+ +2\.0000 +100\.00% ' "$tmp/ex" || { fail "CD not solved"; cat "$tmp/ex"; }
[ -s "$tmp/err" ] && { fail "--quiet printed on stderr"; cat "$tmp/err"; }

# Results do not depend on --threads (only the timing line differs).
check
"$grove" craft run --agent random --tasks AC,make-bed --episodes 200 --seed 7 --threads 1 --quiet | grep -v '^total' >"$tmp/t1"
"$grove" craft run --agent random --tasks AC,make-bed --episodes 200 --seed 7 --threads 2 --quiet | grep -v '^total' >"$tmp/t2"
cmp -s "$tmp/t1" "$tmp/t2" || { fail "--threads changes the results"; diff "$tmp/t1" "$tmp/t2"; }
grep -q '^make bed ' "$tmp/t1" || fail "OMPN task name not shown canonically"
"$grove" craft run --agent random --tasks AC --episodes 200 --seed 8 --threads 1 --quiet | grep -v '^total' >"$tmp/t3"
cmp -s <(grep '^AC' "$tmp/t1") <(grep '^AC' "$tmp/t3") && fail "--seed has no effect"

# Sparse reward: the expert's return is 1.
check
"$grove" craft run --agent expert --tasks CAD --episodes 100 --sparse --quiet >"$tmp/sp" || fail "sparse run failed"
grep -Eq '^CAD +[0-9]+ +[0-9]+ +1\.0000 +100\.00% ' "$tmp/sp" || { fail "sparse return is not 1"; cat "$tmp/sp"; }

# get gold: every map skipped by the expert (the island needs a bridge).
check
"$grove" craft run --agent expert --tasks "get gold" --episodes 20 --quiet >"$tmp/gold" || fail "get gold run failed"
grep -Eq '^get gold +0 +20 ' "$tmp/gold" || { fail "get gold not skipped"; cat "$tmp/gold"; }

# --print draws the grid, y = H-1 on top, then the column numbers.
check
"$grove" craft run --agent expert --tasks A --episodes 1 --print --quiet >"$tmp/pr" || fail "--print failed"
head -2 "$tmp/pr" | tail -1 | grep -q '^9  # # # # # # # # # #$' || { fail "--print grid top row"; head -3 "$tmp/pr"; }
grep -q '^   0 1 2 3 4 5 6 7 8 9$' "$tmp/pr" || fail "--print column numbers"
grep -q 'terminated' "$tmp/pr" || fail "--print never shows the end"

# Bad input: exit 2, one line on stderr naming the flag.
for args in "--agent nobody" "--tasks AE" "--tasks AC,,CD" "--episodes 0" "--tasks AAAAAAAAAAAAAAAAAAAA"; do
    check
    # shellcheck disable=SC2086
    "$grove" craft run $args >"$tmp/o" 2>"$tmp/e"
    rc=$?
    [ "$rc" -eq 2 ] || fail "craft run $args: exit $rc, want 2"
    [ "$(wc -l <"$tmp/e")" -eq 1 ] || { fail "craft run $args: not one stderr line"; cat "$tmp/e"; }
    [ -s "$tmp/o" ] && fail "craft run $args: printed on stdout"
done

# The benchmark runs (tiny workloads) and prints its table.
check
"$grove" bench craft --quick --runs 1 --quiet >"$tmp/b" 2>"$tmp/be" || { fail "bench craft exited $?"; cat "$tmp/be"; }
grep -q '^| case | grove | baseline | ratio | target |' "$tmp/b" || fail "bench table header"
grep -q '^| case | grove | baseline | ratio | target | grove, wall clock | spread |$' "$tmp/b" || fail "bench: no spread column"
grep -Eq '^\| batch 256, step \+ observation, 1 core .* \| [0-9.]+-[0-9.]+x over 1 round \(grove' "$tmp/b" || fail "bench: no spread of a paired row"
grep -Eq '^grove BLAS: .+' "$tmp/b" && grep -Eq '^baseline BLAS: .+' "$tmp/b" || fail "bench: BLAS lines"
grep -q 'batch 256, step + observation, 1 core' "$tmp/b" || fail "bench batch row"
grep -q 'grove craft run --agent random' "$tmp/b" || fail "bench whole-process row"
grep -q 'failed' "$tmp/b" && { fail "a bench case failed"; cat "$tmp/b"; }

echo "envs_craft_cli: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
