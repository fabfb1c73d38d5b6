/* grove craft demos: expert demonstrations of craft.md §10 as a replay.
 * grove replay info | verify | dump: look into replays (spec/replay.md).
 *
 * demos: for each task of --tasks, demonstrations n = 0, 1, 2, ... use the
 * seeds of craft.md §9 (craft_demo_seed(S, task name, n)); a map the expert
 * cannot finish is skipped and counted; N demonstrations are recorded per
 * task, in the order of --tasks. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <msgpack.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/build_info.h"
#include "cli/commands.h"
#include "cli/craft_common.h"
#include "core/error.h"
#include "core/files.h"
#include "core/progress.h"
#include "envs/craft.h"
#include "envs/expert.h"
#include "replays/replay.h"

#define MAX_TASKS 64

static void version_string(char *buf, size_t cap)
{
    snprintf(buf, cap, "%s (%s)", GROVE_VERSION, GROVE_GIT_DESCRIBE);
}

/* ---- grove craft demos ------------------------------------------------------ */

struct demo_stats {
    uint64_t episodes, steps, skipped, max_len, successes;
    double return_sum;
};

static int run_craft_demos(const struct cli_command *cmd, int argc,
                           char **argv)
{
    const char *tasks_text = "AC,CD";
    uint64_t episodes = 100;
    int every = REPLAY_KEYFRAME_EVERY_DEFAULT;
    int n_each = CLI_N_EACH_UNSET;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_STRING("tasks", "LIST", "AC,CD",
                   "comma-separated tasks: OCN letters (A wood, B gold, "
                   "C iron, D grass) or OMPN names such as make-bed",
                   &tasks_text),
        CLI_U64("episodes", "N", "100", "demonstrations per task", &episodes),
        CLI_INT("keyframe-every", "K", "64",
                "a keyframe (full state) every K steps, and at t = 0",
                &every),
        CLI_INT("n-each", "N", NULL,
                "copies of each primitive on a map (default: 4 for S1/S2 "
                "task sets, i.e. OCN letters only (docs/ocn/ppo.md), else 1; "
                "docs/craft.md; kept in the replay's header, so train bc "
                "--demos trains in that world)",
                &n_each),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts,
                       CLI_COMMON_SEED | CLI_COMMON_OUT_REQUIRED |
                           CLI_COMMON_FORCE | CLI_COMMON_QUIET,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (episodes < 1 || episodes > (1ull << 32)) {
        return cli_usage_error(cmd, "--episodes %llu is outside 1..2^32",
                               (unsigned long long)episodes);
    }
    if (every < 1) {
        return cli_usage_error(cmd, "--keyframe-every %d is not positive",
                               every);
    }
    char list[1024];
    if (strlen(tasks_text) >= sizeof list) {
        return cli_usage_error(cmd, "--tasks is longer than %zu characters",
                               sizeof list - 1);
    }
    snprintf(list, sizeof list, "%s", tasks_text);
    char *items[MAX_TASKS];
    int n_tasks = cli_split_list(list, items, MAX_TASKS);
    if (n_tasks < 1) {
        return cli_usage_error(cmd, "--tasks '%s' is not a comma-separated "
                               "list of 1..%d tasks", tasks_text, MAX_TASKS);
    }
    static struct craft_task tasks[MAX_TASKS];
    struct craft_config base, cfg;
    craft_config_default(&base);
    for (int i = 0; i < n_tasks; i++) {
        if (craft_task_parse(items[i], &tasks[i]) < 0) {
            return cli_usage_error(cmd, "--tasks: %s", gr_last_error());
        }
    }
    /* S1/S2 task sets default to their four-copy world (ocn.md §6.1) */
    rc = cli_world_n_each(cmd,
                          n_each != CLI_N_EACH_UNSET ? n_each
                                       : cli_default_n_each(tasks, n_tasks),
                          &base);
    if (rc != 0) {
        return rc;
    }
    for (int i = 0; i < n_tasks; i++) {
        struct craft_config c;
        craft_config_for_task(&base, &tasks[i], &c);
        if (i == 0) {
            cfg = c;
        } else if (memcmp(&c, &cfg, sizeof c) != 0) {
            return cli_usage_error(cmd, "--tasks: '%s' needs another Craft "
                                   "config than '%s' (a replay has one); "
                                   "record them separately",
                                   tasks[i].name, tasks[0].name);
        }
    }

    struct replay_header h;
    replay_header_init(&h, &cfg, "expert");
    h.keyframe_every = (uint32_t)every;
    version_string(h.grove, sizeof h.grove);
    struct replay_writer *w;
    if (replay_writer_open(&w, common.out, common.force, &h) < 0) {
        return cli_fail(cmd);
    }
    struct demo_stats stats[MAX_TASKS];
    memset(stats, 0, sizeof stats);
    uint64_t total = episodes * (uint64_t)n_tasks;
    struct gr_progress progress;
    gr_progress_start(&progress, "craft demos", total, "demos", common.quiet);
    static uint8_t actions[CRAFT_MAX_STEPS_LIMIT];
    uint64_t done = 0;
    for (int ti = 0; ti < n_tasks; ti++) {
        struct demo_stats *s = &stats[ti];
        /* a task the expert never finishes must not loop forever */
        uint64_t max_skips = 1000 + 10 * episodes;
        for (uint64_t n = 0; s->episodes < episodes; n++) {
            struct craft_world world;
            uint64_t seed = craft_demo_seed(common.seed, tasks[ti].name, n);
            if (craft_world_reset(&world, &cfg, seed, &tasks[ti]) < 0) {
                replay_writer_abort(w);
                gr_progress_finish(&progress);
                return cli_fail(cmd);
            }
            int len = 0;
            int st = craft_expert_rollout(&world, actions,
                                          (int)sizeof actions, &len);
            if (st != CRAFT_EXPERT_OK) {
                if (++s->skipped > max_skips) {
                    replay_writer_abort(w);
                    gr_progress_finish(&progress);
                    gr_error(GR_EINVAL, "task '%s': the expert could not "
                             "finish %llu maps (%llu done); it plans no "
                             "bridge or axe (docs/craft.md)",
                             tasks[ti].name, (unsigned long long)s->skipped,
                             (unsigned long long)s->episodes);
                    return cli_fail(cmd);
                }
                continue;
            }
            if (replay_writer_episode_start(w, &world) < 0) {
                replay_writer_abort(w);
                gr_progress_finish(&progress);
                return cli_fail(cmd);
            }
            struct craft_step step;
            for (int i = 0; i < len; i++) {
                if (replay_record_step(w, &world, actions[i], NULL, &step) <
                    0) {
                    replay_writer_abort(w);
                    gr_progress_finish(&progress);
                    return cli_fail(cmd);
                }
            }
            s->episodes++;
            s->steps += (uint64_t)len;
            s->successes += (uint64_t)(step.terminated != 0);
            s->return_sum += world.episode_return;
            if ((uint64_t)len > s->max_len) {
                s->max_len = (uint64_t)len;
            }
            gr_progress_update(&progress, ++done);
        }
    }
    gr_progress_finish(&progress);
    if (replay_writer_close(w) < 0) {
        return cli_fail(cmd);
    }
    struct stat fst;
    uint64_t bytes = stat(common.out, &fst) == 0 ? (uint64_t)fst.st_size : 0;
    printf("%-12s %9s %8s %12s %11s %10s %8s %8s\n", "task", "episodes",
           "steps", "mean_length", "max_length", "mean_ret", "success",
           "skipped");
    struct demo_stats all;
    memset(&all, 0, sizeof all);
    for (int ti = 0; ti < n_tasks; ti++) {
        const struct demo_stats *s = &stats[ti];
        double e = s->episodes > 0 ? (double)s->episodes : 1.0;
        printf("%-12s %9" PRIu64 " %8" PRIu64 " %12.2f %11" PRIu64
               " %10.3f %7.1f%% %8" PRIu64 "\n",
               tasks[ti].name, s->episodes, s->steps, (double)s->steps / e,
               s->max_len, s->return_sum / e,
               100.0 * (double)s->successes / e, s->skipped);
        all.episodes += s->episodes;
        all.steps += s->steps;
        all.skipped += s->skipped;
        all.successes += s->successes;
        all.return_sum += s->return_sum;
        if (s->max_len > all.max_len) {
            all.max_len = s->max_len;
        }
    }
    double e = all.episodes > 0 ? (double)all.episodes : 1.0;
    printf("%-12s %9" PRIu64 " %8" PRIu64 " %12.2f %11" PRIu64
           " %10.3f %7.1f%% %8" PRIu64 "\n",
           "total", all.episodes, all.steps, (double)all.steps / e,
           all.max_len, all.return_sum / e,
           100.0 * (double)all.successes / e, all.skipped);
    printf("wrote %s (%" PRIu64 " bytes, agent expert, seed %" PRIu64
           ", keyframe every %d steps)\n",
           common.out, bytes, common.seed, every);
    return CLI_EXIT_OK;
}

