#!/usr/bin/env bash
# The render commands end to end, as a user runs them.
#   test_view_cli.sh GROVE RENDER_TOOL FIXTURE_DIR MODE
# MODE:
#   headless   no display at all: plot (golden + errors), replay export
#              (frames, sheets, refusal, errors), headless replay play with
#              scripted keys (screenshots equal the export of the same step),
#              damaged replays, craft play recorded through the writer
#   dummy      SDL's dummy video driver: a real SDL window with the
#              software renderer; screenshots read back from it at scales
#              1, 2 and 3 equal the export (runs under LeakSanitizer too)
#   offscreen  the same with SDL's offscreen driver (EGL)
#   xvfb       the same under xvfb-run (X11); exit 77 when xvfb-run is
#              missing (apt-get install xvfb xauth)
# In the offscreen and xvfb modes, leak detection is off when the build has
# AddressSanitizer: Mesa and libX11, which SDL loads there, keep allocations
# to the end of the process that grove cannot free. Every other ASan check
# stays on, and the headless and dummy modes check grove's own code for
# leaks along the same paths.
set -u
. "$(dirname "$0")/../skip.sh"
grove=$1
tool=$2
fixtures=$3
mode=${4:-headless}
fails=0
checks=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

# expect RC DESC CMD...: runs CMD, checks its exit status; stderr in $tmp/err.
expect() {
    local want=$1 desc=$2
    shift 2
    checks=$((checks + 1))
    "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -ne "$want" ]; then
        fail "$desc: exit $rc, want $want"
        sed 's/^/    /' "$tmp/err" | head -5
        return 1
    fi
    ok "$desc"
    return 0
}

# err_has TEXT: the last command's stderr contains TEXT on its one line.
err_has() {
    checks=$((checks + 1))
    if ! grep -qF -- "$1" "$tmp/err"; then
        fail "stderr lacks '$1': $(head -c 300 "$tmp/err")"
    elif [ "$(grep -cv '^note:' "$tmp/err")" -ne 1 ]; then
        fail "stderr has $(wc -l <"$tmp/err") lines, want one"
    fi
}

same_png() {
    checks=$((checks + 1))
    if "$tool" pngcmp "$1" "$2"; then
        ok "$(basename "$1") == $(basename "$2")"
    else
        fail "$1 differs from $2"
    fi
}

# The replay every test watches: 3 episodes with option data.
replay=$tmp/r.replay
"$tool" make-replay "$replay" || { echo "cannot make the test replay"; exit 1; }
"$grove" replay export "$replay" --out "$tmp/frames" --quiet >/dev/null ||
    { echo "export failed"; exit 1; }
# Episode lengths, from the exported names (ep0001_t0017.png: the last).
last_t() { ls "$tmp/frames" | sed -n "s/^ep000$1_t0*\([0-9][0-9]*\)\.png$/\1/p" | sort -n | tail -1; }
len0=$(last_t 0)
len1=$(last_t 1)
if [ "$len0" -lt 7 ]; then
    echo "the test replay's first episode is too short ($len0 steps)"
    exit 1
fi

# play_shots NAME ENV... -- ARGS...: replay play with scripted keys; the
# screenshots land in $tmp/NAME.
play_keys="space,right,right,right,right,right,right,right,left,left,s,n,end,s,p,home,s,minus,plus,q"
check_play_shots() {
    local dir=$1
    same_png "$dir/r-ep0000-t0005.png" "$tmp/frames/ep0000_t0005.png"
    same_png "$dir/r-ep0001-t$(printf %04d "$len1").png" \
        "$tmp/frames/ep0001_t$(printf %04d "$len1").png"
    same_png "$dir/r-ep0000-t0000.png" "$tmp/frames/ep0000_t0000.png"
}

