#!/usr/bin/env bash
# grove nlp data | listops generate | logic generate as a user meets them:
# generated files the readers accept, the same bytes for the same seed,
# outputs never overwritten without --force, one-line errors with exit 2
# (command line) or 1 (bad data), and the summaries of the released data.
#   test_cli_nlp_data.sh PATH/TO/grove SHARED_DATA_DIR logic|listops|sst
set -u
grove=$1
data=$2
part=$3
fails=0
checks=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect RC PATTERN ARGS...: exit status RC and PATTERN (grep -E) in stdout
# (RC 0) or in the single stderr line (RC != 0).
expect() {
    local want_rc=$1 pattern=$2
    shift 2
    checks=$((checks + 1))
    "$grove" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -ne "$want_rc" ]; then
        fail "grove $*: exit $rc, want $want_rc"; cat "$tmp/err"; return
    fi
    if [ "$want_rc" -eq 0 ]; then
        grep -Eq -- "$pattern" "$tmp/out" || { fail "grove $*: no /$pattern/ in stdout"; cat "$tmp/out"; }
    else
        [ "$(wc -l <"$tmp/err")" -eq 1 ] || { fail "grove $*: stderr is not one line"; cat "$tmp/err"; }
        [ -s "$tmp/out" ] && fail "grove $*: printed on stdout"
        grep -Eq -- "$pattern" "$tmp/err" || { fail "grove $*: no /$pattern/ in: $(cat "$tmp/err")"; }
    fi
}

# run ARGS...: must exit 0; its stdout is kept for has PATTERN (one run,
# several checks: the real data is read once).
run() {
    checks=$((checks + 1))
    "$grove" "$@" >"$tmp/kept" 2>"$tmp/err" || { fail "grove $*: exit $?"; cat "$tmp/err"; }
}
has() { checks=$((checks + 1)); grep -Eq -- "$1" "$tmp/kept" || { fail "no /$1/ in:"; cat "$tmp/kept"; }; }

same() { checks=$((checks + 1)); cmp -s "$1" "$2" || fail "$1 and $2 differ"; }
differ() { checks=$((checks + 1)); cmp -s "$1" "$2" && fail "$1 and $2 are the same"; }

