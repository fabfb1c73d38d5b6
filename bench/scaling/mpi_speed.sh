#!/usr/bin/env bash
# Data-parallel speed over MPI processes on one machine (docs/scaling.md):
# `grove train bc` at the published size with 1 and 2 processes, one
# thread each, the two alternating (1, 2, 1, 2, ...) so that load on a
# shared machine tilts neither; prints a Markdown table of updates per
# second, median and spread over the rounds.
#   [UPDATES=N] bench/scaling/mpi_speed.sh GROVE [ROUNDS]
# (the rate counts the validation at update 0 and at the end, which every
# process repeats: more UPDATES show the training part)
set -euo pipefail
grove=$1
rounds=${2:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
"$grove" version | grep -q "^mpi: *yes" || { echo "this grove has no MPI" >&2; exit 1; }
bc=(train bc --recipe thesis --tasks AC,CD --options 3 --demos-per-task 2000 --updates "${UPDATES:-60}"
    --batch 512 --eval-every "${UPDATES:-60}" --return-every 0 --seed 1 --threads 1 --device cpu --quiet)
rate() { sed -n 's/.*(\([0-9.]*\) updates\/s).*/\1/p' "$1"; }
load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
echo "grove: $("$grove" version | head -1); $(nproc) cores; $(mpirun --version | head -1); load average $load"
# a busy core makes the processes wait for each other at every all-reduce
# (docs/scaling.md: 0.80x with one core taken, 1.86x idle)
awk -v l="${load%% *}" 'BEGIN { exit !(l + 0 >= 0.5) }' 2>/dev/null &&
    echo "mpi_speed.sh: warning: load average $load; the speed-up needs idle cores" >&2
echo
echo "| run | processes | updates/s (median) | spread | speed-up |"
echo "|---|---|---|---|---|"
declare -A r
for i in $(seq 1 "$rounds"); do
    for n in 1 2; do
        rm -rf "$tmp/bc"
        if [ "$n" -eq 1 ]; then
            "$grove" "${bc[@]}" --out "$tmp/bc" >"$tmp/out"
        else
            mpirun --oversubscribe -np "$n" "$grove" "${bc[@]}" --out "$tmp/bc" >"$tmp/out"
        fi
        r[$n]="${r[$n]:-} $(rate "$tmp/out")"
    done
done
med() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
spr() { tr ' ' '\n' | grep . | sort -g | awk 'NR==1{lo=$1} {hi=$1} END {printf "%s-%s", lo, hi}'; }
m1=$(echo "${r[1]}" | med)
for n in 1 2; do
    m=$(echo "${r[$n]}" | med)
    echo "| train bc, K 3, d = w = 128, batch 512, ${UPDATES:-60} updates | $n | $m | $(echo "${r[$n]}" | spr) | $(awk -v a="$m" -v b="$m1" 'BEGIN{printf "%.2fx", a/b}') |"
done
