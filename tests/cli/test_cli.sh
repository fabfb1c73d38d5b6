#!/usr/bin/env bash
# The grove command line as a user meets it: dispatch, --help, bad input.
#   test_cli.sh PATH/TO/grove
set -u
grove=$1
fails=0
checks=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect_usage_error ARGS...: exit 2, exactly one line on stderr naming
# --help, nothing on stdout.
expect_usage_error() {
    checks=$((checks + 1))
    "$grove" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    lines=$(wc -l <"$tmp/err")
    if [ "$rc" -ne 2 ]; then fail "grove $*: exit $rc, want 2"; fi
    if [ "$lines" -ne 1 ]; then fail "grove $*: $lines stderr lines, want 1"; cat "$tmp/err"; fi
    if [ -s "$tmp/out" ]; then fail "grove $*: printed on stdout"; fi
    if ! grep -q -- "--help" "$tmp/err"; then fail "grove $*: no pointer to --help"; fi
    echo "ok: grove $* -> $(cat "$tmp/err")"
}

expect_usage_error nosuchcmd
expect_usage_error version --nosuchflag
expect_usage_error help nosuchcmd
expect_usage_error --nosuchflag
expect_usage_error version extra-argument

# grove --help lists every command, and each command has --help.
checks=$((checks + 1))
"$grove" --help >"$tmp/help" 2>&1 || fail "grove --help exited $?"
grep -q "Usage: grove COMMAND" "$tmp/help" || fail "grove --help has no usage line"
commands=$(sed -n '/^Commands:/,/^$/p' "$tmp/help" | sed -n 's/^  \([a-z][a-z0-9 ]*[a-z0-9]\)  .*/\1/p' | sed 's/ *$//' | grep -v '^help COMMAND$')
# every command of the overview (nlp seq2seq's names have a digit)
checks=$((checks + 1))
[ "$(printf '%s\n' "$commands" | grep -c '^nlp seq2seq ')" -eq 3 ] ||
    fail "grove --help: the nlp seq2seq commands are not all found: $commands"
[ -n "$commands" ] || fail "grove --help lists no commands"
# Every command has --help, the same as grove help CMD; and (issue 21 §2)
# --quiet accepted and listed, the option column never runs into the help
# text, no line wider than 80 columns (the example commands too: they
# continue with a backslash),
# "(required)" rows refused when missing, and the help ends with an example
# of the command itself.
while IFS= read -r cmd; do
    checks=$((checks + 1))
    # shellcheck disable=SC2086
    if ! "$grove" $cmd --quiet --help >"$tmp/c" 2>&1; then fail "grove $cmd --quiet --help failed (--quiet refused?)"; fi
    grep -q "^Usage: grove $cmd" "$tmp/c" || fail "grove $cmd --help has no usage line"
    # shellcheck disable=SC2086
    "$grove" help $cmd >"$tmp/h" 2>&1 || fail "grove help $cmd failed"
    cmp -s "$tmp/c" "$tmp/h" || fail "grove help $cmd differs from --help"
    grep -q "^  --quiet  " "$tmp/c" || fail "grove $cmd --help: no --quiet"
    cp "$tmp/c" "$tmp/help_${cmd// /_}"
    # an option row: "  --name ARG" then two spaces or more, or nothing
    bad=$(grep -E '^  --?[a-z]' "$tmp/c" | grep -Ev '^  (-h, )?--[a-z0-9-]+( [^ ]+)?(  +[^ ].*)?$')
    [ -z "$bad" ] || fail "grove $cmd --help: columns run together: $bad"
    wide=$(LC_ALL=C.UTF-8 awk 'length($0) > 80' "$tmp/c")
    [ -z "$wide" ] || fail "grove $cmd --help: lines over 80 columns: $wide"
    # the text from the last "Example" on names the command; no prose
    # sentence follows it (a line starting with a capital, or a last line
    # ending with a full stop)
    tail=$(awk '/Examples?( \(.*\))?:/ {buf = ""; on = 1} on {buf = buf $0 "\n"} END {printf "%s", buf}' "$tmp/c" |
        sed 's/.*Examples\{0,1\}\( ([^)]*)\)\{0,1\}://')
    if [ -z "$tail" ]; then
        fail "grove $cmd --help does not end with an example"
    else
        printf '%s' "$tail" | tr '\n' ' ' | grep -qE "grove $cmd( |\$)" || fail "grove $cmd: example does not run grove $cmd: $tail"
        printf '%s\n' "$tail" | sed 1d | grep -q '^[A-Z]' && fail "grove $cmd: prose after the example"
        printf '%s\n' "$tail" | grep -v '^ *$' | tail -1 | grep -q '\.$' && fail "grove $cmd: help ends with a sentence, not an example"
    fi
    # a row marked (required): the bare command is one usage line naming
    # a required flag, before any work
    if grep -q "(required)" "$tmp/c"; then
        checks=$((checks + 1))
        # shellcheck disable=SC2086
        "$grove" $cmd >"$tmp/o" 2>"$tmp/e" </dev/null; rc=$?
        [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/e")" -eq 1 ] && grep -q -- "--[a-z-]* [A-Za-z0-9.|]* is required" "$tmp/e" ||
            fail "grove $cmd without its required flags: exit $rc, $(cat "$tmp/e")"
    fi
