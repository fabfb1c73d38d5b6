#!/usr/bin/env bash
# bench/ocn/recipe.sh --smoke (ocn.md §6.1's ablation, tiny): one seed of
# every ablation row; each row's run has exactly its departures (read back
# from the run's config), recipe.md has a row each; bad arguments exit 2.
#   test_recipe_script.sh PATH/TO/grove PATH/TO/recipe.sh
set -u
grove=$1 script=$2
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
bash "$script" "$grove" "$tmp/r" --smoke --part ablation --seeds 1 --jobs 2 --device cpu \
    >"$tmp/out" 2>"$tmp/err" || { fail "recipe.sh failed"; cat "$tmp/err"; }
# --report-only: the same table from the runs on disk, nothing run;
# --rows: only the rows named
cp "$tmp/r/recipe.md" "$tmp/recipe_first.md"
bash "$script" "$grove" "$tmp/r" --smoke --part ablation --seeds 1 --report-only >/dev/null 2>&1 ||
    fail "--report-only failed"
cmp -s "$tmp/r/recipe.md" "$tmp/recipe_first.md" || fail "--report-only gave another table"
bash "$script" "$grove" "$tmp/r" --smoke --part ablation --seeds 1 --rows s1,no_blind --report-only \
    >/dev/null 2>&1 || fail "--rows --report-only failed"
[ "$(grep -c '^| s1 \|^| no_blind ' "$tmp/r/recipe.md")" = 2 ] && [ "$(wc -l <"$tmp/r/recipe.md")" = 4 ] ||
    fail "--rows s1,no_blind: $(cat "$tmp/r/recipe.md")"
bash "$script" "$grove" "$tmp/r2" --smoke --seeds 1 --rows tau1 --jobs 2 --device cpu >/dev/null 2>&1 ||
    fail "--rows tau1 failed"
[ "$(ls -d "$tmp"/r2/*_seed1 | wc -l)" = 1 ] && [ -d "$tmp/r2/tau1_seed1" ] ||
    fail "--rows tau1 ran: $(ls "$tmp/r2")"
# seeds without runs are left out of the counts (seed 2 was never run)
bash "$script" "$grove" "$tmp/r" --smoke --part ablation --seeds 1,2 --rows s1 --report-only >/dev/null 2>&1 ||
    fail "--report-only with a seed not run failed"
grep -qE '^\| s1 \| .* \| 1 \| [01] \|' "$tmp/r/recipe.md" || fail "--report-only, seed 2 not run: $(cat "$tmp/r/recipe.md")"
cp "$tmp/recipe_first.md" "$tmp/r/recipe.md"
# row: world blind noinv balance demos (1 = the departure is on)
while read -r row n4 blind noinv bal demos; do
    c=$tmp/r/${row}_seed1/config
    [ -f "$c" ] || { fail "no run for $row"; continue; }
    got="$(grep -qx "world n_each 4" "$c" && echo 1 || echo 0) $(grep -qx "controller blind" "$c" && echo 1 || echo 0)"
    got+=" $(grep -q "^options_ignore" "$c" && echo 1 || echo 0) $(grep -q "^balance 0.1" "$c" && echo 1 || echo 0)"
    got+=" $(grep -q "^demos expert 40 per task" "$c" && echo 1 || echo 0)"
    [ "$got" = "$n4 $blind $noinv $bal $demos" ] || fail "$row: departures $got, want $n4 $blind $noinv $bal $demos"
    grep -qE "^\| $row \| \`--recipe thesis .*\` \| 1 \| [01] \| [01] \| [01] \((keeps|fails)\) \|" "$tmp/r/recipe.md" ||
        fail "no recipe.md row for $row: $(cat "$tmp/r/recipe.md")"
done <<'ROWS'
s1 1 1 1 1 1
no_demos 1 1 1 1 0
no_blind 1 0 1 1 1
no_noinv 1 1 0 1 1
no_balance 1 1 1 0 1
no_n_each 0 1 1 1 1
ROWS
# the s1 row is train bc's default recipe (same settings, same config
# lines but the seed's own)
"$grove" train bc --tasks AC,CD --demos-per-task 40 --updates 0 --hidden 8 --width 8 --batch 8 \
    --return-every 0 --device cpu --threads 1 --quiet --out "$tmp/default" >/dev/null 2>&1 ||
    fail "default train bc failed"
diff <(grep -v "^seed" "$tmp/default/config") <(grep -v "^seed" "$tmp/r/s1_seed1/config") >/dev/null ||
    fail "the s1 row differs from train bc's default: $(diff "$tmp/default/config" "$tmp/r/s1_seed1/config")"
for bad in "--part all2" "--updates 0" "--jobs x" "--part ablation --rows tau1" "--rows nope"; do
    # shellcheck disable=SC2086
    bash "$script" "$grove" "$tmp/x" $bad >/dev/null 2>&1
    [ $? -eq 2 ] || fail "recipe.sh $bad did not exit 2"
done
[ $fails -eq 0 ] && echo "agents_recipe_script: all passed"
[ $fails -eq 0 ]