case "$mode" in
headless)
    unset DISPLAY WAYLAND_DISPLAY SDL_VIDEODRIVER

    # ---- plot ---------------------------------------------------------------
    expect 0 "plot a known CSV" "$grove" plot "$fixtures/curve.csv" \
        --x global_step --y charts/episodic_return,losses/value_loss \
        --out "$tmp/plot.png"
    same_png "$tmp/plot.png" "$fixtures/plot_golden.png"
    cp "$tmp/plot.png" "$tmp/plot.before"
    expect 1 "plot refuses to overwrite" "$grove" plot "$fixtures/curve.csv" \
        --x global_step --y losses/value_loss --out "$tmp/plot.png"
    err_has "already exists (use --force to overwrite)"
    cmp -s "$tmp/plot.png" "$tmp/plot.before" || fail "plot.png was changed"
    expect 0 "plot --force overwrites" "$grove" plot "$fixtures/curve.csv" \
        --x global_step --y losses/value_loss --out "$tmp/plot.png" --force
    expect 1 "plot: missing column" "$grove" plot "$fixtures/curve.csv" \
        --x global_step --y losses/nope --out "$tmp/p2.png"
    err_has "no column 'losses/nope' (columns: 'global_step'"
    expect 1 "plot: non-numeric cell" "$grove" plot "$fixtures/curve.csv" \
        --x global_step --y phase --out "$tmp/p2.png"
    err_has "curve.csv:2: column 'phase': 'bc' is not a number"
    : >"$tmp/empty.csv"
    expect 1 "plot: empty CSV" "$grove" plot "$tmp/empty.csv" --x a --y b \
        --out "$tmp/p2.png"
    err_has "empty.csv is empty"
    expect 1 "plot: unwritable output" "$grove" plot "$fixtures/curve.csv" \
        --x global_step --y losses/value_loss --out "$tmp/plot.png/x.png"
    err_has "cannot write $tmp/plot.png/x.png: Not a directory"
    expect 2 "plot: --y missing" "$grove" plot "$fixtures/curve.csv" --x a \
        --out "$tmp/p2.png"
    err_has "--help"
    [ -e "$tmp/p2.png" ] && fail "a failed plot left p2.png"

    # ---- export ---------------------------------------------------------------
    n=$(ls "$tmp/frames" | wc -l)
    len2=$(last_t 2)
    checks=$((checks + 1))
    [ "$n" -eq $((len0 + len1 + len2 + 3)) ] || fail "export wrote $n files"
    ls -l --time-style=full-iso "$tmp/frames" >"$tmp/listing.before"
    expect 1 "export refuses existing files" "$grove" replay export \
        "$replay" --out "$tmp/frames" --quiet
    err_has "already exists (use --force to overwrite); nothing was written"
    ls -l --time-style=full-iso "$tmp/frames" >"$tmp/listing.after"
    cmp -s "$tmp/listing.before" "$tmp/listing.after" ||
        fail "a refused export touched files"
    expect 0 "export --force --every 4 --episode 1" "$grove" replay export \
        "$replay" --out "$tmp/frames" --every 4 --episode 1 --force --quiet
    grep -q "wrote $(( (len1 + 3) / 4 + 1 )) PNG files" \
        "$tmp/out" || fail "export --every 4: $(cat "$tmp/out")"
    expect 0 "export --sheet --scale 2" "$grove" replay export "$replay" \
        --out "$tmp/sheets" --sheet --every 3 --scale 2 --quiet
    checks=$((checks + 1))
    [ "$(ls "$tmp/sheets")" = "$(printf 'ep0000_sheet.png\nep0001_sheet.png\nep0002_sheet.png')" ] ||
        fail "sheets: $(ls "$tmp/sheets")"
    expect 1 "export into a file" "$grove" replay export "$replay" \
        --out "$tmp/plot.png" --quiet
    err_has "$tmp/plot.png exists and is not a folder"
    expect 1 "export --episode out of range" "$grove" replay export \
        "$replay" --out "$tmp/x" --episode 9 --quiet
    err_has "has episodes 0..2"
    expect 2 "export --every 0" "$grove" replay export "$replay" \
        --out "$tmp/x" --every 0

    # ---- headless play --------------------------------------------------------
    expect 0 "headless replay play with keys" "$grove" replay play "$replay" \
        --keys "$play_keys" --shot-dir "$tmp/shots"
    grep -q "running headless" "$tmp/err" || fail "no note about headless"
    check_play_shots "$tmp/shots"
    expect 0 "headless play runs to the end and stops" "$grove" replay play \
        "$replay" --speed 60
    expect 0 "headless play --frames 3" "$grove" replay play "$replay" \
        --frames 3 --headless
    expect 2 "play: unknown key in the script" "$grove" replay play \
        "$replay" --keys space,jump --headless
    err_has "unknown key 'jump'"

    # ---- damaged replays ------------------------------------------------------
    size=$(stat -c %s "$replay")
    head -c $((size / 2)) "$replay" >"$tmp/cut.replay"
    expect 1 "play a truncated replay" "$grove" replay play "$tmp/cut.replay" \
        --headless --frames 5
    err_has "truncated at byte"
    expect 1 "export a truncated replay" "$grove" replay export \
        "$tmp/cut.replay" --out "$tmp/cut" --quiet
    err_has "truncated at byte"
    expect 0 "play --recover a truncated replay" "$grove" replay play \
        "$tmp/cut.replay" --headless --recover
    cp "$replay" "$tmp/flip.replay"
    printf '\xc1' | dd of="$tmp/flip.replay" bs=1 seek=$((size / 3)) \
        conv=notrunc 2>/dev/null
    expect 1 "play a corrupted replay" "$grove" replay play \
        "$tmp/flip.replay" --headless --frames 5
    err_has "flip.replay"
    head -c 100 /dev/urandom >"$tmp/noise.replay"
    expect 1 "play random bytes" "$grove" replay play "$tmp/noise.replay" \
        --headless
    expect 1 "play a missing file" "$grove" replay play "$tmp/missing.replay" \
        --headless
    err_has "missing.replay"

    # ---- craft play, recorded ---------------------------------------------------
    keys=$("$tool" expert-keys 5 AC) || fail "expert-keys"
    expect 0 "craft play: the expert's keys, recorded" "$grove" craft play \
        --tasks AC --seed 5 --headless --keys "$keys,space,s" \
        --record "$tmp/human.replay" --shot-dir "$tmp/cshots"
    grep -q "recorded 1 episode to" "$tmp/out" || fail "craft play: $(cat "$tmp/out")"
    checks=$((checks + 1))
    summary=$("$tool" summary "$tmp/human.replay")
    [ "$summary" = "agent human episodes 1 successes 1 steps $(echo "$keys" | tr ',' '\n' | wc -l)" ] ||
        fail "recorded replay: $summary"
    checks=$((checks + 1))
    [ -n "$(ls "$tmp/cshots" 2>/dev/null)" ] || fail "craft play screenshot"
    expect 1 "craft play refuses to overwrite the record" "$grove" craft play \
        --tasks AC --seed 5 --headless --keys up --record "$tmp/human.replay"
    err_has "already exists"
    expect 0 "craft play: an unfinished episode is not recorded" \
        "$grove" craft play --tasks CD --headless --keys up,left,q \
        --record "$tmp/none.replay"
    checks=$((checks + 1))
    [ -e "$tmp/none.replay" ] && fail "an empty record file was written"
    expect 2 "craft play: bad task" "$grove" craft play --tasks AX --headless
    err_has "--help"
    ;;