done <<<"$commands"


# The --out of these commands is required, and --help says so.
for cmd in "craft demos" "train bc" "replay export" "plot" "train ppo" "nlp lm train"; do
    checks=$((checks + 1))
    grep -q '^  --out PATH .*(required)$' "$tmp/help_${cmd// /_}" || fail "grove $cmd --help: --out not marked (required)"
done
for row in "nlp lm train:--data DIR" "nlp lm eval:--data DIR" "nlp corpus:--data DIR" "nlp parse:--trees PATH" \
           "nlp syneval:--data FILE" "nlp data:--data PATH" "eval options:--checkpoint FILE" "watch:--checkpoint FILE" \
           "plot:--x COL"; do
    checks=$((checks + 1))
    cmd=${row%%:*}; flag=${row#*:}
    awk -v f="  $flag " 'on && /^  -/ {exit} index($0, f) == 1 {on = 1} on {print}' "$tmp/help_${cmd// /_}" |
        grep -q "(required)" || fail "grove $cmd --help: $flag not marked (required)"
done
# a required flag given: the next one missing is named (no defaults guessed)
expect_usage_error nlp lm eval --data somewhere
grep -q -- "--checkpoint FILE is required" "$tmp/err" || fail "lm eval: $(cat "$tmp/err")"
expect_usage_error craft demos --tasks AC
grep -q -- "--out PATH is required" "$tmp/err" || fail "craft demos: $(cat "$tmp/err")"

# A flag given twice is an error naming it (common flags too).
expect_usage_error craft run --episodes 1 --episodes 2
grep -q -- "--episodes is given twice" "$tmp/err" || fail "twice: $(cat "$tmp/err")"
expect_usage_error craft run --seed 1 --quiet --seed 1
grep -q -- "--seed is given twice" "$tmp/err" || fail "twice: $(cat "$tmp/err")"
expect_usage_error version --quiet --quiet
# Out-of-range numbers say the range.
expect_usage_error craft run --episodes 99999999999999999999
grep -q -- "--episodes 99999999999999999999 is out of range (0\.\.18446744073709551615)" "$tmp/err" ||
    fail "u64 range: $(cat "$tmp/err")"
expect_usage_error craft run --n-each 99999999999
grep -q -- "--n-each 99999999999 is out of range (-2147483647\.\.2147483647)" "$tmp/err" ||
    fail "int range: $(cat "$tmp/err")"
expect_usage_error eval options --checkpoint x --episodes -99999999999
grep -q "out of range" "$tmp/err" || fail "negative int range: $(cat "$tmp/err")"
expect_usage_error train bc --out "$tmp/x" --lr 1e999
grep -q -- "--lr 1e999 is out of range" "$tmp/err" || fail "double range: $(cat "$tmp/err")"
[ ! -e "$tmp/x" ] || fail "a refused command line created its --out"
expect_usage_error craft run --episodes 12x
grep -q "expects a non-negative integer, got '12x'" "$tmp/err" || fail "not a number: $(cat "$tmp/err")"

# One name across the benchmarks (issue 21 §2): every bench that runs a
# PyTorch baseline skips it with --no-baseline; the old --no-torch is
# refused with a line naming the new one, before any work.
while IFS= read -r cmd; do
    case $cmd in bench\ *) ;; *) continue ;; esac
    h="$tmp/help_${cmd// /_}"
    grep -qi "pytorch\|torch" "$h" || continue
    checks=$((checks + 1))
    grep -q '^  --no-baseline ' "$h" || fail "grove $cmd --help: no --no-baseline"
    grep -q -- '--no-torch' "$h" && fail "grove $cmd --help still names --no-torch"
    # shellcheck disable=SC2086
    expect_usage_error $cmd --no-torch
    grep -q "'--no-torch' is now '--no-baseline'" "$tmp/err" || fail "$cmd --no-torch: $(cat "$tmp/err")"
