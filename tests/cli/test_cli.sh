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
commands=$(sed -n '/^Commands:/,/^$/p' "$tmp/help" | sed -n 's/^  \([a-z][a-z ]*[a-z]\)  .*/\1/p' | sed 's/ *$//' | grep -v '^help COMMAND$')
[ -n "$commands" ] || fail "grove --help lists no commands"
while IFS= read -r cmd; do
    checks=$((checks + 1))
    # shellcheck disable=SC2086
    if ! "$grove" $cmd --help >"$tmp/c" 2>&1; then fail "grove $cmd --help failed"; fi
    grep -q "^Usage: grove $cmd" "$tmp/c" || fail "grove $cmd --help has no usage line"
    # shellcheck disable=SC2086
    "$grove" help $cmd >"$tmp/h" 2>&1 || fail "grove help $cmd failed"
    cmp -s "$tmp/c" "$tmp/h" || fail "grove help $cmd differs from --help"
done <<<"$commands"

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
