#!/usr/bin/env bash
# Child-Sum on SST's dependency conversion from the command line (issue 25):
# `grove nlp classify train --task sst2 --model childsum --tree-kind
# dependency` on a tiny SST-format task written here (192 sentences "DET
# NOUN is [not] ADJ [.]", the label the adjective's polarity, flipped by
# "not"): a seeded run learns it, the data summary names the conversion,
# the node accuracy counts exactly one labelled node per sentence (the
# root: the other words' maximal projections are neutral, which SST-2
# leaves unlabelled; the constituency trees label more nodes), the run's
# config records it and `classify eval` scores the checkpoint on the same
# conversion; --resume with other trees, and every bad combination of
# --tree-kind, are one-line refusals.
#   test_cli_tree_deps.sh GROVE
set -u
grove=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
checks=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect_err RC PATTERN ARGS...: exit RC and PATTERN in the one stderr line
expect_err() {
    local want_rc=$1 pattern=$2
    shift 2
    checks=$((checks + 1))
    "$grove" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    [ "$rc" -eq "$want_rc" ] || { fail "grove $*: exit $rc, want $want_rc"; cat "$tmp/err"; return; }
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || { fail "grove $*: stderr is not one line"; cat "$tmp/err"; }
    grep -Eq -- "$pattern" "$tmp/err" || fail "grove $*: no /$pattern/ in: $(cat "$tmp/err")"
}

# The task: every combination, split about 2:1:1 by a hash of the position
# (train, dev, test: each with every determiner/negation/full-stop case).
i=0
for det in the a; do
  for noun in movie film plot story; do
    for adj in good great fine bad awful poor; do
      case $adj in good|great|fine) pol=1 ;; *) pol=0 ;; esac
      for neg in 0 1; do
        for dot in 0 1; do
          lab=$(( neg ? 1 - pol : pol ))
          a=$(( pol ? 4 : 0 )); s=$(( lab ? 4 : 0 ))
          if [ "$neg" -eq 1 ]; then
            pred="($s (2 not) ($a $adj))"
          else
            pred="($a $adj)"
          fi
          clause="($s (2 (2 $det) (2 $noun)) ($s (2 is) $pred))"
          if [ "$dot" -eq 1 ]; then
            line="($s $clause (2 .))"
          else
            line=$clause
          fi
          case $(( i * 2654435761 % 97 % 4 )) in
            0|1) echo "$line" >>"$tmp/train.txt" ;;
            2) echo "$line" >>"$tmp/dev.txt" ;;
            3) echo "$line" >>"$tmp/test.txt" ;;
          esac
          i=$((i + 1))
        done
      done
    done
  done
done
n_test=$(wc -l <"$tmp/test.txt")

common=(--task sst2 --model childsum --train "$tmp/train.txt"
        --valid "$tmp/dev.txt" --test "$tmp/test.txt" --emsize 16 --nhid 16
        --batch 12 --lr 0.02 --threads 1 --seed 3)
"$grove" nlp classify train "${common[@]}" --tree-kind dependency \
    --epochs 12 --out "$tmp/run" >"$tmp/out" 2>"$tmp/err"
rc=$?
checks=$((checks + 1))
if [ "$rc" -ne 0 ]; then
    fail "classify train --tree-kind dependency: exit $rc"; cat "$tmp/err"
else
    cat "$tmp/out"
    checks=$((checks + 1))
    grep -q "dependency trees by grove's right-head rule" "$tmp/err" ||
        fail "the data summary does not name the conversion: $(head -1 "$tmp/err")"
    acc=$(sed -n 's/^test accuracy (best.ckpt) \([0-9.]*\) on .*/\1/p' "$tmp/out")
    checks=$((checks + 1))
    awk -v a="${acc:-0}" 'BEGIN { exit !(a >= 0.9) }' ||
        fail "the seeded run did not learn the task: test accuracy '${acc}' < 0.9"
    checks=$((checks + 1))
    grep -q "^test accuracy over all labelled nodes [0-9.]* on $n_test nodes" "$tmp/out" ||
        fail "not one labelled node per test sentence ($n_test): $(grep 'all labelled' "$tmp/out")"
    checks=$((checks + 1))
    grep -q '^negation' "$tmp/out" &&
        fail "the negation analysis (constituency shapes) ran on dependency trees"
    checks=$((checks + 1))
    grep -qx 'trees dependency' "$tmp/run/config" ||
        fail "the run's config has no 'trees dependency' line"
    # eval reads the conversion from the checkpoint
    "$grove" nlp classify eval --checkpoint "$tmp/run/best.ckpt" \
        --train "$tmp/train.txt" --valid "$tmp/dev.txt" \
        --test "$tmp/test.txt" --threads 1 >"$tmp/eout" 2>"$tmp/eerr"
    rc=$?
    checks=$((checks + 1))
    eacc=$(sed -n 's/^sst2 test: accuracy \([0-9.]*\) on .*/\1/p' "$tmp/eout")
    [ "$rc" -eq 0 ] && [ -n "$eacc" ] &&
        awk -v a="$acc" -v b="$eacc" 'BEGIN { exit !(a == b) }' ||
        fail "eval: exit $rc, accuracy '$eacc' vs training's '$acc': $(cat "$tmp/eerr")"
    checks=$((checks + 1))
    grep -q "on $n_test nodes" "$tmp/eout" ||
        fail "eval did not read dependency trees: $(cat "$tmp/eout")"
    # --resume must find the same trees
    expect_err 2 "options differ" nlp classify train --quiet \
        "${common[@]}" --tree-kind constituency --epochs 13 --out "$tmp/run" \
        --resume
fi

# the constituency trees of the same data label more nodes
"$grove" nlp classify train "${common[@]}" --epochs 1 --quiet \
    --out "$tmp/cons" >"$tmp/out" 2>"$tmp/err"
rc=$?
checks=$((checks + 1))
nodes=$(sed -n 's/^test accuracy over all labelled nodes [0-9.]* on \([0-9]*\) nodes/\1/p' "$tmp/out")
[ "$rc" -eq 0 ] && [ "${nodes:-0}" -gt "$n_test" ] ||
    fail "childsum on constituency trees: exit $rc, $nodes labelled test nodes"

# refusals, before any data is read
expect_err 2 "--tree-kind is for --model childsum" nlp classify train \
    --task sst2 --model treelstm --tree-kind dependency --data "$tmp" \
    --out "$tmp/x1"
expect_err 2 "--tree-kind is for --model childsum" nlp classify train \
    --task sst2 --model lstm --tree-kind constituency --data "$tmp" \
    --out "$tmp/x2"
expect_err 2 "--tree-kind dependency is for --task sst2 or sst5" nlp \
    classify train --task logic --model childsum --tree-kind dependency \
    --data "$tmp" --out "$tmp/x3"
expect_err 2 "--tree-kind 'dep' is not constituency or dependency" nlp \
    classify train --task sst2 --model childsum --tree-kind dep \
    --data "$tmp" --out "$tmp/x4"
checks=$((checks + 1))
[ ! -e "$tmp/x1" ] && [ ! -e "$tmp/x3" ] || fail "a refused run left a folder"

echo "nlp_tree_deps_cli: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
