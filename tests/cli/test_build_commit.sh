#!/usr/bin/env bash
# cli/build_commit.cmake, the build-time step behind `grove version`'s
# commit, in a scratch git repository: it names the commit, adds -dirty for
# uncommitted changes, follows a new commit, says "unknown" outside git,
# and leaves the header untouched (same mtime) when nothing changed, so an
# unchanged tree recompiles nothing.
#   test_build_commit.sh PATH/TO/build_commit.cmake [CMAKE]
set -u
script=$1
cmake=${2:-cmake}
fails=0
checks=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

repo=$tmp/repo
out=$tmp/build_commit.h
gen() { "$cmake" -DSOURCE_DIR="$1" -DOUTPUT="$out" -P "$script" || fail "cmake -P exited $?"; }
want() { # want DESCRIBE WHAT
    checks=$((checks + 1))
    if grep -qx "#define GROVE_GIT_DESCRIBE \"$1\"" "$out"; then
        echo "ok: $2 -> $1"
    else
        fail "$2: want \"$1\", header says: $(grep GROVE_GIT_DESCRIBE "$out")"
    fi
}
g() { git -C "$repo" -c user.name=t -c user.email=t@t "$@" >/dev/null 2>&1; }

mkdir -p "$repo"
g init -q
echo one >"$repo/f"
g add f
g commit -qm one
gen "$repo"
want "$(git -C "$repo" rev-parse --short HEAD)" "first commit"

stamp=$(stat -c %y "$out")
sleep 1
gen "$repo"
checks=$((checks + 1))
[ "$(stat -c %y "$out")" = "$stamp" ] || fail "unchanged commit rewrote the header"

echo two >"$repo/f"
gen "$repo"
want "$(git -C "$repo" rev-parse --short HEAD)-dirty" "uncommitted change"

g commit -qam two
gen "$repo"
want "$(git -C "$repo" rev-parse --short HEAD)" "second commit"

mkdir -p "$tmp/plain"
gen "$tmp/plain"
want "unknown" "not a git checkout"

echo "build_commit: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
