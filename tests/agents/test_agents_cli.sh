#!/usr/bin/env bash
# The agents' commands end to end, tiny: grove craft demos -> grove train bc
# (from the replay file and from in-memory demos; --resume) -> eval options
# -> craft run --agent ocn --record -> replay verify -> watch --headless ->
# bench ocn --quick; and their errors (bad flags exit 2 with one line
# naming --help; a missing or wrong file exits 1 with one line).
#   test_agents_cli.sh PATH/TO/grove
set -u
grove=$1
# $tmp, $checks, $fails; fail, ok, expect
. "$(dirname "$0")/cli_lib.sh"

small="--options 3 --hidden 16 --width 16 --batch 16 --eval-every 10 --return-every 20 --return-episodes 2 --lr 0.003 --device cpu --threads 1 --quiet"

# demonstrations as a replay, then BC from it
ok craft demos --tasks AC,CD --episodes 20 --seed 3 --out "$tmp/demos.replay" --quiet
ok train bc --tasks AC,CD --demos "$tmp/demos.replay" --updates 20 $small --out "$tmp/run"
grep -q "^run $tmp/run: 20 updates" "$tmp/out" || fail "train bc summary: $(cat "$tmp/out")"
for f in command config metrics.csv curves.png best.ckpt last.ckpt; do
    checks=$((checks + 1))
    [ -s "$tmp/run/$f" ] || fail "train bc did not write $f"
done
checks=$((checks + 1))
head -1 "$tmp/run/metrics.csv" | grep -q "^update,nll,action_acc,f1_tol0,f1_tol1,align_acc,nmi," ||
    fail "metrics.csv header: $(head -1 "$tmp/run/metrics.csv")"
[ "$(wc -l <"$tmp/run/metrics.csv")" -eq 4 ] || fail "metrics.csv rows: $(cat "$tmp/run/metrics.csv")"
grep -q "^demos file $tmp/demos.replay" "$tmp/run/config" || fail "config lacks the demos file"

# stop at 10, resume to 20: the same last.ckpt as the straight run
ok train bc --tasks AC,CD --demos "$tmp/demos.replay" --updates 10 $small --out "$tmp/run2"
ok train bc --tasks AC,CD --demos "$tmp/demos.replay" --updates 20 $small --out "$tmp/run2" --resume
checks=$((checks + 1))
cmp -s "$tmp/run/last.ckpt" "$tmp/run2/last.ckpt" || fail "resumed last.ckpt differs"
expect 2 "options differ" train bc --tasks AC,CD --demos "$tmp/demos.replay" --updates 20 $small --out "$tmp/run2" --resume --tau 1
expect 1 "already exists" train bc --tasks AC,CD --updates 1 $small --out "$tmp/run"

