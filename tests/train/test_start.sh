#!/usr/bin/env bash
# How every trainer starts (issue 21 §2), the same for all four: grove
# train bc, train ppo, nlp lm train, nlp classify train.
#   - a bad flag or a missing input path: exit 2, one line on stderr, no
#     run folder;
#   - an input file that cannot be read, or a device that is not there:
#     exit 1, one line, no run folder (every check runs before the folder
#     is created);
#   - an existing folder is refused before any data is read;
#   - --updates 0 / --epochs 0: the initial model as best.ckpt and
#     last.ckpt, metrics.csv with its header only, nothing evaluated, no
#     curves.png, and stdout names only files that exist.
# Needs no data set: the LM reads a small generated corpus, ListOps is
# generated, BC's demonstrations come from the expert.
#   test_start.sh PATH/TO/grove
set -u
grove=$1
fails=0
checks=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# refused RC OUT ARGS...: exit RC, one line on stderr, nothing on stdout,
# no OUT afterwards.
refused() {
    local want=$1 out=$2
    shift 2
    checks=$((checks + 1))
    "$grove" "$@" >"$tmp/o" 2>"$tmp/e" </dev/null
    local rc=$?
    [ "$rc" -eq "$want" ] || fail "grove $*: exit $rc, want $want: $(cat "$tmp/e")"
    [ "$(wc -l <"$tmp/e")" -eq 1 ] || { fail "grove $*: stderr is not one line:"; cat "$tmp/e"; }
    [ -s "$tmp/o" ] && fail "grove $*: printed on stdout: $(cat "$tmp/o")"
    grep -q "given twice" "$tmp/e" && fail "grove $*: the test repeats a flag"
    [ -e "$out" ] && { fail "grove $*: left $out behind"; rm -rf "$out"; }
    echo "ok ($rc): grove $* -> $(head -c 200 "$tmp/e")"
}

# A small corpus in PTB's layout (one sentence a line), made here.
mkdir -p "$tmp/ptb"
words=(the a cat dog sat ran on under mat log big small red N)
for split in train:300 valid:40 test:40; do
    name=${split%%:*}; n=${split#*:}
    awk -v n="$n" -v seed="${#name}" -v w="${words[*]}" 'BEGIN {
        srand(seed); k = split(w, ws, " ")
        for (i = 0; i < n; i++) {
            len = 3 + int(rand() * 8); line = ""
            for (j = 0; j < len; j++) line = line (j ? " " : "") ws[1 + int(rand() * k)]
            print line
        }
    }' >"$tmp/ptb/ptb.$name.txt"
done
garbage="$tmp/garbage.bin"
printf 'not a replay, a checkpoint or a data set\n' >"$garbage"
mkdir -p "$tmp/badptb"
: >"$tmp/badptb/ptb.train.txt"
: >"$tmp/badptb/ptb.valid.txt"
: >"$tmp/badptb/ptb.test.txt"

have_gpu=0
"$grove" version 2>/dev/null | grep -q "^gpus: *[1-9]" && have_gpu=1

bc=(train bc --demos-per-task 6 --hidden 8 --width 8 --batch 4 --eval-every 2
    --return-every 0 --threads 1 --quiet)
ppo=(train ppo --policy oracle --task AC --total-timesteps 256 --num-envs 2
     --num-steps 8 --eval-episodes 2 --hidden 8 --width 8 --threads 1 --quiet)
lm=(nlp lm train --data "$tmp/ptb" --emsize 8 --nhid 8 --nlayers 2
    --chunk-size 4 --bptt 5 --batch-size 2 --threads 1 --quiet)
clsf=(nlp classify train --task listops --model lstm
      --emsize 8 --nhid 8 --batch 8 --threads 1 --quiet) # on --train FILE
cls=("${clsf[@]}" --listops-n 1100) # generated trees

