#!/usr/bin/env bash
# The thesis's fine-tuning experiments (Fig 5.4 S1, Fig 5.5 S2; ocn.md §7,
# §8, §10; issue 20 §4), one command: behaviour cloning of the options, then
# PPO of a new controller over the frozen options for each task, reward,
# method and seed, then one picture per task and reward (evaluation return
# against frames: the mean over seeds with a min-max band, one curve per
# method, `grove plot` over the runs' metrics.csv), a results table and a
# contact sheet of one evaluation episode (Fig 5.6).
#
#   bench/ocn/rl.sh GROVE OUT_DIR [--size quick|thesis] [--setting s1|s2|all]
#       [--seeds LIST] [--methods ocn,moe,flat,ompn,compile] [--rewards dense,sparse]
#       [--frames N] [--bc-updates N] [--jobs J] [--threads T] [--device D]
#       [--report-only] [--archive DIR]
#
# S1: BC on AC, CD (K = 3, train bc's default recipe, ocn.md §6.1) for ocn
#     and for moe (its own BC, --model moe); PPO on ACD, CAD, DCA.
# S2: model 1 on AB, BA and model 2 on CD, DC (K = 2 each), for ocn and
#     moe; PPO over the merged pool of 4 (model 1's options, then model 2's)
#     on ACB, CAD, DBA.
# Methods: ocn (--policy ocn: a decision when the option ends), moe
# (--policy moe over the MoE's options: a decision every step), flat
# (--policy flat: a recurrent policy over the actions, no options), and the
# baselines of issue 26 (not in the default --methods): ompn (--policy
# ompn: its own BC run, the whole OMPN fine-tuned as a recurrent policy
# over the actions, controller-free; S1 only: OMPN has no options to pool
# in S2) and compile (--policy compile: a controller of compILE latents
# over the decoder of its BC run, in S2 over both models' decoders, which
# it also picks between).
#
# --size thesis (the default): BC at train bc's defaults; PPO 2,000,000
#   frames per run, seeds 1-5, all three tasks, dense and sparse. Time on
#   one core of the 2-core machine (AMD EPYC, shared): a BC run 30-60 min
#   (10,000 updates; best.ckpt, by validation NLL, comes at 2,500-3,000);
#   PPO 0.5-1 minute for ocn (35,000-60,000 frames/s at d = w = 128) and
#   2-7 minutes for moe and flat (5,000-15,000 frames/s: a decision, and so
#   an update sample, every frame; the ranges are the shared cores' load);
#   so 2-7 hours of PPO per setting on one core, divided by --jobs on a
#   machine with that many cores.
# --bc-updates N: stop every BC run at N updates instead of the size's
#   default (thesis: train bc's 10,000). best.ckpt is the lowest validation
#   NLL, which the thesis-size runs reached at 2,500-3,000, so 3,000 keeps
#   the checkpoint PPO uses at a third of the time; results.md says so.
# --report-only: run nothing; rewrite results.md, the pictures and the
#   sheets from the runs already under OUT_DIR (those of the given
#   --setting, --methods, --rewards and --seeds that exist), e.g. after
#   several calls that each ran a part.
# --archive DIR: the pictures and the table also show, for each method in
#   --methods that has no runs under OUT_DIR, its curve from DIR's
#   plotted numbers (DIR/<setting>/<task>_<reward>.csv, which an earlier
#   call wrote), marked "(archive)": e.g. docs/ocn/rl beside new runs of
#   the baselines when the runs of the others were not kept.
# --size smoke: the pipeline at toy sizes in seconds (d = 16, 100 demos per
#   task, 10 BC updates, 2,000 frames, 4 evaluation episodes, seed 1, DCA /
#   ACB sparse), for tests; nothing it prints means anything.
# --size quick: the same pipeline in about a minute on 2 cores, to see it
#   work (d = w = 32, 500 demos per task, 100 BC updates, 30,000 frames per
#   PPO run with 16 decisions per world per rollout and an evaluation every
#   2 updates, seeds 1-2, one task per setting (DCA, ACB), sparse reward).
#   Its numbers say nothing about the method.
#
# Runs go to OUT_DIR/<setting>/<task>_<reward>/<method>_seed<S>/ (BC runs
# to OUT_DIR/<setting>/bc_*) and resume: a finished run is not run again, a
# stopped one continues from its last.ckpt (bit for bit), so the script can
# be called again until everything is done. Output: OUT_DIR/results.md,
# OUT_DIR/<setting>/<task>_<reward>.png (and .csv: the plotted numbers),
# OUT_DIR/<setting>/sheet_<task>/ (contact sheet of ocn seed 1's last
# evaluation, sparse reward if run).
set -euo pipefail
usage() { sed -n '10,13p' "$0" >&2; exit 2; }
(($# >= 2)) || usage
grove=$1 out=$2
shift 2
size=thesis setting=all seeds= methods=ocn,moe,flat rewards= frames= bc_updates= report_only=0 jobs=1 threads=1 device=auto archive=
while (($#)); do
    [[ $1 == --report-only ]] && { report_only=1; shift; continue; }
    (($# >= 2)) || usage
    case $1 in
    --size) size=$2 ;;
    --setting) setting=$2 ;;
    --seeds) seeds=$2 ;;
    --methods) methods=$2 ;;
    --rewards) rewards=$2 ;;
    --frames) frames=$2 ;;
    --bc-updates) bc_updates=$2 ;;
    --jobs) jobs=$2 ;;
    --threads) threads=$2 ;;
    --device) device=$2 ;;
    --archive) archive=$2 ;;
    *) echo "rl.sh: unknown option '$1'" >&2; usage ;;
    esac
    shift 2
