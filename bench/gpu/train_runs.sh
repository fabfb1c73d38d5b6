#!/usr/bin/env bash
# Classifier trainings on a lent GPU, all at once: each run is its own
# process with one host thread, stopped with SIGTERM at the time limit (the
# trainer then writes last.ckpt and its metrics). The processes time-share
# the GPU (no MPS): nine at once on an H100 (2026-11-26) ran each several
# times slower than alone (Ordered Memory 0.71 updates/s, about 6 alone),
# so start few at once.
# Runs from the repository root there, with .devbin, .devpack (pack.sh)
# and .devdata/data.tar.xz (logic_inference and sst2 of ../shared/data:
#   tar -C ../shared/data -cJf .devdata/data.tar.xz logic_inference sst2)
# carried with the call:
#   bash bench/gpu/train_runs.sh SECONDS NAME:TASK:MODEL[:FLAG,FLAG...]...
# e.g. logic_transformer:logic:transformer:--epochs,40,--max-batches,500
# Each run writes runs/NAME (metrics.csv, curves.png, config; the
# checkpoints only when under 16 MiB) and runs/NAME.log, all packed at the
# end into $OUT/runs.tar.xz (a call brings back only a few files: the
# first lease lost every metrics.csv); the summary prints each run's last
# metrics line. GROVE_RUN_DEVICE=cpu runs the same jobs on the CPU (a
# dry run of the script on a machine without a GPU).
set -u
if [ $# -lt 2 ]; then
    sed -n "2,19p" "$0"
    exit 2
fi
limit=$1
shift
out=${OUT:-/tmp/grove-device}
mkdir -p "$out/runs"
exec > >(tee "$out/train_runs.log") 2>&1
. bench/gpu/device_env.sh
nvidia-smi -L
data=/tmp/grove-data
mkdir -p "$data"
tar -C "$data" -xJf .devdata/data.tar.xz || { echo "no .devdata/data.tar.xz"; exit 1; }
pids=()
for job in "$@"; do
    IFS=: read -r name task model flags <<<"$job"
    case $task in
    logic) dir=logic_inference ;;
    sst2 | sst5) dir=sst2 ;;
    *) echo "unknown task $task in $job"; exit 2 ;;
    esac
    IFS=, read -r -a extra <<<"${flags:-}"
    echo "== $name: classify train --task $task --model $model ${extra[*]}"
    timeout -s TERM -k 30 "$limit" $bin/grove nlp classify train --task "$task" \
        --model "$model" --data "$data/$dir" --seed 1 --threads 1 --device "${GROVE_RUN_DEVICE:-cuda}" \
        --out "$out/runs/$name" "${extra[@]}" >"$out/runs/$name.log" 2>&1 &
    pids+=($!)
done
t0=$SECONDS
wait "${pids[@]}"
echo "== all runs ended after $((SECONDS - t0)) s"
find "$out/runs" -name '*.ckpt' -size +16M -delete
for job in "$@"; do
    name=${job%%:*}
    m=$out/runs/$name/metrics.csv
    echo "== $name"
    if [ -f "$m" ]; then
        head -1 "$m"
        tail -1 "$m"
    else
        tail -5 "$out/runs/$name.log"
    fi
done
# one file for the call to bring back
tar -C "$out" -cJf "$out/runs.tar.xz" runs && rm -rf "$out/runs"
ls -la "$out"
