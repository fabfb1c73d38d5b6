# tests/nlp/mlm_lib.sh — what the MLM command-line tests share
# (test_cli_mlm.sh, test_cli_depparse.sh; sourced after setting
# grove=PATH/TO/grove): a temporary folder $tmp removed on exit, the
# counters $checks and $fails, and
#   fail MESSAGE            count a failure and say it
#   expect RC PATTERN ARGS...
#                           grove ARGS must exit RC with PATTERN (grep -E)
#                           in stdout (RC 0) or in the single stderr line
#                           (RC != 0)
# Output of the last command is in $tmp/out and $tmp/err. The data, written
# here (no shared data needed): $tmp/ptb (a tiny PTB-format corpus, one
# sentence a line, drawn by awk from a fixed word list), $tmp/gold.conll
# (two hand-written CoNLL-X sentences, one with a final '.'),
# $tmp/gold_words.conll (the same filtered by hand: the '.' removed), and
# $tiny, the flags of a tiny UDGN.
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
        grep -Eq -- "$pattern" "$tmp/err" || { fail "grove $*: no /$pattern/ in: $(cat "$tmp/err")"; }
    fi
}

# A tiny PTB-format corpus (one sentence a line) and gold trees over it.
mkdir -p "$tmp/ptb"
words="the a dog cat man saw chased big small red park in on with"
gen() { # gen N SEED -> N sentences
    awk -v n="$1" -v s="$2" -v w="$words" 'BEGIN { srand(s); k = split(w, W, " ");
        for (i = 0; i < n; i++) { m = 3 + int(rand() * 6); l = "";
            for (j = 0; j < m; j++) l = l (j ? " " : "") W[1 + int(rand() * k)];
            print l } }'
}
gen 120 1 >"$tmp/ptb/ptb.train.txt"
gen 20 2 >"$tmp/ptb/ptb.valid.txt"
gen 20 3 >"$tmp/ptb/ptb.test.txt"
cat >"$tmp/gold.conll" <<'EOF'
1	The	_	DT	DT	_	2	det	_	_
2	dog	_	NN	NN	_	3	nsubj	_	_
3	saw	_	VBD	VBD	_	0	root	_	_
4	a	_	DT	DT	_	5	det	_	_
5	cat	_	NN	NN	_	3	dobj	_	_
6	.	_	.	.	_	3	punct	_	_

1	A	_	DT	DT	_	3	det	_	_
2	big	_	JJ	JJ	_	3	amod	_	_
3	man	_	NN	NN	_	4	nsubj	_	_
4	chased	_	VBD	VBD	_	0	root	_	_
5	the	_	DT	DT	_	7	det	_	_
6	small	_	JJ	JJ	_	7	amod	_	_
7	cat	_	NN	NN	_	4	dobj	_	_
8	in	_	IN	IN	_	4	prep	_	_
9	the	_	DT	DT	_	10	det	_	_
10	park	_	NN	NN	_	8	pobj	_	_

EOF
grep -v $'\t[.]\t' "$tmp/gold.conll" >"$tmp/gold_words.conll"   # §3-filtered by hand
tiny="--nemb 16 --nlayers 2 --nheads 2 --head-size 4 --parser-layers 1 --batch-tokens 120 --eval-runs 2 --pos-classes 2"