const struct cli_command cmd_craft_demos = {
    "craft demos",
    "Record N expert demonstrations per task as a replay.",
    "",
    "Demonstration n of a task uses seed mix64(mix64(S ^ (0xD3 << 56 | tau)) "
    "^ n), tau = low 32 bits of FNV-1a 64 of the task's name (docs/craft.md); "
    "maps the expert cannot finish are skipped and counted. The replay "
    "(agent kind 'expert') is written to FILE.tmp.PID and renamed when "
    "complete; check it with 'grove replay verify'.\n\n"
    "Example:\n"
    "  grove craft demos --tasks AC,CD --episodes 10 --out demos.replay",
    run_craft_demos,
};

/* ---- grove replay info -------------------------------------------------------- */

struct task_info {
    char name[CRAFT_TASK_NAME_CAP];
    uint64_t episodes, steps, successes, max_len;
    double return_sum;
};

static int run_replay_info(const struct cli_command *cmd, int argc,
                           char **argv)
{
    int recover = 0;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_FLAG("recover",
                 "read the complete episodes of a truncated file",
                 &recover),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts, 0, 1, 1, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    const char *path = argv[first];
    struct replay_reader *r;
    if (replay_reader_open(&r, path, recover ? REPLAY_READ_RECOVER : 0) < 0) {
        return cli_fail(cmd);
    }
    static struct task_info tasks[MAX_TASKS];
    int n_tasks = 0, cur = -1, other = 0;
    struct replay_record rec;
    uint64_t keyframes = 0, opt_steps = 0;
    while ((rc = replay_reader_next(r, &rec)) > 0) {
        if (rec.type == REPLAY_RECORD_EPISODE_START) {
            cur = -1;
            for (int i = 0; i < n_tasks; i++) {
                if (strcmp(tasks[i].name, rec.start.task.name) == 0) {
                    cur = i;
                }
            }
            if (cur < 0 && n_tasks < MAX_TASKS) {
                cur = n_tasks++;
                memset(&tasks[cur], 0, sizeof tasks[cur]);
                snprintf(tasks[cur].name, sizeof tasks[cur].name, "%s",
                         rec.start.task.name);
            }
            if (cur < 0) {
                other = 1;
            }
        } else if (rec.type == REPLAY_RECORD_KEYFRAME) {
            keyframes++;
        } else if (rec.type == REPLAY_RECORD_STEP) {
            opt_steps += rec.step.has_o || rec.step.n_po > 0;
        } else if (rec.type == REPLAY_RECORD_EPISODE_END && cur >= 0) {
            struct task_info *t = &tasks[cur];
            t->episodes++;
            t->steps += rec.end.length;
            t->successes += rec.end.success;
            t->return_sum += rec.end.episode_return;
            if (rec.end.length > t->max_len) {
                t->max_len = rec.end.length;
            }
        }
    }
    if (rc < 0) {
        replay_reader_close(r);
        return cli_fail(cmd);
    }
    const struct replay_header *h = replay_reader_header(r);
    const struct craft_config *c = &h->env_config;
    struct replay_reader_status st;
    replay_reader_status(r, &st);
    char prims[128];
    craft_primitives_format(c->primitives, prims, sizeof prims);
    printf("file:       %s (%" PRIu64 " bytes)\n", path, st.file_size);
    if (st.complete) {
        printf("status:     complete, CRC-32 %s\n",
               st.crc_ok ? "ok" : "unchecked");
    } else {
        printf("status:     truncated at byte %" PRIu64 "; %" PRIu64
               " complete episodes recovered\n",
               st.truncated_at, st.episodes);
    }
    printf("format:     %s version %" PRIu32 ", written by grove %s on %s\n",
           REPLAY_MAGIC, h->version, h->grove, h->created);
    printf("env:        %s %dx%d, primitives %s, n_each %d, workshops %s, "
           "treasure %s, coarse_view %s, max_steps %d, reward %s, "
           "recipes %s\n",
           h->env, c->width, c->height, prims, c->n_each,
           c->workshops ? "on" : "off", craft_treasure_name(c->treasure),
           c->coarse_view ? "on" : "off", c->max_steps,
           craft_reward_name(c->reward), h->recipes);
    char ckpt[4 * sizeof h->agent_checkpoint]; /* bytes not UTF-8: \xNN */
    gr_escape_bytes(h->agent_checkpoint, ckpt, sizeof ckpt);
    printf("agent:      %s, checkpoint %s, options %" PRIu32 "%s\n",
           h->agent_kind, ckpt[0] ? ckpt : "-", h->agent_n_options,
           opt_steps ? " (recorded per step)" : "");
    if (h->keyframe_every > 0) {
        printf("keyframes:  %" PRIu64 ", at t = 0 and every %" PRIu32
               " steps\n", keyframes, h->keyframe_every);
    } else {
        printf("keyframes:  %" PRIu64 "\n", keyframes);
    }
    printf("episodes:   %" PRIu64 ", steps %" PRIu64 "\n", st.episodes,
           st.steps);
    printf("%-12s %9s %8s %11s %8s %12s %11s\n", "task", "episodes", "steps",
           "mean_return", "success", "mean_length", "max_length");
    for (int i = 0; i < n_tasks; i++) {
        const struct task_info *t = &tasks[i];
        double e = t->episodes > 0 ? (double)t->episodes : 1.0;
        printf("%-12s %9" PRIu64 " %8" PRIu64 " %11.3f %7.1f%% %12.2f %11"
               PRIu64 "\n",
               t->name, t->episodes, t->steps, t->return_sum / e,
               100.0 * (double)t->successes / e, (double)t->steps / e,
               t->max_len);
    }
    if (other) {
        printf("(more than %d distinct tasks: the rest are not listed)\n",
               MAX_TASKS);
    }
    replay_reader_close(r);
    return CLI_EXIT_OK;
}