o=$tmp/run
# a bad flag
refused 2 "$o" "${bc[@]}" --out "$o" --lr -1
refused 2 "$o" "${ppo[@]}" --out "$o" --gamma 2
refused 2 "$o" "${lm[@]}" --out "$o" --clip -1
refused 2 "$o" "${cls[@]}" --out "$o" --dropouti 1.5
refused 2 "$o" "${bc[@]}" --out "$o" --nosuchflag
refused 2 "$o" "${cls[@]}" --out "$o" --test-every 0
# a missing input path
refused 2 "$o" "${bc[@]}" --out "$o" --demos "$tmp/none.replay"
grep -q -- "--demos $tmp/none.replay: it does not exist" "$tmp/e" || fail "bc: $(cat "$tmp/e")"
refused 2 "$o" train ppo --options "$tmp/none.ckpt" --task AC --quiet --out "$o"
grep -q -- "--options $tmp/none.ckpt: it does not exist" "$tmp/e" || fail "ppo: $(cat "$tmp/e")"
refused 2 "$o" nlp lm train --data "$tmp/none" --quiet --out "$o"
grep -q -- "--data $tmp/none: it does not exist" "$tmp/e" || fail "lm: $(cat "$tmp/e")"
refused 2 "$o" "${clsf[@]}" --train "$tmp/none.tsv" --out "$o"
grep -q -- "--train $tmp/none.tsv: it does not exist" "$tmp/e" || fail "classify: $(cat "$tmp/e")"
# an input file that cannot be read as what it should be
refused 1 "$o" "${bc[@]}" --out "$o" --demos "$garbage"
refused 1 "$o" train ppo --options "$garbage" --task AC --quiet --out "$o"
refused 1 "$o" nlp lm train --data "$tmp/badptb" --quiet --out "$o"
refused 1 "$o" "${clsf[@]}" --train "$garbage" --out "$o"
# --resume of a folder that is not a run
refused 1 "$o" "${bc[@]}" --out "$o" --resume
grep -q "last.ckpt" "$tmp/e" || fail "bc --resume: $(cat "$tmp/e")"
refused 1 "$o" "${lm[@]}" --out "$o" --resume
# a device that is not there
if [ "$have_gpu" -eq 0 ]; then
    refused 1 "$o" "${bc[@]}" --out "$o" --device cuda
    refused 1 "$o" "${ppo[@]}" --out "$o" --device cuda
    refused 1 "$o" "${lm[@]}" --out "$o" --device cuda
    refused 1 "$o" "${cls[@]}" --out "$o" --device cuda
else
    echo "note: a GPU is visible; the missing-device refusals are not run"
fi
# an existing folder: refused at once, and left as it was
mkdir -p "$tmp/exists"
echo keep >"$tmp/exists/mine"
for t in bc ppo lm cls; do
    checks=$((checks + 1))
    eval "args=(\"\${$t[@]}\")"
    "$grove" "${args[@]}" --out "$tmp/exists" >"$tmp/o" 2>"$tmp/e"; rc=$?
    [ "$rc" -eq 1 ] && grep -q "already exists" "$tmp/e" || fail "$t into an existing folder: exit $rc, $(cat "$tmp/e")"
    [ "$(ls "$tmp/exists")" = mine ] || fail "$t wrote into an existing folder: $(ls "$tmp/exists")"
done

# --updates 0 / --epochs 0: the same in every trainer
zero() {
    local name=$1 out=$tmp/zero-$1
    shift
    checks=$((checks + 1))
    "$grove" "$@" --out "$out" >"$tmp/o" 2>"$tmp/e"; local rc=$?
    [ "$rc" -eq 0 ] || { fail "$name 0: exit $rc: $(cat "$tmp/e")"; return; }
    for f in best.ckpt last.ckpt metrics.csv command config; do
        [ -s "$out/$f" ] || fail "$name 0: no $f"
    done
    [ "$(wc -l <"$out/metrics.csv")" -eq 1 ] || fail "$name 0: metrics.csv has rows: $(cat "$out/metrics.csv")"
    for f in curves.png summary.txt eval.replay; do
        [ -e "$out/$f" ] && fail "$name 0: wrote $f"
    done
    grep -q "wrote the initial model to $out/best.ckpt and last.ckpt" "$tmp/o" ||
        fail "$name 0: stdout: $(cat "$tmp/o")"
    grep -Eqi "inf|nan|test|valid|curves" "$tmp/o" && fail "$name 0: evaluated or listed something: $(cat "$tmp/o")"
    echo "ok: $name 0 -> $(tr '\n' ' ' <"$tmp/o")"
}
zero bc "${bc[@]}" --updates 0
zero lm "${lm[@]}" --epochs 0
zero classify "${cls[@]}" --epochs 0
zero ppo "${ppo[@]/#256/0}"

# BC: resuming the exported initial model equals the fresh run
"$grove" "${bc[@]}" --updates 6 --resume --out "$tmp/zero-bc" >/dev/null 2>"$tmp/e" ||
    fail "bc --resume from --updates 0: $(cat "$tmp/e")"
"$grove" "${bc[@]}" --updates 6 --out "$tmp/fresh-bc" >/dev/null 2>"$tmp/e" ||
    fail "bc fresh: $(cat "$tmp/e")"
checks=$((checks + 1))
cmp -s "$tmp/zero-bc/last.ckpt" "$tmp/fresh-bc/last.ckpt" &&
    [ "$(cut -d, -f1-8 "$tmp/zero-bc/metrics.csv")" = "$(cut -d, -f1-8 "$tmp/fresh-bc/metrics.csv")" ] ||
    fail "bc: --resume from the initial model differs from the fresh run"

echo "train_start: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
