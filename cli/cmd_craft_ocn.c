/* grove craft run --agent ocn: an OCN / MoE checkpoint plays Craft, through
 * the hook of cli/cmd_craft_ocn.h that cli/cmd_craft.c calls. */
#define _POSIX_C_SOURCE 200809L
#include "cli/cmd_craft_ocn.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/bc.h"
#include "agents/demos.h"
#include "agents/ocn.h"
#include "agents/ocn_load.h"
#include "bench/ocn/bench_ocn.h"
#include "cli/build_info.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/files.h"
#include "core/progress.h"
#include "envs/craft.h"
#include "envs/expert.h"
#include "kernels/checkpoint.h"
#include "kernels/device.h"
#include "kernels/tape.h"
#include "render/frame.h"
#include "render/image.h"
#include "render/plot.h"
#include "render/pngfile.h"
#include "render/window.h"
#include "replays/replay.h"
#include "cli/craft_common.h"

/* ---- grove craft run --agent ocn ------------------------------------------------ */

int cli_craft_run_wants_ocn(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--agent=ocn") == 0 ||
            strcmp(argv[i], "--checkpoint") == 0 ||
            strncmp(argv[i], "--checkpoint=", 13) == 0) {
            return 1;
        }
        if (strcmp(argv[i], "--agent") == 0 && i + 1 < argc &&
            strcmp(argv[i + 1], "ocn") == 0) {
            return 1;
        }
    }
    return 0;
}

/* One episode's record, kept until its chunk is written. */
struct ep_trace {
    uint8_t *action; /* [max_steps] */
    int32_t *option;
    float *po;       /* [max_steps, K] */
    float *pe;
};

static void print_world(const struct craft_world *w, uint64_t episode,
                        int action, int option, float pe)
{
    char text[CRAFT_TEXT_CAP];
    if (action < 0) {
        printf("task %s episode %llu seed %llu: start\n", w->task.name,
               (unsigned long long)episode, (unsigned long long)w->seed);
    } else {
        printf("task %s episode %llu t %d: %s (option %d, end p %.2f), k "
               "%d/%d\n",
               w->task.name, (unsigned long long)episode, w->t,
               craft_action_name(action), option, (double)pe, w->k,
               w->task.n);
    }
    if (craft_world_render_text(w, text, sizeof text) > 0) {
        fputs(text, stdout);
    }
}