const struct cli_command cmd_replay_info = {
    "replay info",
    "Describe a replay: header, episodes, steps, return and success per task.",
    "FILE",
    "Reads and checks the whole file (magic, version, keys, order, keyframe "
    "hashes against their bytes, footer, CRC-32, trailer) without "
    "re-simulating; 'grove replay verify' re-simulates.\n\n"
    "Example:\n"
    "  grove replay info demos.replay",
    run_replay_info,
};

/* ---- grove replay verify ------------------------------------------------------ */

static int run_replay_verify(const struct cli_command *cmd, int argc,
                             char **argv)
{
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {CLI_END};
    int rc = cli_parse(cmd, opts, CLI_COMMON_QUIET, 1, 1, argc, argv, &common,
                       &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    const char *path = argv[first];
    double t0 = gr_now_seconds();
    struct replay_verify_result res;
    if (replay_verify_file(path, &res) < 0) {
        return cli_fail(cmd);
    }
    double secs = gr_now_seconds() - t0;
    printf("%s: ok: %" PRIu64 " episodes, %" PRIu64 " steps, %" PRIu64
           " keyframe hashes re-simulated, CRC-32 0x%08" PRIx32
           " matches (%.2f s)\n",
           path, res.episodes, res.steps, res.keyframes, res.crc32, secs);
    return CLI_EXIT_OK;
}

const struct cli_command cmd_replay_verify = {
    "replay verify",
    "Re-simulate a replay: exit 0 only if every keyframe hash reproduces.",
    "FILE",
    "Rebuilds every episode from the header's env_config, the episode's "
    "seed and task, steps it with the recorded actions, and compares every "
    "keyframe's state hash, every reward, done/truncated flag and subtask "
    "index, and each episode's end; then the footer, CRC-32 and trailer. "
    "A mismatch names the episode, the step and the byte offset; exit 1. "
    "A truncated file is refused (info, dump, export and play read its "
    "complete episodes with --recover).\n\n"
    "Example:\n"
    "  grove replay verify demos.replay",
    run_replay_verify,
};

/* ---- grove replay dump ---------------------------------------------------------- */

static void print_float(float v)
{
    printf("%.9g", (double)v);
}

/* Prints a decoded MessagePack object as JSON (bin as an array of bytes). */
static void print_object_json(const msgpack_object *o)
{
    switch (o->type) {
    case MSGPACK_OBJECT_NIL:
        printf("null");
        break;
    case MSGPACK_OBJECT_BOOLEAN:
        printf(o->via.boolean ? "true" : "false");
        break;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        printf("%" PRIu64, o->via.u64);
        break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        printf("%" PRId64, o->via.i64);
        break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        printf("%.17g", o->via.f64);
        break;
    case MSGPACK_OBJECT_BIN:
        putchar('[');
        for (uint32_t i = 0; i < o->via.bin.size; i++) {
            printf(i ? ",%u" : "%u", (unsigned)(uint8_t)o->via.bin.ptr[i]);
        }
        putchar(']');
        break;
    case MSGPACK_OBJECT_ARRAY:
        putchar('[');
        for (uint32_t i = 0; i < o->via.array.size; i++) {
            if (i) {
                putchar(',');
            }
            print_object_json(&o->via.array.ptr[i]);
        }
        putchar(']');
        break;
    default: /* not in a Craft state (str, map, ext) */
        printf("null");
        break;
    }
}

struct dump_opts {
    int json, obs, state;
};

static int dump_keyframe(const struct dump_opts *d,
                         const struct replay_record *rec)
{
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    /* the bytes are at most CRAFT_STATE_MAX_BYTES and their hash checked */
    int rc = msgpack_unpack_next(&u, (const char *)rec->keyframe.state,
                                 rec->keyframe.state_len, &off);
    if (rc != MSGPACK_UNPACK_SUCCESS || off != rec->keyframe.state_len ||
        u.data.type != MSGPACK_OBJECT_ARRAY) {
        msgpack_unpacked_destroy(&u);
        return gr_error(GR_EFORMAT, "keyframe at byte %" PRIu64 " (episode %"
                        PRIu32 ", t %" PRIu32 "): its state bytes are not "
                        "one MessagePack array", rec->offset,
                        rec->keyframe.episode, rec->keyframe.t);
    }
    if (d->json) {
        printf("{\"episode\":%" PRIu32 ",\"t\":%" PRIu32 ",\"hash\":%" PRIu64
               ",\"state\":",
               rec->keyframe.episode, rec->keyframe.t, rec->keyframe.hash);
        print_object_json(&u.data);
        printf("}\n");
    } else {
        printf("episode %" PRIu32 " t %" PRIu32 " hash 0x%016" PRIx64
               " state ",
               rec->keyframe.episode, rec->keyframe.t, rec->keyframe.hash);
        print_object_json(&u.data);
        putchar('\n');
    }
    msgpack_unpacked_destroy(&u);
    return 0;
}

static void dump_step(const struct dump_opts *d, const struct replay_step *s,
                      const float *obs)
{
    if (d->json) {
        printf("{\"episode\":%" PRIu32 ",\"t\":%" PRIu32 ",\"a\":%u,\"r\":",
               s->episode, s->t, (unsigned)s->a);
        print_float(s->r);
        printf(",\"d\":%s,\"tr\":%s,\"s\":%" PRIu32, s->d ? "true" : "false",
               s->tr ? "true" : "false", s->s);
        if (s->has_o) {
            printf(",\"o\":%" PRIu32, s->o);
        }
        if (s->n_po > 0) {
            printf(",\"po\":[");
            for (uint32_t i = 0; i < s->n_po; i++) {
                if (i) {
                    putchar(',');
                }
                print_float(s->po[i]);
            }
            putchar(']');
        }
        if (s->has_pe) {
            printf(",\"pe\":");
            print_float(s->pe);
        }
    } else {
        printf("episode %" PRIu32 " t %" PRIu32 " a %u %-5s r ", s->episode,
               s->t, (unsigned)s->a, craft_action_name(s->a));
        print_float(s->r);
        printf(" d %d tr %d s %" PRIu32, s->d, s->tr, s->s);
        if (s->has_o) {
            printf(" o %" PRIu32, s->o);
        }
        if (s->n_po > 0) {
            printf(" po ");
            for (uint32_t i = 0; i < s->n_po; i++) {
                if (i) {
                    putchar(',');
                }
                print_float(s->po[i]);
            }
        }
        if (s->has_pe) {
            printf(" pe ");
            print_float(s->pe);
        }
    }
    if (obs != NULL) {
        printf(d->json ? ",\"obs\":[" : " obs [");
        int n = 0;
        for (int i = 0; i < CRAFT_OBS_SIZE; i++) {
            if (obs[i] != 0.0f) {
                printf(n++ ? ",[%d," : "[%d,", i);
                print_float(obs[i]);
                putchar(']');
            }
        }
        putchar(']');
    }
    printf(d->json ? "}\n" : "\n");
}

static int run_replay_dump(const struct cli_command *cmd, int argc,
                           char **argv)
{
    int64_t episode = -1;
    uint64_t episode_opt = UINT64_MAX;
    int recover = 0;
    struct dump_opts d = {0, 0, 0};
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_U64("episode", "E", NULL, "only episode E (from 0)",
                &episode_opt),
        CLI_FLAG("json", "one JSON object per line: the step's keys t, a, "
                         "r, d, tr, s (o, po, pe when present) and episode",
                 &d.json),
        CLI_FLAG("obs", "add the observation before the step's action as "
                        "[index, value] pairs of its non-zeros "
                        "(re-simulates)",
                 &d.obs),
        CLI_FLAG("state", "print each keyframe's decoded state array "
                          "(docs/craft.md) instead of the steps",
                 &d.state),
        CLI_FLAG("recover",
                 "read the complete episodes of a truncated file",
                 &recover),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts, 0, 1, 1, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (episode_opt != UINT64_MAX) {
        if (episode_opt > UINT32_MAX) {
            return cli_usage_error(cmd, "--episode %llu is too large",
                                   (unsigned long long)episode_opt);
        }
        episode = (int64_t)episode_opt;
    }
    if (d.obs && d.state) {
        return cli_usage_error(cmd, "--obs and --state do not go together "
                               "(--state prints keyframes, not steps)");
    }
    const char *path = argv[first];
    unsigned flags = (recover ? REPLAY_READ_RECOVER : 0) |
                     (d.obs ? REPLAY_READ_VERIFY : 0);
    struct replay_reader *r;
    if (replay_reader_open(&r, path, flags) < 0) {
        return cli_fail(cmd);
    }
    struct replay_record rec;
    float obs[CRAFT_OBS_SIZE];
    int seen_episode = 0;
    uint64_t episodes = 0;
    while ((rc = replay_reader_next(r, &rec)) > 0) {
        if (rec.type == REPLAY_RECORD_EPISODE_START) {
            episodes++;
            if (episode >= 0 && rec.start.episode > (uint32_t)episode) {
                break; /* past the one asked for */
            }
            seen_episode |= episode < 0 || rec.start.episode ==
                                               (uint32_t)episode;
        } else if (rec.type == REPLAY_RECORD_KEYFRAME && d.state) {
            if (episode >= 0 && rec.keyframe.episode != (uint32_t)episode) {
                continue;
            }
            if (dump_keyframe(&d, &rec) < 0) {
                rc = -1;
                break;
            }
        } else if (rec.type == REPLAY_RECORD_STEP && !d.state) {
            if (episode >= 0 && rec.step.episode != (uint32_t)episode) {
                continue;
            }
            const float *o = NULL;
            if (d.obs) {
                const struct craft_world *before =
                    replay_reader_world_before(r);
                if (before != NULL) {
                    craft_world_observe(before, obs);
                    o = obs;
                }
            }
            dump_step(&d, &rec.step, o);
        }
    }
    if (rc < 0) {
        replay_reader_close(r);
        fflush(stdout);
        return cli_fail(cmd);
    }
    replay_reader_close(r);
    if (episode >= 0 && !seen_episode) {
        gr_error(GR_EINVAL, "%s has no episode %lld (it has %llu)", path,
                 (long long)episode, (unsigned long long)episodes);
        return cli_fail(cmd);
    }
    return CLI_EXIT_OK;
}

const struct cli_command cmd_replay_dump = {
    "replay dump",
    "Print a replay's steps (or keyframe states) one line each.",
    "FILE",
    "Nothing but the lines goes to stdout. Text lines read 'episode E t T "
    "a A NAME r R d D tr TR s S' (then o, po, pe when recorded, and obs "
    "with --obs); --json prints the same as one object per line. --state "
    "prints each keyframe instead: episode, t, hash and the decoded state "
    "array [W, H, grid bytes, [x, y, dir], inventory, k, t, [[op, kind], "
    "...]]. Episodes and options count from 0 (replays/README.md).\n\n"
    "Example:\n"
    "  grove replay dump demos.replay --episode 0 --json",
    run_replay_dump,
};