case $part in
logic)
    expect 0 "^logic +logical inference" nlp tasks
    expect 0 "grove nlp logic generate" nlp tasks
    expect 0 "wrote 2,000 distinct pairs with k in 1-12" nlp logic generate --n 2000 --seed 4 --out "$tmp/a.tsv"
    expect 0 "pairs per k: 1:[0-9]+ 2:" nlp logic generate --n 2000 --seed 4 --out "$tmp/b.tsv"
    expect 0 "wrote 2,000" nlp logic generate --n 2000 --seed 5 --out "$tmp/c.tsv" --quiet
    same "$tmp/a.tsv" "$tmp/b.tsv"
    differ "$tmp/a.tsv" "$tmp/c.tsv"
    checks=$((checks + 1))
    [ "$(wc -l <"$tmp/a.tsv")" -eq 2000 ] || fail "a.tsv has $(wc -l <"$tmp/a.tsv") lines"
    checks=$((checks + 1))
    [ "$(sort -u "$tmp/a.tsv" | wc -l)" -eq 2000 ] || fail "a.tsv repeats a line"
    # the released layout: a folder of trainK/testK (k = min(12, max ops),
    # counted here by awk) read back by nlp data
    expect 0 "wrote 400" nlp logic generate --n 400 --ops 0-12 --seed 9 --out "$tmp/all.tsv" --quiet
    mkdir -p "$tmp/folder"
    awk -F'\t' -v dir="$tmp/folder" '
        function ops(s,   n, i, w) { n = split(s, w, " "); c = 0
            for (i = 1; i <= n; i++) if (w[i] == "and" || w[i] == "or" || w[i] == "not") c++
            return c }
        BEGIN { for (k = 0; k <= 12; k++) { printf "" > (dir "/train" k); printf "" > (dir "/test" k) } }
        { a = ops($2); b = ops($3); k = a > b ? a : b; if (k > 12) k = 12
          print > (dir "/train" k); print > (dir "/test" k) }' "$tmp/all.tsv"
    low=$(cat "$tmp"/folder/train[0-6] | wc -l)
    expect 0 "train0-6: $low pairs; the split keeps $low" nlp data --task logic --data "$tmp/folder"
    expect 0 "labeller: 0 of 800 labels differ" nlp data --task logic --data "$tmp/folder" --max-train-ops 12
    # --layout released: 85 % of each k in trainK, the same pairs as one file
    expect 0 "wrote 400 .*/train0-12, test0-12" nlp logic generate --n 400 --ops 0-12 --seed 9 --layout released --out "$tmp/rel"
    checks=$((checks + 1))
    cat "$tmp"/rel/train* "$tmp"/rel/test* | sort >"$tmp/rel.sorted"
    sort "$tmp/all.tsv" | cmp -s - "$tmp/rel.sorted" || fail "the released layout holds other pairs"
    checks=$((checks + 1))
    for k in 5 6; do
        n=$(grep -c . "$tmp/folder/train$k"); t=$(wc -l <"$tmp/rel/train$k")
        [ "$t" -eq $((n * 85 / 100)) ] || fail "train$k has $t of $n pairs"
        head -n "$t" "$tmp/folder/train$k" | cmp -s - "$tmp/rel/train$k" || fail "train$k is not the first 85 %"
    done
    expect 0 "labeller: 0 of 400 labels differ" nlp data --task logic --data "$tmp/rel" --max-train-ops 12
    expect 1 "rel/train0 already exists \(use --force" nlp logic generate --n 400 --ops 0-12 --layout released --out "$tmp/rel"
    expect 2 "--layout expects one or released, got 'dir'" nlp logic generate --n 4 --layout dir --out "$tmp/rel"
    expect 1 "already exists \(use --force" nlp logic generate --n 10 --out "$tmp/a.tsv"
    same "$tmp/a.tsv" "$tmp/b.tsv"
    expect 0 "wrote 10 distinct" nlp logic generate --n 10 --out "$tmp/a.tsv" --force
    expect 2 "--out FILE is required" nlp logic generate --n 10
    expect 2 "--n N is required" nlp logic generate --out "$tmp/x.tsv"
    expect 2 "--ops expects LO-HI .* got '3-13'" nlp logic generate --n 5 --ops 3-13 --out "$tmp/x.tsv"
    expect 2 "--ops expects LO-HI .* got '5-2'" nlp logic generate --n 5 --ops 5-2 --out "$tmp/x.tsv"
    expect 2 "unknown option '--count'" nlp logic generate --count 5 --out "$tmp/x.tsv"
    expect 1 "only 36 distinct pairs with k in 0-0" nlp logic generate --n 40 --ops 0 --out "$tmp/x.tsv"
    checks=$((checks + 1))
    [ -e "$tmp/x.tsv" ] && fail "a failed generate left x.tsv"
    expect 2 "--split expects full, A, B or C, got 'D'" nlp data --task logic --data "$tmp/folder" --split D
    expect 2 "--task expects logic, listops, sst2 or sst5, got 'nli'" nlp data --task nli --data "$tmp"
    expect 2 "--data PATH is required" nlp data --task logic
    expect 1 "cannot open /nonexistent/train0" nlp data --task logic --data /nonexistent
    printf '#\ta\tb\n=\ta\t( a ( nand b ) )\n' >"$tmp/folder/train0"
    expect 1 "train0:2: right expression, token 4: unknown token 'nand'" nlp data --task logic --data "$tmp/folder"
    if [ -d "$data/logic_inference" ]; then
        run nlp data --task logic --data "$data/logic_inference" --split A
        has "train0-6: 135,529 pairs; the split keeps 128,969"
        has "train 116,073 / validation 12,896"
        has "test pairs: 2,472 in all, 1,369 with k = 7-12"
        expect 0 "labeller: 0 of 249,069 labels differ" nlp data --task logic --data "$data/logic_inference" --max-train-ops 12
    fi
    ;;