done
[[ -x $grove ]] || { echo "rl.sh: GROVE '$grove' is not an executable" >&2; exit 2; }
[[ -z $archive || -d $archive ]] || { echo "rl.sh: --archive '$archive' is not a folder" >&2; exit 2; }
case $setting in s1) settings=(s1) ;; s2) settings=(s2) ;; all) settings=(s1 s2) ;;
*) echo "rl.sh: --setting '$setting' is not s1, s2 or all" >&2; exit 2 ;; esac
for v in "$jobs" "$threads" ${frames:+"$frames"} ${bc_updates:+"$bc_updates"}; do
    [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "rl.sh: '$v' is not a positive integer" >&2; exit 2; }
done
case $size in
thesis)
    bc_size=() ppo_size=() flat_size=()
    seeds=${seeds:-1,2,3,4,5} rewards=${rewards:-dense,sparse} frames=${frames:-2000000}
    s1_tasks=(ACD CAD DCA) s2_tasks=(ACB CAD DBA) ;;
quick)
    bc_size=(--demos-per-task 500 --updates 100 --hidden 32 --width 32 --batch 64 --eval-every 50 --return-every 0)
    ppo_size=(--num-steps 16 --eval-every 2 --eval-episodes 20) flat_size=(--hidden 32 --width 32)
    seeds=${seeds:-1,2} rewards=${rewards:-sparse} frames=${frames:-30000}
    s1_tasks=(DCA) s2_tasks=(ACB) ;;
smoke)
    bc_size=(--demos-per-task 100 --updates 10 --hidden 16 --width 16 --batch 32 --eval-every 5 --return-every 0)
    ppo_size=(--num-steps 16 --eval-every 1 --eval-episodes 4) flat_size=(--hidden 16 --width 16)
    seeds=${seeds:-1} rewards=${rewards:-sparse} frames=${frames:-2000}
    s1_tasks=(DCA) s2_tasks=(ACB) ;;