# in-memory demonstrations and the MoE baseline
ok train bc --tasks AC,CD --demos-per-task 10 --model moe --updates 2 $small --out "$tmp/moe"
grep -q "^kind moe" "$tmp/moe/config" || fail "moe config: $(cat "$tmp/moe/config")"
# a controller blind to the observation: said in the config, kept by
# --resume, refused when --resume leaves it out (these departures are
# tested against --recipe thesis, where each is off unless its flag says)
ok train bc --recipe thesis --tasks AC,CD --demos-per-task 10 --blind-controller --updates 1 $small --out "$tmp/blind"
grep -q "^controller blind$" "$tmp/blind/config" || fail "blind config: $(cat "$tmp/blind/config")"
ok train bc --recipe thesis --tasks AC,CD --demos-per-task 10 --blind-controller --updates 2 $small --out "$tmp/blind" --resume
expect 2 "controller blind" train bc --recipe thesis --tasks AC,CD --demos-per-task 10 --updates 3 $small --out "$tmp/blind" --resume
# options that do not read the inventory: the same, and eval options,
# craft run and watch's path (the checkpoint) work on such a model
ok train bc --recipe thesis --tasks AC,CD --demos-per-task 10 --options-without-inventory --updates 1 $small --out "$tmp/noinv"
grep -q "^options_ignore 1050:1071$" "$tmp/noinv/config" || fail "no-inventory config: $(cat "$tmp/noinv/config")"
expect 2 "options_ignore" train bc --recipe thesis --tasks AC,CD --demos-per-task 10 --updates 2 $small --out "$tmp/noinv" --resume
ok eval options --checkpoint "$tmp/noinv/last.ckpt" --episodes 2 --demos-per-task 2 --device cpu
# the option-balance term: its weight in the config, --resume keeps it and
# refuses a run that leaves it out; the training loss differs, the
# validation NLL of update 0 (before any step) does not
ok train bc --recipe thesis --tasks AC,CD --demos-per-task 10 --balance-options 0.5 --updates 2 $small --out "$tmp/bal"
grep -q "^balance 0.5$" "$tmp/bal/config" || fail "balance config: $(cat "$tmp/bal/config")"
ok train bc --recipe thesis --tasks AC,CD --demos-per-task 10 --balance-options 0.5 --updates 3 $small --out "$tmp/bal" --resume
expect 2 "balance" train bc --recipe thesis --tasks AC,CD --demos-per-task 10 --updates 4 $small --out "$tmp/bal" --resume
ok train bc --recipe thesis --tasks AC,CD --demos-per-task 10 --updates 3 $small --out "$tmp/nobal"
checks=$((checks + 1))
[ "$(sed -n 2p "$tmp/bal/metrics.csv" | cut -d, -f2)" = "$(sed -n 2p "$tmp/nobal/metrics.csv" | cut -d, -f2)" ] &&
    [ "$(tail -1 "$tmp/bal/metrics.csv" | cut -d, -f2)" != "$(tail -1 "$tmp/nobal/metrics.csv" | cut -d, -f2)" ] ||
    fail "--balance-options: update-0 NLL should match and the last differ: $(cat "$tmp/bal/metrics.csv" "$tmp/nobal/metrics.csv")"
expect 2 "--balance-options" train bc --balance-options -0.1 --out "$tmp/x"

# the success matrix
ok eval options --checkpoint "$tmp/run/best.ckpt" --episodes 2 --out "$tmp/m.csv" --device cpu
grep -q "^| option | A | C | D |" "$tmp/out" || fail "eval options table: $(cat "$tmp/out")"
checks=$((checks + 1))
[ "$(head -1 "$tmp/m.csv")" = "option,A,C,D" ] || fail "matrix csv: $(cat "$tmp/m.csv")"
[ "$(wc -l <"$tmp/m.csv")" -eq 4 ] || fail "matrix csv rows"
# options count from 0, as in replays and the viewer (replays/README.md)
checks=$((checks + 1))
[ "$(cut -d, -f1 "$tmp/m.csv" | tail -n +2 | tr '\n' ' ')" = "0 1 2 " ] || fail "matrix csv option numbers: $(cat "$tmp/m.csv")"
grep -qE '^\| 0 \|' "$tmp/out" && ! grep -qE '^\| [3-9] \|' "$tmp/out" || fail "eval options rows: $(cat "$tmp/out")"
if grep -q "best one-to-one assignment" "$tmp/out"; then
    grep -q "best one-to-one assignment:.*->option [012] " "$tmp/out" && ! grep -q -- "->option 3 " "$tmp/out" ||
        fail "assignment numbering: $(grep assignment "$tmp/out")"
fi
expect 1 "exists" eval options --checkpoint "$tmp/run/best.ckpt" --episodes 2 --out "$tmp/m.csv"
# ... and which option is in force during each subtask (200 demos per task
# by default; 5 here: 10 demonstrations, one boundary each)
ok eval options --checkpoint "$tmp/run/best.ckpt" --episodes 1 --demos-per-task 5 --device cpu
checks=$((checks + 1))
grep -q "^option in force .* 10 expert demonstrations" "$tmp/out" && [ "$(grep -c "^| option | A | C | D |" "$tmp/out")" -eq 2 ] &&
    grep -q "^NMI [0-9.]* over [0-9]* steps ([0-9.]* over the 20 subtask segments, .* (10 steps)" "$tmp/out" || fail "eval options alignment: $(cat "$tmp/out")"