done <<<"$commands"
expect_usage_error version --no-torch
grep -q "unknown option '--no-torch'" "$tmp/err" || fail "version --no-torch: $(cat "$tmp/err")"

# grove help: groups of several words, and --help anywhere after it.
checks=$((checks + 1))
"$grove" help nlp lm >"$tmp/g" 2>"$tmp/e" || fail "grove help nlp lm exited $?"
head -1 "$tmp/g" | grep -q "^Usage: grove nlp lm SUBCOMMAND" || fail "grove help nlp lm: $(head -1 "$tmp/g")"
[ "$(grep -c '^  nlp ' "$tmp/g")" -eq "$(grep -c '^  nlp lm ' "$tmp/g")" ] && grep -q '^  nlp lm train ' "$tmp/g" ||
    fail "grove help nlp lm lists other commands: $(cat "$tmp/g")"
[ -s "$tmp/e" ] && fail "grove help nlp lm wrote on stderr"
checks=$((checks + 1))
"$grove" help --help >"$tmp/g" 2>&1 || fail "grove help --help exited $?"
"$grove" --help >"$tmp/g2" 2>&1
cmp -s "$tmp/g" "$tmp/g2" || fail "grove help --help is not the overview"
checks=$((checks + 1))
"$grove" help nlp lm train --help >"$tmp/g" 2>&1 || fail "grove help nlp lm train --help exited $?"
"$grove" nlp lm train --help >"$tmp/g2" 2>&1
cmp -s "$tmp/g" "$tmp/g2" || fail "grove help nlp lm train --help differs from --help"
checks=$((checks + 1))
wide=$(LC_ALL=C.UTF-8 awk 'length($0) > 80' "$tmp/help")
[ -z "$wide" ] || fail "grove --help: lines over 80 columns: $wide"
# grove nlp tasks, the other page of prose a user reads, fits 80 columns
# too (the first check: its text came out at all).
checks=$((checks + 1))
"$grove" nlp tasks >"$tmp/t" 2>&1 || fail "grove nlp tasks exited $?"
[ "$(grep -c '^  status: ' "$tmp/t")" -ge 8 ] || fail "grove nlp tasks: $(cat "$tmp/t")"
wide=$(LC_ALL=C.UTF-8 awk 'length($0) > 80' "$tmp/t")
[ -z "$wide" ] || fail "grove nlp tasks: lines over 80 columns: $wide"

checks=$((checks + 1))
"$grove" version >"$tmp/v" 2>&1 || fail "grove version exited $?"
grep -q "^grove [0-9]" "$tmp/v" || fail "grove version: no version line"
grep -q "^cuda:" "$tmp/v" || fail "grove version: no cuda line"
grep -q "^gpus: *[0-9]* visible" "$tmp/v" || fail "grove version: no gpu count"

checks=$((checks + 1))
"$grove" >/dev/null 2>"$tmp/e"; rc=$?
[ "$rc" -eq 2 ] || fail "grove with no command: exit $rc, want 2"

echo "cli: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