*) echo "rl.sh: --size '$size' is not smoke, quick or thesis" >&2; exit 2 ;;
esac
if [[ -n $bc_updates ]]; then # replace the size's --updates (train bc refuses a flag twice)
    for ((i = 0; i < ${#bc_size[@]}; i++)); do
        [[ ${bc_size[i]} == --updates ]] && bc_size[i + 1]=$bc_updates
    done
    [[ " ${bc_size[*]} " == *" --updates "* ]] || bc_size+=(--updates "$bc_updates")
fi
IFS=, read -r -a seed_list <<<"$seeds"
IFS=, read -r -a method_list <<<"$methods"
IFS=, read -r -a reward_list <<<"$rewards"
for s in "${seed_list[@]}"; do [[ $s =~ ^[0-9]+$ ]] || { echo "rl.sh: bad seed '$s'" >&2; exit 2; }; done
for m in "${method_list[@]}"; do case $m in ocn | moe | flat | ompn | compile) ;; *) echo "rl.sh: unknown method '$m' (ocn, moe, flat, ompn, compile)" >&2; exit 2 ;; esac; done
# the baselines' BC has no options and no MLP width: train bc refuses them
base_size=()
for ((i = 0; i < ${#bc_size[@]}; i++)); do
    [[ ${bc_size[i]} == --width ]] && { i=$((i + 1)); continue; }
    base_size+=("${bc_size[i]}")
done
for r in "${reward_list[@]}"; do case $r in dense | sparse) ;; *) echo "rl.sh: unknown reward '$r'" >&2; exit 2 ;; esac; done
common=(--device "$device" --threads "$threads" --quiet)
failed=0
# run at most --jobs commands at once
spawn() {
    ((report_only)) && return 0 # --report-only: tables and pictures of what is there
    "$@" & while (($(jobs -rp | wc -l) >= jobs)); do wait -n || failed=1; done; }
drain() { while (($(jobs -rp | wc -l) > 0)); do wait -n || failed=1; done; }

# BC (seed 1): one run folder, resumed or skipped when done
bc() {
    local d=$1 tasks=$2 k=$3 model=$4
    if [[ -f $d/best.ckpt ]] && ! grep -q "^stopped" "$d.log" 2>/dev/null &&
        grep -q "^run " "$d.log" 2>/dev/null; then
        return 0
    fi
    local start=--force
    [[ -f $d/last.ckpt ]] && start=--resume
    local bsize=(--options "$k" "${bc_size[@]}")
    case $model in ompn | compile) bsize=("${base_size[@]}") ;; esac
    "$grove" train bc --tasks "$tasks" --model "$model" "${bsize[@]}" \
        --seed 1 "${common[@]}" --out "$d" "$start" >"$d.log" 2>&1 ||
        { echo "rl.sh: BC $d failed; see $d.log" >&2; return 1; }
}
# the options' checkpoints of a setting and method
pool() {
    case $1/$2 in
    s1/ocn) echo "$out/s1/bc_ocn/best.ckpt" ;;
    s1/moe) echo "$out/s1/bc_moe/best.ckpt" ;;
    s2/ocn) echo "$out/s2/bc1_ocn/best.ckpt,$out/s2/bc2_ocn/best.ckpt" ;;
    s2/moe) echo "$out/s2/bc1_moe/best.ckpt,$out/s2/bc2_moe/best.ckpt" ;;
    s1/ompn) echo "$out/s1/bc_ompn/best.ckpt" ;;
    s1/compile) echo "$out/s1/bc_compile/best.ckpt" ;;
    s2/compile) echo "$out/s2/bc1_compile/best.ckpt,$out/s2/bc2_compile/best.ckpt" ;;
    esac
}
ppo() {
    local st=$1 task=$2 reward=$3 method=$4 seed=$5
    local d=$out/$st/${task}_$reward/${method}_seed$seed opts=()
    local done_at
    done_at=$(awk -F, 'NR > 1 { g = $1 } END { print g + 0 }' "$d/metrics.csv" 2>/dev/null || echo 0)
    ((done_at >= frames)) && return 0
    local start=--force
    [[ -f $d/last.ckpt ]] && start=--resume
    case $method in
    flat) opts=(--policy flat "${flat_size[@]}") ;;
    ompn) opts=(--policy ompn --init "$(pool "$st" ompn)") ;;
    compile) opts=(--policy compile --init "$(pool "$st" compile)" "${flat_size[@]:2}") ;;
    *) opts=(--policy "$method" --options "$(pool "$st" "$method")") ;;
    esac
    mkdir -p "$(dirname "$d")"
    "$grove" train ppo "${opts[@]}" --task "$task" --reward "$reward" \
        --total-timesteps "$frames" --seed "$seed" "${ppo_size[@]}" "${common[@]}" \
        --out "$d" "$start" >"$d.log" 2>&1 ||
        { echo "rl.sh: PPO $d failed; see $d.log" >&2; return 1; }
}

