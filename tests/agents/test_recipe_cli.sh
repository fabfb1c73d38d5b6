#!/usr/bin/env bash
# The S1/S2 world and recipe as defaults (issue 20 §1, ocn.md §6.1): craft
# demos, craft run, train bc and train ppo default to four copies of each
# primitive for task sets of OCN letters (one copy for OMPN tasks); train
# bc's default recipe is s1 (its five departures in the config), --recipe
# thesis is ocn.md §3-§6, and each departure's own flag overrides; a file
# of another world than the one asked for is refused in one line, exit 2
# (train bc --demos, eval options, watch, craft run --agent ocn, train
# ppo --options).
#   test_recipe_cli.sh PATH/TO/grove
set -u
grove=$1
fails=0
checks=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() {
    checks=$((checks + 1))
    if ! "$grove" "$@" >"$tmp/out" 2>"$tmp/err"; then
        fail "grove $*: exit $?"
        cat "$tmp/err"
    fi
}
expect() { # expect EXIT PATTERN ARGS...: exit EXIT, one stderr line with PATTERN
    local want=$1 pat=$2
    shift 2
    checks=$((checks + 1))
    "$grove" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    [ "$rc" -eq "$want" ] || fail "grove $*: exit $rc, want $want"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || { fail "grove $*: not one stderr line"; cat "$tmp/err"; }
    grep -qF -- "$pat" "$tmp/err" || fail "grove $*: stderr lacks '$pat': $(cat "$tmp/err")"
}
has() { # has FILE LINE: FILE holds exactly that line
    checks=$((checks + 1))
    grep -qxF -- "$2" "$1" || fail "$1 lacks '$2': $(tr '\n' '|' <"$1")"
}
lacks() { # lacks FILE PREFIX: no line of FILE starts with PREFIX
    checks=$((checks + 1))
    ! grep -q "^$2" "$1" || fail "$1 has '$2': $(grep "^$2" "$1")"
}

# craft demos: the replay's header keeps the world
ok craft demos --tasks AC,CD --episodes 3 --seed 2 --out "$tmp/d.replay" --quiet
ok replay info "$tmp/d.replay"
grep -q "n_each 4," "$tmp/out" || fail "S1 demos are not of the four-copy world: $(grep env "$tmp/out")"
ok craft demos --tasks make-bed --episodes 2 --out "$tmp/bed.replay" --quiet
ok replay info "$tmp/bed.replay"
grep -q "n_each 1," "$tmp/out" || fail "OMPN demos are not of the one-copy world: $(grep env "$tmp/out")"
ok craft demos --tasks AC,CD --episodes 3 --seed 2 --n-each 1 --out "$tmp/d1.replay" --quiet

# craft run: the default for letter tasks is --n-each 4, not 1
for n in default 4 1; do
    flag=(); [ "$n" = default ] || flag=(--n-each "$n")
    ok craft run --agent expert --tasks AC,DCA --episodes 40 --seed 5 "${flag[@]}" --quiet
    grep -E '^(AC|DCA) ' "$tmp/out" >"$tmp/run_$n"
done
checks=$((checks + 1))
cmp -s "$tmp/run_default" "$tmp/run_4" && ! cmp -s "$tmp/run_default" "$tmp/run_1" ||
    fail "craft run's default world is not n_each 4: $(cat "$tmp/run_default" "$tmp/run_4" "$tmp/run_1")"

# train bc: the s1 recipe by default, its departures in the config
small="--updates 2 --options 3 --hidden 8 --width 8 --batch 8 --eval-every 2 --return-every 0 --device cpu --threads 1"
ok train bc --tasks AC,CD --updates 0 --hidden 8 --width 8 --batch 8 --return-every 0 --device cpu --threads 1 --out "$tmp/s1"
grep -q "^recipe: s1 (docs/ocn/ppo.md), world n_each 4$" "$tmp/err" || fail "no recipe line: $(cat "$tmp/err")"
grep -q "^demonstrations: 48000 (38400 train, 9600 validation)" "$tmp/err" ||
    fail "the s1 recipe does not generate 24000 demonstrations per task: $(grep demonstrations "$tmp/err")"
for line in "controller blind" "options_ignore 1050:1071" "balance 0.100000001" "world n_each 4" \
            "demos expert 24000 per task, seed 1"; do
    has "$tmp/s1/config" "$line"
