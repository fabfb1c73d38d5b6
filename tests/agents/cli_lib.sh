# tests/agents/cli_lib.sh — what the agents' command-line tests share
# (sourced after setting grove=PATH/TO/grove): a temporary folder $tmp
# removed on exit, the counters $checks and $fails, and
#   fail MESSAGE            count a failure and say it
#   ok ARGS...              grove ARGS must exit 0
#   expect EXIT PATTERN ARGS...
#                           grove ARGS must exit EXIT with one stderr line
#                           matching PATTERN
# Output of the last command is in $tmp/out and $tmp/err.
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

expect() {
    local want=$1 pat=$2
    shift 2
    checks=$((checks + 1))
    "$grove" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    [ "$rc" -eq "$want" ] || fail "grove $*: exit $rc, want $want"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || { fail "grove $*: not one stderr line"; cat "$tmp/err"; }
    grep -q -- "$pat" "$tmp/err" || fail "grove $*: stderr lacks '$pat': $(cat "$tmp/err")"
}