t0=$SECONDS
for st in "${settings[@]}"; do
    mkdir -p "$out/$st"
    for m in ocn moe ompn compile; do
        [[ ,$methods, == *,$m,* ]] || continue
        [[ $m == ompn && $st == s2 ]] && continue
        model=$m
        if [[ $st == s1 ]]; then
            spawn bc "$out/s1/bc_$m" AC,CD 3 "$model"
        else
            spawn bc "$out/s2/bc1_$m" AB,BA 2 "$model"
            spawn bc "$out/s2/bc2_$m" CD,DC 2 "$model"
        fi
    done
done
drain
((failed == 0)) || exit 1
((report_only)) || echo "rl.sh: behaviour cloning done ($((SECONDS - t0)) s)" >&2
for st in "${settings[@]}"; do
    if [[ $st == s1 ]]; then tasks=("${s1_tasks[@]}"); else tasks=("${s2_tasks[@]}"); fi
    for task in "${tasks[@]}"; do
        for r in "${reward_list[@]}"; do
            for m in "${method_list[@]}"; do
                [[ $m == ompn && $st == s2 ]] && continue
                for s in "${seed_list[@]}"; do
                    spawn ppo "$st" "$task" "$r" "$m" "$s"
                done
            done
        done
    done
done
drain
((report_only)) || echo "rl.sh: PPO done ($((SECONDS - t0)) s)" >&2

