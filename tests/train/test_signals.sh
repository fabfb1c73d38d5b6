#!/usr/bin/env bash
# SIGINT during training, as a user presses Ctrl-C: `grove train bc` and
# `grove nlp lm train` stop at an update (epoch) boundary with last.ckpt
# written, exit 130 and print the command that continues; that command ends
# with the same checkpoints (and metrics, less the columns that measure time
# or accumulate over the cut interval) as a run never interrupted. And a
# diverging LM stops on the non-finite loss, naming where, keeping last.ckpt.
#   test_signals.sh GROVE CKPT_DIGEST
set -u
grove=$1
digest=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# columns of metrics.csv without those named
drop_cols() {
    awk -F, -v drop="$2" 'BEGIN { n = split(drop, d, " "); for (i = 1; i <= n; i++) skip[d[i]] = 1 }
        NR == 1 { for (i = 1; i <= NF; i++) if (!($i in skip)) keep[i] = 1 }
        { s = ""; for (i = 1; i <= NF; i++) if (i in keep) s = s (s == "" ? "" : ",") $i; print s }' "$1"
}

# interrupt NAME ROWS ARGS...: runs grove ARGS in the background, sends
# SIGINT once metrics.csv has ROWS data rows, and checks the exit and the
# message.
interrupt() {
    local name=$1 rows=$2
    shift 2
    "$grove" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
    local pid=$! waited=0
    while [ "$waited" -lt 1200 ]; do
        local n=0
        [ -f "$tmp/$name/metrics.csv" ] && n=$(($(wc -l <"$tmp/$name/metrics.csv") - 1))
        [ "$n" -ge "$rows" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
        waited=$((waited + 1))
    done
    kill -INT "$pid" 2>/dev/null
    wait "$pid"
    local rc=$?
    if [ "$rc" -ne 130 ]; then
        fail "$name: exit $rc after SIGINT, want 130 (the run may have ended first)"
        cat "$tmp/$name.err"
        return 1
    fi
    grep -q "SIGINT: stopped at .*last.ckpt written; continue" "$tmp/$name.err" ||
        fail "$name: no stop message in: $(cat "$tmp/$name.err")"
    grep -q -- "--resume" "$tmp/$name.err" || fail "$name: the message has no --resume"
    [ -f "$tmp/$name/last.ckpt" ] || fail "$name: no last.ckpt after SIGINT"
    return 0
}

same_run() {
    local a=$1 b=$2 drop=$3
    diff <(drop_cols "$tmp/$a/metrics.csv" "$drop") <(drop_cols "$tmp/$b/metrics.csv" "$drop") >/dev/null ||
        fail "$b: metrics.csv differs from the uninterrupted run's"
    for c in best last; do
        diff <("$digest" "$tmp/$a/$c.ckpt" --ignore state-wall) \
             <("$digest" "$tmp/$b/$c.ckpt" --ignore state-wall) >/dev/null ||
            fail "$b: $c.ckpt differs from the uninterrupted run's"
    done
}

bc=(train bc --tasks AC,CD --options 2 --demos-per-task 40 --updates 300
    --batch 16 --hidden 16 --width 16 --eval-every 20 --return-every 0
    --seed 3 --threads 1 --device cpu --quiet)
"$grove" "${bc[@]}" --out "$tmp/bc_full" >/dev/null || fail "bc: the uninterrupted run failed"
if interrupt bc_cut 2 "${bc[@]}" --out "$tmp/bc_cut"; then
    "$grove" "${bc[@]}" --out "$tmp/bc_cut" --resume >/dev/null 2>"$tmp/bc_resume.err" ||
        fail "bc: --resume failed: $(cat "$tmp/bc_resume.err")"
    # train_nll accumulates over the interval the signal cut
    same_run bc_full bc_cut "wall_s train_nll"
fi

mkdir -p "$tmp/corpus"
for s in train valid test; do
    awk -v s=$s 'BEGIN { x = (s == "train") ? 7 : 11; n = (s == "train") ? 300 : 30
        for (i = 0; i < n; i++) { line = ""; for (j = 0; j < 8; j++) { x = (x * 1103 + 12345) % 65536; line = line " w" (x % 40) } print line } }' \
        >"$tmp/corpus/ptb.$s.txt"
done
lm=(nlp lm train --data "$tmp/corpus" --emsize 8 --nhid 12 --nlayers 2
    --chunk-size 4 --epochs 40 --batch 4 --bptt 10 --eval-batch 2 --seed 5
    --threads 1 --device cpu --quiet)
"$grove" "${lm[@]}" --out "$tmp/lm_full" >/dev/null || fail "lm: the uninterrupted run failed"
if interrupt lm_cut 2 "${lm[@]}" --out "$tmp/lm_cut"; then
    "$grove" "${lm[@]}" --out "$tmp/lm_cut" --resume >/dev/null 2>"$tmp/lm_resume.err" ||
        fail "lm: --resume failed: $(cat "$tmp/lm_resume.err")"
    same_run lm_full lm_cut "wall_s tokens_per_s"
fi

# a diverging run: one line naming the epoch, exit 1, last.ckpt kept
"$grove" nlp lm train --data "$tmp/corpus" --emsize 8 --nhid 12 --nlayers 2 \
    --chunk-size 4 --epochs 3 --batch 4 --bptt 10 --eval-batch 2 --lr 1e30 \
    --clip 0 --quiet --out "$tmp/lm_nan" >/dev/null 2>"$tmp/nan.err"
rc=$?
[ "$rc" -eq 1 ] || fail "diverging lm: exit $rc, want 1"
grep -q "non-finite loss (.*) at epoch 1; stopped, .*last.ckpt keeps epoch 0" "$tmp/nan.err" ||
    fail "diverging lm: message: $(cat "$tmp/nan.err")"
[ "$(wc -l <"$tmp/nan.err")" -eq 1 ] || fail "diverging lm: stderr is not one line"
[ -f "$tmp/lm_nan/last.ckpt" ] || fail "diverging lm: last.ckpt is gone"

echo "train signals: $fails failed"
[ "$fails" -eq 0 ]