listops)
    expect 0 "^listops +ListOps" nlp tasks
    expect 0 "wrote 3,000 distinct ListOps trees" nlp listops generate --n 3000 --seed 2 --out "$tmp/a.tsv"
    expect 0 "answers: 0:" nlp listops generate --n 3000 --seed 2 --out "$tmp/b.tsv"
    expect 0 "wrote 3,000" nlp listops generate --n 3000 --seed 3 --out "$tmp/c.tsv" --quiet
    same "$tmp/a.tsv" "$tmp/b.tsv"
    differ "$tmp/a.tsv" "$tmp/c.tsv"
    expect 0 "train.tsv|a.tsv: 3,000 examples" nlp data --task listops --data "$tmp/a.tsv"
    expect 0 "deepest nesting 2 " nlp listops generate --n 500 --max-depth 3 --seed 1 --out "$tmp/d.tsv"
    expect 1 "already exists \(use --force" nlp listops generate --n 10 --out "$tmp/a.tsv"
    same "$tmp/a.tsv" "$tmp/b.tsv"
    expect 2 "--out FILE is required" nlp listops generate --n 10
    expect 2 "--n must be 1 or more, got 0" nlp listops generate --n 0 --out "$tmp/x.tsv"
    expect 2 "--max-depth must be 1..100, got 0" nlp listops generate --max-depth 0 --out "$tmp/x.tsv"
    expect 2 "--n expects an integer, got 'many'" nlp listops generate --n many --out "$tmp/x.tsv"
    expect 1 "only 10 distinct trees" nlp listops generate --n 11 --max-depth 1 --out "$tmp/x.tsv"
    printf '4\t( ( ( [MIN 4 ) 7 ) ] )\n5\t( ( ( [MIN 4 ) 7 ) ] )\n' >"$tmp/bad.tsv"
    expect 1 "bad.tsv:2: the answer is 5 but the expression evaluates to 4" nlp data --task listops --data "$tmp/bad.tsv"
    if [ -d "$data/listops" ]; then
        run nlp data --task listops --data "$data/listops"
        has "10,000 examples \(1 bare digit"
        has "answers: 0:1127 1:1038 2:967"
        has "mean 42.8, median 16, max 939; 2,034 > 50"
    fi
    ;;
sst)
    expect 0 "^sst2 +Stanford Sentiment Treebank" nlp tasks
    mkdir -p "$tmp/sst"
    printf '(3 (2 a) (4 b))\n(2 (2 a) (2 c))\n' >"$tmp/sst/train.txt"
    printf '(1 (2 a) (1 d))\n' >"$tmp/sst/dev.txt"
    printf '(4 (4 e) (2 a))\n' >"$tmp/sst/test.txt"
    expect 0 "train +2 +1 +2 +2" nlp data --task sst2 --data "$tmp/sst"
    expect 0 "train +2 +2 +6 +5" nlp data --task sst5 --data "$tmp/sst"
    printf '(1 (2 a) (1 d)\n' >"$tmp/sst/dev.txt"
    expect 1 "dev.txt:1: 1 node not closed" nlp data --task sst2 --data "$tmp/sst"
    printf '(1 (2 a) (1 d))\n' >"$tmp/sst/dev.txt"
    rm "$tmp/sst/test.txt"
    expect 1 "cannot open .*sst/test.txt" nlp data --task sst5 --data "$tmp/sst"
    if [ -d "$data/sst2" ]; then
        run nlp data --task sst2 --data "$data/sst2"
        has "train +8,544 +6,920 +98,794 +77,616"
        has "dev +1,101 +872"
        has "test +2,210 +1,821"
    fi
    ;;
*)
    echo "unknown part $part"; exit 2 ;;
esac

echo "nlp data cli ($part): $checks checks, $fails failed"
[ "$fails" -eq 0 ]