# pictures, the plotted numbers, the table
{
    echo "# Fine-tuning with frozen options ($size size)"
    echo
    echo "Evaluation return (100 greedy episodes on fixed maps, every 10 updates; ocn.md §7) at the last frame all runs of a method reach: mean ± std over seeds (min-max), mean evaluation success; frames at which the mean first reaches 0.7 (sparse reward: the thesis's target). BC: seed 1, best.ckpt (lowest validation NLL)${bc_updates:+, runs stopped at $bc_updates updates (--bc-updates)}."
    [[ -z $archive ]] || echo "Rows marked (archive) and their curves come from the plotted numbers of an earlier call ($archive: --archive), for the methods with no runs here; a summary keeps no evaluation success."
    for st in "${settings[@]}"; do
        if [[ $st == s1 ]]; then tasks=("${s1_tasks[@]}"); else tasks=("${s2_tasks[@]}"); fi
        echo
        echo "## ${st^^}"
        echo
        echo "| BC run | tasks | last validation NMI | best validation NLL |"
        echo "|---|---|---|---|"
        for b in "$out/$st"/bc*/; do
            [[ -f $b/metrics.csv ]] || continue
            awk -F, -v name="$(basename "$b")" -v tasks="$(sed -n 's/^tasks //p' "$b/config")" '
                NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "nmi") c = i; if ($i == "nll") l = i } next }
                $c != "" { nmi = $c } $l != "" && (best == "" || $l < best) { best = $l }
                END { printf "| %s | %s | %s | %.4f |\n", name, tasks,
                             (nmi == "" ? "-" : sprintf("%.3f", nmi)), best }' "$b/metrics.csv"
        done
        echo
        echo "| task | reward | method | runs | frames | eval return | min-max | eval success | frames to 0.7 |"
        echo "|---|---|---|---|---|---|---|---|---|"
        for task in "${tasks[@]}"; do
            for r in "${reward_list[@]}"; do
                dir=$out/$st/${task}_$r
                files=() groups=()
                for m in "${method_list[@]}"; do
                    for s in "${seed_list[@]}"; do
                        f=$dir/${m}_seed$s/metrics.csv
                        [[ -s $f ]] && { files+=("$f"); groups+=("$m"); }
                    done
                done
                glist=$(IFS=,; echo "${groups[*]}")
                # --archive: the methods asked for that have no runs here,
                # from an earlier call's plotted numbers (grove plot reads
                # its own --print CSV back as a summary)
                summary=() alist=
                arch=${archive:+$archive/$st/${task}_$r.csv}
                if [[ -n $arch && -s $arch ]]; then
                    awk -F, -v want=",$methods," -v have=",$glist," \
                        'NR == 1 || (index(want, "," $1 ",") && !index(have, "," $1 ","))' \
                        "$arch" >"$dir.archived.csv"
                    alist=$(awk -F, 'NR > 1 && !seen[$1]++ { printf "%s%s", n++ ? "," : "", $1 }' "$dir.archived.csv")
                    [[ -n $alist ]] && summary=("$dir.archived.csv")
                fi
                ((${#files[@]} + ${#summary[@]})) || continue
                "$grove" plot "${summary[@]}" "${files[@]}" ${files[0]:+--group "$glist"} --x global_step --y eval_return \
                    --title "$st $task, $r reward: evaluation return (mean, min-max band)" \
                    --print --out "$out/$st/${task}_$r.png" --force >"$out/$st/${task}_$r.csv" 2>/dev/null ||
                    { echo "rl.sh: plot of $dir failed" >&2; failed=1; continue; }
                for m in "${method_list[@]}"; do
                    if [[ ,$alist, == *,$m,* ]]; then # from --archive: no success column
                        awk -F, -v task="$task" -v r="$r" -v m="$m" '
                            $1 == m { n = $2; x = $3; mean = $4; sd = $5; lo = $6; hi = $7
                                      if (hit == "" && mean >= 0.7) hit = $3 }
                            END { printf "| %s | %s | %s (archive) | %d | %.0f | %.3f ± %.3f | %.3f-%.3f | - | %s |\n",
                                         task, r, m, n, x, mean, sd, lo, hi, (hit == "" ? "not reached" : sprintf("%.0f", hit)) }' \
                            "$out/$st/${task}_$r.csv"
                        continue
                    fi
                    [[ ,$glist, == *,$m,* ]] || continue # no run (ompn in S2)
                    succ=$(for s in "${seed_list[@]}"; do
                        [[ -s $dir/${m}_seed$s/metrics.csv ]] || continue # not run (--report-only)
                        awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "eval_success") c = i; next }
                                 $c != "" { v = $c } END { if (v != "") print v }' \
                            "$dir/${m}_seed$s/metrics.csv" 2>/dev/null; done |
                        awk '{ s += $1; n++ } END { if (n) printf "%.3f", s / n; else printf "-" }')
                    awk -F, -v task="$task" -v r="$r" -v m="$m" -v succ="$succ" '
                        $1 == m { n = $2; x = $3; mean = $4; sd = $5; lo = $6; hi = $7
                                  if (hit == "" && mean >= 0.7) hit = $3 }
                        END { if (n == "") exit
                              printf "| %s | %s | %s | %d | %.0f | %.3f ± %.3f | %.3f-%.3f | %s | %s |\n",
                                     task, r, m, n, x, mean, sd, lo, hi, succ, (hit == "" ? "not reached" : sprintf("%.0f", hit)) }' \
                        "$out/$st/${task}_$r.csv"
                done
            done
        done
        # Fig 5.6: one evaluation episode of ocn seed 1 as a contact sheet
        task=${tasks[-1]}
        r=sparse; [[ ,$rewards, == *,sparse,* ]] || r=${reward_list[0]}
        rp=$out/$st/${task}_$r/ocn_seed${seed_list[0]}/eval.replay
        if [[ -f $rp ]] && "$grove" replay export "$rp" --episode 0 --sheet \
            --out "$out/$st/sheet_$task" --force --quiet >/dev/null 2>&1; then
            echo
            echo "Contact sheet (Fig 5.6): $out/$st/sheet_$task/ep0000_sheet.png, from $rp."
        fi
        echo
        for task in "${tasks[@]}"; do
            for r in "${reward_list[@]}"; do
                [[ -f $out/$st/${task}_$r.png ]] && echo "![${st} ${task} ${r}](${st}/${task}_$r.png)"
            done
        done
    done
} >"$out/results.md"
cat "$out/results.md"
echo "rl.sh: wrote $out/results.md ($((SECONDS - t0)) s)" >&2
exit "$failed"