ok eval options --checkpoint "$tmp/run/best.ckpt" --episodes 1 --demos-per-task 0 --device cpu
checks=$((checks + 1))
! grep -q "option in force" "$tmp/out" || fail "--demos-per-task 0 still printed the alignment"
expect 2 "demos-per-task" eval options --checkpoint "$tmp/run/best.ckpt" --demos-per-task -1

# the agent in Craft, recorded with o/po/pe, verified by re-simulation
ok craft run --agent ocn --checkpoint "$tmp/run/best.ckpt" --episodes 3 --record "$tmp/ocn.replay" --quiet --device cpu
grep -q "^AC  *3 " "$tmp/out" || fail "craft run --agent ocn table: $(cat "$tmp/out")"
ok replay verify "$tmp/ocn.replay"
ok replay dump "$tmp/ocn.replay" --episode 0 --json
checks=$((checks + 1))
head -1 "$tmp/out" | grep -q '"o":.*"po":\[.*\],"pe":' || fail "no o/po/pe in the replay: $(head -1 "$tmp/out")"
ok replay info "$tmp/ocn.replay"
grep -q "ocn" "$tmp/out" || fail "replay info does not name the ocn agent"
# --print numbers the options as the replay stores them (from 0)
ok craft run --agent ocn --checkpoint "$tmp/run/best.ckpt" --tasks AC --episodes 1 --print --record "$tmp/p.replay" --device cpu
sed -n 's/.*(option \([0-9]*\), end p.*/\1/p' "$tmp/out" >"$tmp/printed"
ok replay dump "$tmp/p.replay" --json
sed -n 's/.*"o":\([0-9]*\).*/\1/p' "$tmp/out" >"$tmp/stored"
checks=$((checks + 1))
[ -s "$tmp/printed" ] && cmp -s "$tmp/printed" "$tmp/stored" || fail "--print option numbers differ from the replay's: $(paste "$tmp/printed" "$tmp/stored" | head)"
expect 1 "not one of the checkpoint's training tasks" craft run --agent ocn --checkpoint "$tmp/run/best.ckpt" --tasks DCA --episodes 1
expect 2 "--checkpoint FILE is required" craft run --agent ocn
expect 1 "demos.replay" craft run --agent ocn --checkpoint "$tmp/demos.replay" --episodes 1
expect 1 "nosuch.ckpt" eval options --checkpoint "$tmp/nosuch.ckpt"

# the live agent, headless: one PNG per state
ok watch --checkpoint "$tmp/run/best.ckpt" --episodes 1 --headless --out "$tmp/frames" --device cpu
checks=$((checks + 1))
[ -s "$tmp/frames/ep0000_t0000.png" ] || fail "watch wrote no first frame: $(ls "$tmp/frames" | head)"
n=$(ls "$tmp/frames" | wc -l)
[ "$n" -ge 2 ] || fail "watch wrote $n frames"

# another world (--n-each): kept in the replay's header and the checkpoint,
# so BC from the replay, eval options and craft run --agent ocn use it
ok craft run --agent expert --episodes 50 --n-each 4 --quiet
len4=$(awk '$1 == "AC" {print $6}' "$tmp/out")
ok craft run --agent expert --episodes 50 --n-each 1 --quiet
len1=$(awk '$1 == "AC" {print $6}' "$tmp/out")
checks=$((checks + 1))
# four copies of each primitive: the nearest one is closer
awk -v a="$len4" -v b="$len1" 'BEGIN { exit !(a > 0 && a < b) }' ||
    fail "expert AC length with --n-each 4 ($len4) not below the default ($len1)"