done
# --recipe thesis: ocn.md §3-§6, none of them
ok train bc --recipe thesis --tasks AC,CD --demos-per-task 10 $small --out "$tmp/thesis"
for p in controller options_ignore balance world; do lacks "$tmp/thesis/config" "$p"; done
has "$tmp/thesis/config" "demos expert 10 per task, seed 1"
# each departure's flag: added to thesis, overriding s1
ok train bc --recipe thesis --tasks AC,CD --demos-per-task 10 --blind-controller --n-each 4 $small --out "$tmp/t_blind"
has "$tmp/t_blind/config" "controller blind"
has "$tmp/t_blind/config" "world n_each 4"
lacks "$tmp/t_blind/config" options_ignore
lacks "$tmp/t_blind/config" balance
ok train bc --tasks AC,CD --demos-per-task 10 --balance-options 0 --n-each 1 $small --out "$tmp/s1_mod"
has "$tmp/s1_mod/config" "controller blind"
has "$tmp/s1_mod/config" "options_ignore 1050:1071"
lacks "$tmp/s1_mod/config" balance
lacks "$tmp/s1_mod/config" world
# other tasks than S1/S2's: the thesis's settings by default
ok train bc --tasks make-bed --demos-per-task 10 $small --out "$tmp/bed"
for p in controller options_ignore balance world; do lacks "$tmp/bed/config" "$p"; done
expect 2 "--recipe 'psketch' is not s1 or thesis" train bc --recipe psketch --out "$tmp/x"
# --resume in another world: the config check refuses it
expect 2 "differ" train bc --tasks AC,CD --demos-per-task 10 --balance-options 0 --n-each 4 $small --out "$tmp/s1_mod" --resume

# a file of another world than the one asked for: one line, exit 2
expect 2 "d1.replay is of the world n_each 1, not the n_each 4 that --n-each 4 asks for" \
    train bc --tasks AC,CD --demos "$tmp/d1.replay" --n-each 4 $small --out "$tmp/x"
expect 2 "d.replay is of the world n_each 4, not the n_each 1 that --recipe thesis asks for" \
    train bc --recipe thesis --tasks AC,CD --demos "$tmp/d.replay" $small --out "$tmp/x"
checks=$((checks + 1))
[ ! -e "$tmp/x" ] || fail "a refused run left its folder"
# ... and the file's world when none is asked for
ok train bc --tasks AC,CD --demos "$tmp/d1.replay" $small --out "$tmp/from1"
lacks "$tmp/from1/config" world
ok train bc --tasks AC,CD --demos "$tmp/d.replay" --n-each 4 $small --out "$tmp/from4"
has "$tmp/from4/config" "world n_each 4"
ck=$tmp/from4/best.ckpt
expect 2 "best.ckpt is of the world n_each 4, not the n_each 1 that --n-each 1 asks for" eval options --checkpoint "$ck" --n-each 1 --episodes 1 --demos-per-task 0
expect 2 "best.ckpt is of the world n_each 4, not the n_each 1 that --n-each 1 asks for" watch --checkpoint "$ck" --n-each 1 --headless --out "$tmp/w"
expect 2 "best.ckpt is of the world n_each 4, not the n_each 1 that --n-each 1 asks for" craft run --checkpoint "$ck" --n-each 1 --episodes 1
expect 2 "best.ckpt is of the world n_each 4, not the n_each 1 that --n-each 1 asks for" train ppo --options "$ck" --n-each 1 --task DCA --out "$tmp/p" --device cpu --threads 1
checks=$((checks + 1))
[ ! -e "$tmp/w" ] && [ ! -e "$tmp/p" ] || fail "a refused command wrote its output"
ok eval options --checkpoint "$ck" --n-each 4 --episodes 1 --demos-per-task 0 --device cpu
ok craft run --checkpoint "$ck" --n-each 4 --episodes 1 --device cpu
ok train ppo --options "$ck" --n-each 4 --task DCA --num-envs 2 --num-steps 8 --num-minibatches 2 \
    --total-timesteps 100 --eval-episodes 2 --out "$tmp/p4" --device cpu --threads 1 --quiet
has "$tmp/p4/config" "world n_each 4"
# train ppo without options (flat/oracle): the task's default world
ok train ppo --policy flat --task DCA --hidden 8 --width 8 --num-envs 2 --num-steps 8 --num-minibatches 2 \
    --total-timesteps 100 --eval-episodes 2 --out "$tmp/flat" --device cpu --threads 1 --quiet
has "$tmp/flat/config" "world n_each 4"
ok train ppo --policy flat --task DCA --n-each 1 --hidden 8 --width 8 --num-envs 2 --num-steps 8 --num-minibatches 2 \
    --total-timesteps 100 --eval-episodes 2 --out "$tmp/flat1" --device cpu --threads 1 --quiet
lacks "$tmp/flat1/config" world

echo "agents_recipe_cli: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
