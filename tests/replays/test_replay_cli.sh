#!/usr/bin/env bash
# The replay commands as a user meets them:
#   test_replay_cli.sh PATH/TO/grove
# craft demos (summary, --force), replay info / verify / dump (every
# option), a truncated file (error, then --recover), a damaged file
# (verify exits 1 naming a byte offset), bad command lines (exit 2).
set -u
grove=$1
fails=0
checks=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
check() { checks=$((checks + 1)); }

# run EXPECTED_RC ARGS...: runs grove, output in $tmp/out and $tmp/err
run() {
    local want=$1; shift
    check
    "$grove" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -ne "$want" ]; then
        fail "grove $*: exit $rc, want $want"; cat "$tmp/err"
    fi
}
one_line_err() {
    check
    local n; n=$(wc -l <"$tmp/err")
    [ "$n" -eq 1 ] || { fail "$1: $n stderr lines, want 1"; cat "$tmp/err"; }
}

f=$tmp/d.replay
run 0 craft demos --tasks AC,CD --episodes 20 --seed 5 --out "$f" --quiet
grep -q '^AC  *20 ' "$tmp/out" || fail "demos summary lacks AC row"
grep -q '^CD  *20 ' "$tmp/out" || fail "demos summary lacks CD row"
grep -q '^total  *40 .*100.0%' "$tmp/out" || fail "demos: success not 100%"
steps=$(awk '$1 == "total" {print $3}' "$tmp/out")
cp "$f" "$tmp/first.replay"

run 1 craft demos --tasks AC,CD --episodes 20 --seed 5 --out "$f" --quiet
one_line_err "demos without --force"
grep -q -- "--force" "$tmp/err" || fail "no --force hint"
run 0 craft demos --tasks AC,CD --episodes 20 --seed 5 --out "$f" --quiet --force
# same seed, same demonstrations (only the header's time may differ)
"$grove" replay dump "$f" --json >"$tmp/a" 2>/dev/null
"$grove" replay dump "$tmp/first.replay" --json >"$tmp/b" 2>/dev/null
check; cmp -s "$tmp/a" "$tmp/b" || fail "demos are not deterministic"

run 0 replay info "$f"
grep -q '^status: *complete, CRC-32 ok' "$tmp/out" || fail "info: not complete"
grep -q '^agent: *expert' "$tmp/out" || fail "info: agent"
grep -q "^episodes: *40, steps $steps" "$tmp/out" || fail "info: counts"
grep -q '^AC  *20 .*100.0%' "$tmp/out" || fail "info: AC row"

run 0 replay verify "$f"
grep -q "ok: 40 episodes, $steps steps, 40 keyframe hashes" "$tmp/out" ||
    fail "verify summary: $(cat "$tmp/out")"

run 0 replay dump "$f"
check; [ "$(wc -l <"$tmp/out")" -eq "$steps" ] || fail "dump: not one line per step"
check; [ ! -s "$tmp/err" ] || fail "dump wrote on stderr"
run 0 replay dump "$f" --episode 3 --json
check; [ "$(grep -vc '"episode":3,' "$tmp/out")" -eq 0 ] || fail "dump --episode 3 has other episodes"
check; head -1 "$tmp/out" | grep -q '^{"episode":3,"t":0,"a":[0-4],"r":0,"d":false,"tr":false,"s":0}$' ||
    fail "dump --json line: $(head -1 "$tmp/out")"
check; tail -1 "$tmp/out" | grep -q '"r":1,"d":true,"tr":false,"s":1}$' ||
    fail "dump --json last line: $(tail -1 "$tmp/out")"
run 0 replay dump "$f" --episode 3 --json --obs
check; grep -q '"obs":\[\[' "$tmp/out" || fail "dump --obs: no obs"
# 4 direction one-hot indices 1071..1074: exactly one per observation
check; [ "$(grep -o '\[107[1-4],1\]' "$tmp/out" | wc -l)" -eq "$(wc -l <"$tmp/out")" ] ||
    fail "dump --obs: direction one-hot"
run 0 replay dump "$f" --state --json
check; [ "$(wc -l <"$tmp/out")" -eq 40 ] || fail "dump --state: one line per keyframe"
check; head -1 "$tmp/out" | grep -q '^{"episode":0,"t":0,"hash":[0-9]*,"state":\[10,10,\[1,1,' ||
    fail "dump --state line: $(head -1 "$tmp/out")"
run 1 replay dump "$f" --episode 99
one_line_err "dump --episode 99"

# truncated: an error naming the byte, then --recover
size=$(stat -c %s "$f")
head -c $((size / 2)) "$f" >"$tmp/cut.replay"
run 1 replay info "$tmp/cut.replay"
one_line_err "info on a cut file"
grep -q 'truncated at byte [0-9]' "$tmp/err" || fail "cut: $(cat "$tmp/err")"
run 0 replay info "$tmp/cut.replay" --recover
grep -q '^status: *truncated at byte [0-9]*; [0-9]* complete episodes recovered' "$tmp/out" ||
    fail "recover: $(cat "$tmp/out")"
run 0 replay dump "$tmp/cut.replay" --recover
run 1 replay verify "$tmp/cut.replay"
one_line_err "verify on a cut file"
# the message names commands that read the complete episodes, and each of
# them takes --recover (issue 21 §2: verify itself does not)
check
named=$(grep -o 'grove replay [a-z, ]* or [a-z]* --recover' "$tmp/err")
[ -n "$named" ] || fail "truncated message names no command: $(cat "$tmp/err")"
for sub in $(printf '%s' "$named" | sed 's/^grove replay //; s/ --recover$//; s/,//g; s/ or / /'); do
    case $sub in
    export) run 0 replay export "$tmp/cut.replay" --recover --sheet --out "$tmp/cutx" --quiet ;;
    play) SDL_VIDEODRIVER=dummy run 0 replay play "$tmp/cut.replay" --recover --headless --frames 1 --shot-dir "$tmp/cuts" ;;
    *) run 0 replay "$sub" "$tmp/cut.replay" --recover ;;
    esac
done
run 2 replay verify "$tmp/cut.replay" --recover

# one flipped byte in the middle: verify exits 1 and names an offset
cp "$f" "$tmp/bad.replay"
off=$((size / 3))
byte=$(od -An -tu1 -j "$off" -N1 "$f" | tr -d ' ')
printf "$(printf '\\%03o' $((byte ^ 0x10)))" |
    dd of="$tmp/bad.replay" bs=1 seek="$off" conv=notrunc 2>/dev/null
run 1 replay verify "$tmp/bad.replay"
one_line_err "verify of a damaged file"
grep -q 'byte [0-9]' "$tmp/err" || fail "damaged: $(cat "$tmp/err")"

# craft run --record: a random agent's episodes re-simulate too
run 0 craft run --agent random --tasks AC,CD --episodes 10 --record "$tmp/r.replay" --quiet
grep -q '^recorded ' "$tmp/out" || fail "craft run --record: no 'recorded' line"
run 0 replay verify "$tmp/r.replay"
grep -q 'ok: 20 episodes' "$tmp/out" || fail "craft run --record: $(cat "$tmp/out")"
run 1 craft run --agent random --tasks AC --episodes 1 --record "$tmp/r.replay" --quiet
one_line_err "craft run --record without --force"

run 1 replay verify "$tmp/nosuch.replay"
one_line_err "verify of a missing file"

# bad command lines
run 2 craft demos --tasks AC
run 2 craft demos --tasks AC,XYZ --out "$tmp/x.replay"
run 2 replay dump "$f" --obs --state
run 2 replay info
run 2 replay verify "$f" extra

echo "replays_cli: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