dummy | offscreen)
    unset DISPLAY WAYLAND_DISPLAY
    export SDL_VIDEODRIVER=$mode
    if [ "$mode" = offscreen ]; then
        export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
    fi
    if ! "$grove" replay play "$replay" --frames 1 >"$tmp/out" 2>"$tmp/err"; then
        test_skip - "$fails" "SDL's $mode video driver is not available: $(cat "$tmp/err")"
    fi
    for scale in 1 2 3; do
        expect 0 "$mode window at scale $scale" "$grove" replay play \
            "$replay" --scale "$scale" --keys "$play_keys" \
            --shot-dir "$tmp/shots$scale" --frames 100
        check_play_shots "$tmp/shots$scale"
    done
    keys=$("$tool" expert-keys 5 AC)
    expect 0 "$mode craft play" "$grove" craft play --tasks AC --seed 5 \
        --keys "$keys,q" --record "$tmp/h.replay" --frames 200
    grep -q "recorded 1 episode" "$tmp/out" || fail "$mode craft play"
    ;;

xvfb)
    if ! command -v xvfb-run >/dev/null 2>&1; then
        test_skip - "$fails" "xvfb-run is not installed (apt-get install xvfb xauth)"
    fi
    unset SDL_VIDEODRIVER WAYLAND_DISPLAY
    export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
    expect 0 "replay play under Xvfb" xvfb-run -a -s "-screen 0 1280x1024x24" \
        "$grove" replay play "$replay" --keys "$play_keys" \
        --shot-dir "$tmp/xshots" --frames 100
    check_play_shots "$tmp/xshots"
    expect 0 "replay play under Xvfb at scale 2, quit by q" xvfb-run -a \
        -s "-screen 0 1280x1024x24" "$grove" replay play "$replay" --scale 2 \
        --keys "space,right,s,q" --shot-dir "$tmp/x2"
    same_png "$tmp/x2/r-ep0000-t0001.png" "$tmp/frames/ep0000_t0001.png"
    ;;
*)
    echo "unknown mode $mode"
    exit 2
    ;;
esac

echo "test_view_cli $mode: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