ok craft demos --tasks AC,CD --episodes 20 --seed 3 --n-each 4 --out "$tmp/demos4.replay" --quiet
ok replay info "$tmp/demos4.replay"
grep -q "n_each 4" "$tmp/out" || fail "replay info lacks n_each 4: $(cat "$tmp/out")"
ok train bc --tasks AC,CD --demos "$tmp/demos4.replay" --updates 2 $small --out "$tmp/run4"
grep -q "^world n_each 4$" "$tmp/run4/config" || fail "config lacks the world: $(cat "$tmp/run4/config")"
ok train bc --tasks AC,CD --demos-per-task 10 --n-each 4 --updates 2 $small --out "$tmp/run4m"
grep -q "^world n_each 4$" "$tmp/run4m/config" || fail "config lacks the world: $(cat "$tmp/run4m/config")"
checks=$((checks + 1))
grep -q "^world" "$tmp/blind/config" && fail "a one-copy-world run (--recipe thesis) wrote world lines"
ok craft run --agent ocn --checkpoint "$tmp/run4/best.ckpt" --episodes 2 --record "$tmp/ocn4.replay" --quiet --device cpu
ok replay info "$tmp/ocn4.replay"
grep -q "n_each 4" "$tmp/out" || fail "craft run --agent ocn did not play in the checkpoint's world: $(cat "$tmp/out")"
ok replay verify "$tmp/ocn4.replay"
# its expert_success column is the expert agent's count on the same maps
# (seeds 1-200 of four-copy AC hold unsolvable maps, which it skips)
ok craft run --agent ocn --checkpoint "$tmp/run4/best.ckpt" --tasks AC --episodes 200 --seed 9 --quiet --device cpu
ocn_expert=$(awk '$1 == "AC" {print $7}' "$tmp/out")
ok craft run --agent expert --tasks AC --n-each 4 --episodes 200 --seed 9 --quiet
solved=$(awk '$1 == "AC" {print $2}' "$tmp/out")
checks=$((checks + 1))
[ "$ocn_expert" = "$(awk -v n="$solved" 'BEGIN { printf "%.2f%%", 100 * n / 200 }')" ] && [ "$solved" -lt 200 ] ||
    fail "craft run --agent ocn expert_success $ocn_expert, expert agent solved $solved of 200"
ok eval options --checkpoint "$tmp/run4/best.ckpt" --episodes 2 --device cpu
expect 2 "--n-each 1" train bc --tasks AC,CD --demos "$tmp/demos4.replay" --n-each 1 --updates 2 $small --out "$tmp/x"
expect 2 "at least 1" train bc --tasks AC,CD --n-each 0 --updates 2 $small --out "$tmp/x"
expect 2 "--n-each 30" craft demos --n-each 30 --out "$tmp/x.replay"
expect 2 "--n-each" craft run --n-each -3

# the benchmark runs (tiny, without the PyTorch child)
ok bench ocn --quick --no-baseline --threads 1 --quiet
grep -q "^| case | grove | baseline | ratio |" "$tmp/out" || fail "bench table: $(cat "$tmp/out")"
grep -q "^| case | grove | baseline | ratio | spread |$" "$tmp/out" || fail "bench: no spread column"
grep -Eq "^grove BLAS: .+" "$tmp/out" || fail "bench: grove's BLAS not named"
grep -Eq "\| grove ±[0-9]+% over 1 round \|$" "$tmp/out" || fail "bench: no spread cell"

# bad command lines
expect 2 "--help" train bc --options 0 --out "$tmp/x"
expect 2 "--help" train bc --model lstm --out "$tmp/x"
expect 2 "--out" train bc
expect 2 "--help" train bc --tasks AC,XY --out "$tmp/x"
expect 2 "--help" eval options
expect 2 "--help" watch

echo "agents_cli: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