int cli_craft_run_ocn(const struct cli_command *cmd, int argc, char **argv)
{
    const char *agent = "ocn", *ckpt = NULL, *tasks_text = NULL,
               *record = NULL;
    uint64_t episodes = 100;
    int sparse = 0, print = 0, n_each = CLI_N_EACH_UNSET;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_STRING("agent", "ocn", "ocn",
                   "the OCN agent (random and expert: grove craft run "
                   "--help)",
                   &agent),
        CLI_STRING_REQUIRED("checkpoint", "FILE",
                            "the trained model (grove train bc)", &ckpt),
        CLI_STRING("tasks", "LIST", NULL,
                   "tasks to play, among the checkpoint's training tasks "
                   "(default: all of them)",
                   &tasks_text),
        CLI_U64("episodes", "N", "100", "episodes per task", &episodes),
        CLI_FLAG("sparse", "sparse reward (1 only when the task is done)",
                 &sparse),
        CLI_FLAG("print", "draw the grid as text after every step",
                 &print),
        CLI_INT("n-each", "N", NULL,
                "the world the checkpoint must have been trained in (the "
                "world always comes from the checkpoint; another N is "
                "refused, exit 2)",
                &n_each),
        CLI_STRING("record", "FILE", NULL,
                   "record every episode as a replay with the option in "
                   "control, the controller's distribution and the end "
                   "probability (o, po, pe)",
                   &record),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts,
                       CLI_COMMON_SEED | CLI_COMMON_DEVICE |
                           CLI_COMMON_THREADS | CLI_COMMON_QUIET |
                           CLI_COMMON_FORCE,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (strcmp(agent, "ocn") != 0) {
        return cli_usage_error(cmd, "--agent '%s' with --checkpoint: a "
                                    "checkpoint is played by --agent ocn",
                               agent);
    }
    if (episodes < 1 || episodes > (1ull << 30)) {
        return cli_usage_error(cmd, "--episodes %llu is outside 1..2^30",
                               (unsigned long long)episodes);
    }
    struct ocn_loaded pol;
    if (cli_load_policy(ckpt, &common, &pol) < 0) {
        return cli_fail(cmd);
    }
    char asked[32];
    snprintf(asked, sizeof asked, "--n-each %d", n_each);
    rc = cli_check_file_world(cmd, ckpt, &pol.world, n_each, asked);
    if (rc != 0) {
        ocn_loaded_free(&pol);
        return rc;
    }
    struct craft_task tasks[OCN_MAX_TASKS];
    int n_tasks;
    if (tasks_text == NULL) {
        n_tasks = pol.model.cfg.n_tasks;
        for (int i = 0; i < n_tasks; i++) {
            craft_task_parse(pol.model.cfg.task_names[i], &tasks[i]);
        }
    } else {
        n_tasks = cli_parse_tasks(cmd, "--tasks", tasks_text, tasks,
                              OCN_MAX_TASKS);
        if (n_tasks < 0) {
            ocn_loaded_free(&pol);
            return CLI_EXIT_USAGE;
        }
    }
    int index[OCN_MAX_TASKS];
    if (cli_map_tasks(cmd, &pol, tasks, n_tasks, index) < 0) {
        ocn_loaded_free(&pol);
        return CLI_EXIT_FAIL;
    }
    struct craft_config base = pol.world;
    if (sparse) {
        base.reward = CRAFT_REWARD_SPARSE;
    }
    const int K = pol.model.cfg.n_options;
    struct replay_writer *wr = NULL;
    if (record != NULL) {
        struct replay_header h;
        replay_header_init(&h, &base, "ocn");
        snprintf(h.agent_checkpoint, sizeof h.agent_checkpoint, "%s", ckpt);
        h.agent_n_options = (uint32_t)K;
        snprintf(h.grove, sizeof h.grove, "%s", GROVE_VERSION);
        if (replay_writer_open(&wr, record, common.force, &h) < 0) {
            ocn_loaded_free(&pol);
            return cli_fail(cmd);
        }
    }
    uint64_t total = episodes * (uint64_t)n_tasks;
    int E = print ? 1 : (total < 256 ? (int)total : 256);
    int T_max = base.max_steps;
    struct craft_world *w = malloc((size_t)E * sizeof *w);
    float *obs = malloc((size_t)E * CRAFT_OBS_SIZE * sizeof *obs);
    int32_t *act = malloc((size_t)E * sizeof *act);
    float *end = malloc((size_t)E * sizeof *end);
    float *pic = malloc((size_t)E * K * sizeof *pic);
    uint8_t *done = malloc((size_t)E);
    struct ep_trace *tr = calloc((size_t)E, sizeof *tr);
    int ok = w && obs && act && end && pic && done && tr;
    for (int j = 0; ok && j < E; j++) {
        tr[j].action = malloc((size_t)T_max);
        tr[j].option = malloc((size_t)T_max * sizeof(int32_t));
        tr[j].po = malloc((size_t)T_max * K * sizeof(float));
        tr[j].pe = malloc((size_t)T_max * sizeof(float));
        ok = tr[j].action && tr[j].option && tr[j].po && tr[j].pe;
    }
    struct ocn_act_state st;
    memset(&st, 0, sizeof st);
    rc = ok ? ocn_act_state_init(&st, &pol.model, E)
            : gr_error(GR_ENOMEM, "out of memory for %d worlds", E);
    double *ret = calloc((size_t)n_tasks, sizeof *ret);
    double *succ = calloc((size_t)n_tasks, sizeof *succ);
    double *lens = calloc((size_t)n_tasks, sizeof *lens);
    double *switches = calloc((size_t)n_tasks, sizeof *switches);
    /* the expert on the same maps: how much of the agent's shortfall is
     * maps nobody can solve (craft.md §8; about 0.2 % of maps, 2.4 % with
     * four copies of each primitive) */
    double *expert = calloc((size_t)n_tasks, sizeof *expert);
    uint8_t *expert_actions = malloc((size_t)T_max + 1);
    if (rc == 0 &&
        (!ret || !succ || !lens || !switches || !expert || !expert_actions)) {
        rc = gr_error(GR_ENOMEM, "out of memory");
    }
    struct gr_progress prog;
    gr_progress_start(&prog, "craft run", total, "episodes",
                      common.quiet || print);
    double t0 = gr_now_seconds();
    uint64_t steps_total = 0;
    for (uint64_t c0 = 0; rc == 0 && c0 < total; c0 += (uint64_t)E) {
        int n = (int)(total - c0 < (uint64_t)E ? total - c0 : (uint64_t)E);
        for (int j = 0; j < n && rc == 0; j++) {
            uint64_t g = c0 + (uint64_t)j;
            int ti = (int)(g / episodes);
            uint64_t ep = g % episodes;
            struct craft_config cfg;
            craft_config_for_task(&base, &tasks[ti], &cfg);
            rc = craft_world_reset(&w[j], &cfg,
                                   craft_episode_seed(common.seed,
                                                      (uint64_t)ti, ep),
                                   &tasks[ti]);
            ocn_act_reset(&st, j, index[ti]);
            done[j] = 0;
            if (print) {
                print_world(&w[j], ep, -1, 0, 0.0f);
            }
        }
        for (int j = n; j < E; j++) {
            done[j] = 1; /* a last, partial chunk */
        }
        int left = n;
        while (rc == 0 && left > 0) {
            for (int j = 0; j < E; j++) {
                craft_world_observe(&w[j < n ? j : 0],
                                    obs + (int64_t)j * CRAFT_OBS_SIZE);
            }
            rc = ocn_act(&pol.model, &st, obs, act, NULL, end, pic);
            for (int j = 0; rc == 0 && j < n; j++) {
                if (done[j]) {
                    continue;
                }
                int t = w[j].t;
                tr[j].action[t] = (uint8_t)act[j];
                tr[j].option[t] = cli_argmax_f(pic + (int64_t)j * K, K);
                memcpy(tr[j].po + (int64_t)t * K, pic + (int64_t)j * K,
                       (size_t)K * sizeof(float));
                tr[j].pe[t] = end[j];
                struct craft_step s;
                rc = craft_world_step(&w[j], act[j], &s);
                if (print && rc == 0) {
                    print_world(&w[j], (c0 + (uint64_t)j) % episodes, act[j],
                                tr[j].option[t], end[j]);
                }
                if (s.terminated || s.truncated) {
                    done[j] = 1;
                    left--;
                }
            }
        }
        for (int j = 0; rc == 0 && j < n; j++) {
            uint64_t g = c0 + (uint64_t)j;
            int ti = (int)(g / episodes);
            ret[ti] += w[j].episode_return;
            succ[ti] += w[j].k >= w[j].task.n;
            lens[ti] += w[j].t;
            steps_total += (uint64_t)w[j].t;
            int sw = 0;
            for (int t = 1; t < w[j].t; t++) {
                sw += tr[j].option[t] != tr[j].option[t - 1];
            }
            switches[ti] += sw;
            /* the episode's start again: the expert plays a copy of it,
             * the replay re-simulates it step by step */
            struct craft_world x;
            int expert_length;
            rc = craft_world_reset(&x, &w[j].config, w[j].seed, &w[j].task);
            if (rc == 0) {
                int es = craft_expert_rollout(&x, expert_actions, T_max + 1,
                                              &expert_length);
                expert[ti] += es == CRAFT_EXPERT_OK;
                rc = es < 0 ? es : 0;
            }
            if (rc == 0 && wr != NULL) {
                rc = replay_writer_episode_start(wr, &x) < 0 ? -1 : 0;
                for (int t = 0; rc == 0 && t < w[j].t; t++) {
                    struct replay_option_info oi;
                    oi.has_o = 1;
                    oi.o = (uint32_t)tr[j].option[t];
                    oi.n_po = (uint32_t)K;
                    oi.po = tr[j].po + (int64_t)t * K;
                    oi.has_pe = 1;
                    oi.pe = tr[j].pe[t];
                    rc = replay_record_step(wr, &x, tr[j].action[t], &oi,
                                            NULL);
                }
            }
        }
        gr_progress_update(&prog, c0 + (uint64_t)n);
    }
    gr_progress_finish(&prog);
    double secs = gr_now_seconds() - t0;
    if (wr != NULL) {
        if (rc < 0) {
            replay_writer_abort(wr);
        } else if (replay_writer_close(wr) < 0) {
            rc = -1;
        }
    }
    if (rc == 0) {
        printf("%-12s %9s %12s %8s %12s %14s %15s\n", "task", "episodes",
               "mean_return", "success", "mean_length", "mean_switches",
               "expert_success");
        for (int ti = 0; ti < n_tasks; ti++) {
            double e = (double)episodes;
            printf("%-12s %9llu %12.4f %7.2f%% %12.2f %14.2f %14.2f%%\n",
                   tasks[ti].name, (unsigned long long)episodes, ret[ti] / e,
                   100.0 * succ[ti] / e, lens[ti] / e, switches[ti] / e,
                   100.0 * expert[ti] / e);
        }
        printf("total: %llu episodes, %llu steps in %.3f s (agent ocn, %s, "
               "greedy; switches = changes of the option in control; "
               "expert_success = the expert on the same maps)\n",
               (unsigned long long)total, (unsigned long long)steps_total,
               secs, gr_device_name(gr_ctx_device(pol.ctx)));
        if (record != NULL) {
            printf("recorded %s (agent ocn, with o/po/pe; check it with "
                   "grove replay verify)\n",
                   record);
        }
    }
    ocn_act_state_free(&st);
    for (int j = 0; tr != NULL && j < E; j++) {
        free(tr[j].action);
        free(tr[j].option);
        free(tr[j].po);
        free(tr[j].pe);
    }
    free(tr);
    free(w);
    free(obs);
    free(act);
    free(end);
    free(pic);
    free(done);
    free(ret);
    free(succ);
    free(lens);
    free(switches);
    free(expert);
    free(expert_actions);
    ocn_loaded_free(&pol);
    return rc < 0 ? cli_fail(cmd) : CLI_EXIT_OK;
}
