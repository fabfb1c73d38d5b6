/* Round trip: every field the writer takes comes back from the reader,
 * byte offsets of records match the footer index, the writer refuses
 * records out of order, and outputs are not overwritten without force. */
#include "tests/replays/replay_util.h"

#include <math.h>

#include "tests/test.h"

#define EPISODES 3
#define K_OPT 3

struct expect_step {
    uint32_t t;
    uint8_t a, d, tr;
    float r;
    uint32_t s;
    uint32_t o;
    float po[K_OPT];
    float pe;
};

static struct expect_step want[EPISODES][64];
static int want_len[EPISODES];
static uint64_t want_seed[EPISODES];
static double want_ret[EPISODES];
static int want_success[EPISODES];
static uint8_t want_state[EPISODES][CRAFT_STATE_MAX_BYTES];
static int want_state_len[EPISODES];

static void test_roundtrip(void)
{
    char path[512];
    tmp_path(path, sizeof path, "rt.replay");
    struct craft_config cfg;
    craft_config_default(&cfg);
    cfg.reward = CRAFT_REWARD_SPARSE;
    cfg.coarse_view = 0;
    cfg.primitives &= ~(1u << CRAFT_KIND_GOLD);
    cfg.max_steps = 40;
    struct craft_task task;
    CHECK(craft_task_parse("CAD", &task) == 0);

    struct replay_header h;
    replay_header_init(&h, &cfg, "ocn");
    snprintf(h.agent_checkpoint, sizeof h.agent_checkpoint,
             "runs/x/ckpt 1.msgpack");
    h.agent_n_options = K_OPT;
    h.keyframe_every = 5;
    snprintf(h.grove, sizeof h.grove, "0.1.0 (abc)");
    snprintf(h.created, sizeof h.created, "2026-11-23T03:48:28Z");

    struct replay_writer *w;
    CHECK(replay_writer_open(&w, path, 0, &h) == 0);
    for (int e = 0; e < EPISODES; e++) {
        struct craft_world world;
        want_seed[e] = 0xfedcba9876543210ull + (uint64_t)e * 77;
        CHECK(craft_world_reset(&world, &cfg, want_seed[e], &task) == 0);
        want_state_len[e] = craft_state_bytes(&world, want_state[e],
                                              CRAFT_STATE_MAX_BYTES);
        CHECK(replay_writer_episode_start(w, &world) == e);
        int t = 0;
        struct craft_step st;
        do {
            /* episode 0: expert (terminates); others: a fixed cycle that
             * runs into the time limit (truncated) */
            int a = 0, sub = 0;
            if (e == 0) {
                CHECK(craft_expert_act(&world, &a, &sub) == CRAFT_EXPERT_OK);
            } else {
                a = (t * 7 + e) % 4; /* moves only: nothing picked up */
            }
            struct replay_option_info opt;
            struct expect_step *x = &want[e][t];
            x->o = (uint32_t)((t + e) % K_OPT);
            for (int i = 0; i < K_OPT; i++) {
                x->po[i] = (float)(i + 1) / 7.0f + (float)t * 1e-3f;
            }
            x->pe = 1.0f / (float)(t + 3);
            opt.has_o = 1;
            opt.o = x->o;
            opt.n_po = K_OPT;
            opt.po = x->po;
            opt.has_pe = (t % 2) == 0; /* present on every other step */
            opt.pe = x->pe;
            CHECK(replay_record_step(w, &world, a, &opt, &st) == 0);
            x->t = (uint32_t)t;
            x->a = (uint8_t)a;
            x->r = st.reward;
            x->d = (uint8_t)(st.terminated || st.truncated);
            x->tr = (uint8_t)(st.truncated != 0);
            x->s = (uint32_t)st.subtask;
            t++;
        } while (!st.terminated && !st.truncated);
        want_len[e] = t;
        want_ret[e] = world.episode_return;
        want_success[e] = world.k >= world.task.n;
    }
    CHECK(want_success[0] == 1 && want_success[1] == 0);
    CHECK(want_len[1] == 40);
    uint64_t size_before_close = replay_writer_offset(w);
    CHECK(size_before_close > 0);
    CHECK(replay_writer_close(w) == 0);

    /* read back, with re-simulation */
    struct replay_reader *r;
    CHECK(replay_reader_open(&r, path, REPLAY_READ_VERIFY) == 0);
    if (r == NULL) {
        fprintf(stderr, "%s\n", gr_last_error());
        return;
    }
    struct replay_record rec;
    int rc, n_rec = 0, e = -1, t = 0, n_key = 0;
    uint64_t prev_end = 0, key_off[64];
    uint32_t key_ep[64], key_t[64];
    uint64_t steps = 0;
    while ((rc = replay_reader_next(r, &rec)) > 0) {
        CHECK_EQ_U64(rec.offset, prev_end); /* objects are contiguous */
        prev_end = rec.offset + rec.size;
        n_rec++;
        switch (rec.type) {
        case REPLAY_RECORD_HEADER: {
            const struct replay_header *g = rec.header;
            CHECK(n_rec == 1 && rec.offset == 0);
            CHECK(g->version == 1);
            CHECK(strcmp(g->env, "craft") == 0);
            CHECK(strcmp(g->recipes, "ompn") == 0);
            CHECK(g->env_config.width == 10 && g->env_config.height == 10);
            CHECK(g->env_config.primitives == cfg.primitives);
            CHECK(g->env_config.n_each == 1 && g->env_config.workshops);
            CHECK(g->env_config.treasure == CRAFT_TREASURE_NONE);
            CHECK(g->env_config.coarse_view == 0);
            CHECK(g->env_config.max_steps == 40);
            CHECK(g->env_config.reward == CRAFT_REWARD_SPARSE);
            CHECK(strcmp(g->agent_kind, "ocn") == 0);
            CHECK(strcmp(g->agent_checkpoint, "runs/x/ckpt 1.msgpack") == 0);
            CHECK(g->agent_n_options == K_OPT);
            CHECK(strcmp(g->created, "2026-11-23T03:48:28Z") == 0);
            CHECK(strcmp(g->grove, "0.1.0 (abc)") == 0);
            CHECK(g->keyframe_every == 5);
            break;
        }
        case REPLAY_RECORD_EPISODE_START:
            e++;
            t = 0;
            CHECK(rec.start.episode == (uint32_t)e);
            CHECK_EQ_U64(rec.start.seed, want_seed[e]);
            CHECK(rec.start.task.n == 3);
            CHECK(strcmp(rec.start.task.name, "CAD") == 0);
            for (int i = 0; i < 3; i++) {
                CHECK(rec.start.task.sub[i].op == task.sub[i].op &&
                      rec.start.task.sub[i].kind == task.sub[i].kind);
            }
            break;
        case REPLAY_RECORD_KEYFRAME:
            CHECK(rec.keyframe.episode == (uint32_t)e);
            CHECK(rec.keyframe.t == (uint32_t)t);
            CHECK(t % 5 == 0);
            if (t == 0) {
                CHECK(rec.keyframe.state_len == (size_t)want_state_len[e]);
                CHECK(memcmp(rec.keyframe.state, want_state[e],
                             rec.keyframe.state_len) == 0);
            }
            CHECK_EQ_U64(rec.keyframe.hash,
                         gr_fnv1a64(rec.keyframe.state,
                                    rec.keyframe.state_len));
            if (n_key < 64) {
                key_off[n_key] = rec.offset;
                key_ep[n_key] = (uint32_t)e;
                key_t[n_key] = (uint32_t)t;
            }
            n_key++;
            break;
        case REPLAY_RECORD_STEP: {
            const struct expect_step *x = &want[e][t];
            const struct replay_step *s = &rec.step;
            CHECK(s->episode == (uint32_t)e);
            CHECK(s->t == x->t && s->a == x->a && s->r == x->r);
            CHECK(s->d == x->d && s->tr == x->tr && s->s == x->s);
            CHECK(s->has_o && s->o == x->o);
            CHECK(s->n_po == K_OPT);
            for (int i = 0; i < K_OPT && s->po != NULL; i++) {
                CHECK(s->po[i] == x->po[i]); /* float32 exactly */
            }
            CHECK(s->has_pe == ((t % 2) == 0));
            if (s->has_pe) {
                CHECK(s->pe == x->pe);
            }
            const struct craft_world *before = replay_reader_world_before(r);
            const struct craft_world *after = replay_reader_world(r);
            CHECK(before != NULL && after != NULL);
            if (before != NULL && after != NULL) {
                CHECK(before->t == t && after->t == t + 1);
            }
            t++;
            steps++;
            break;
        }
        case REPLAY_RECORD_EPISODE_END:
            CHECK(rec.end.episode == (uint32_t)e);
            CHECK(rec.end.length == (uint32_t)want_len[e]);
            CHECK(rec.end.episode_return == want_ret[e]);
            CHECK(rec.end.success == want_success[e]);
            CHECK(t == want_len[e]);
            break;
        case REPLAY_RECORD_FOOTER:
            CHECK(rec.footer.episodes == EPISODES);
            CHECK(rec.footer.steps == steps);
            CHECK(rec.footer.n_index == (size_t)n_key);
            for (size_t i = 0; i < rec.footer.n_index && i < 64; i++) {
                CHECK(rec.footer.index[i].episode == key_ep[i]);
                CHECK(rec.footer.index[i].t == key_t[i]);
                CHECK_EQ_U64(rec.footer.index[i].offset, key_off[i]);
            }
            CHECK_EQ_U64(rec.offset, size_before_close);
            break;
        }
    }
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    CHECK(e == EPISODES - 1);
    struct replay_reader_status st;
    replay_reader_status(r, &st);
    CHECK(st.complete && st.crc_ok && !st.truncated);
    CHECK(st.episodes == EPISODES && st.steps == steps);
    CHECK(st.file_size == prev_end + REPLAY_TRAILER_SIZE);

    /* the footer through the trailer, then seek to the last keyframe */
    struct replay_footer f;
    CHECK(replay_reader_footer(r, &f) == 0);
    CHECK(f.episodes == EPISODES && f.steps == steps &&
          f.n_index == (size_t)n_key);
    if (f.n_index > 1) {
        struct replay_index_entry last = f.index[f.n_index - 1];
        CHECK_MSG(replay_reader_seek(r, &last) == 0, "%s", gr_last_error());
        CHECK(replay_reader_next(r, &rec) == 1);
        CHECK(rec.type == REPLAY_RECORD_KEYFRAME && rec.offset == last.offset);
        int steps_after = 0;
        while ((rc = replay_reader_next(r, &rec)) > 0) {
            if (rec.type == REPLAY_RECORD_STEP) {
                const struct expect_step *x = &want[last.episode][rec.step.t];
                CHECK(rec.step.a == x->a && rec.step.r == x->r);
                steps_after++;
            }
        }
        CHECK_MSG(rc == 0, "%s", gr_last_error());
        CHECK(steps_after == want_len[last.episode] - (int)last.t);
        replay_reader_status(r, &st);
        CHECK(st.seeked && !st.crc_ok);
    }
    replay_reader_close(r);

    /* replay_verify_file agrees */
    struct replay_verify_result vr;
    CHECK(replay_verify_file(path, &vr) == 0);
    CHECK(vr.episodes == EPISODES && vr.steps == steps &&
          vr.keyframes == (uint64_t)n_key && vr.successes == 1);

    /* no overwrite without force; with force it is replaced */
    CHECK(replay_writer_open(&w, path, 0, &h) == GR_EEXIST);
    CHECK_STR_CONTAINS(gr_last_error(), "--force");
    CHECK(replay_writer_open(&w, path, 1, &h) == 0);
    CHECK(replay_writer_close(w) == 0);
    CHECK(replay_verify_file(path, &vr) == 0 && vr.episodes == 0);
}

static void test_writer_refuses_disorder(void)
{
    char path[512];
    tmp_path(path, sizeof path, "order.replay");
    struct craft_config cfg;
    craft_config_default(&cfg);
    struct craft_task task;
    craft_task_parse("AC", &task);
    struct replay_header h;
    replay_header_init(&h, &cfg, "random");
    struct replay_writer *w;
    CHECK(replay_writer_open(&w, path, 0, &h) == 0);
    struct replay_step s;
    memset(&s, 0, sizeof s);
    CHECK(replay_writer_step(w, &s) == GR_EINVAL); /* outside an episode */
    CHECK(replay_writer_episode_start_raw(w, 5, &task) == 0);
    CHECK(replay_writer_step(w, &s) == GR_EINVAL); /* no keyframe at t=0 */
    CHECK_STR_CONTAINS(gr_last_error(), "keyframe");
    struct craft_world world;
    craft_world_reset(&world, &cfg, 5, &task);
    CHECK(replay_writer_keyframe(w, &world) == 0);
    CHECK(replay_writer_keyframe(w, &world) == GR_EINVAL); /* twice */
    s.t = 1;
    CHECK(replay_writer_step(w, &s) == GR_EINVAL); /* t skips 0 */
    s.t = 0;
    s.a = 5;
    CHECK(replay_writer_step(w, &s) == GR_EINVAL); /* no action 5 */
    s.a = 0;
    s.tr = 1;
    CHECK(replay_writer_step(w, &s) == GR_EINVAL); /* tr without d */
    s.tr = 0;
    CHECK(replay_writer_step(w, &s) == 0);
    CHECK(replay_writer_episode_end(w, 0, 1, 0) == GR_EINVAL); /* no d */
    CHECK(replay_writer_episode_start_raw(w, 6, &task) == GR_EINVAL);
    s.t = 1;
    s.d = 1;
    CHECK(replay_writer_step(w, &s) == 0);
    s.t = 2;
    CHECK(replay_writer_step(w, &s) == GR_EINVAL); /* after d */
    CHECK(replay_writer_episode_end(w, 0, 3, 1) == GR_EINVAL); /* length */
    CHECK(replay_writer_episode_end(w, 0, 2, 0) == 0);
    /* a world under another config is refused */
    struct craft_config other = cfg;
    other.max_steps = 30;
    struct craft_world w2;
    craft_world_reset(&w2, &other, 1, &task);
    CHECK(replay_writer_episode_start(w, &w2) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "config");
    /* closing with an episode open discards the file */
    CHECK(replay_writer_episode_start(w, &world) == 1);
    CHECK(replay_writer_close(w) == GR_EINVAL);
    CHECK(!gr_path_exists(path));
}

/* created: SOURCE_DATE_EPOCH when it is a decimal count of seconds, the
 * clock when it is absent or anything else. */
static void test_created_time(void)
{
    struct craft_config cfg;
    craft_config_default(&cfg);
    struct replay_header h;
    const char *old = getenv("SOURCE_DATE_EPOCH");
    char saved[64] = "";
    if (old != NULL) {
        snprintf(saved, sizeof saved, "%s", old);
    }
    setenv("SOURCE_DATE_EPOCH", "0", 1);
    replay_header_init(&h, &cfg, "random");
    CHECK_MSG(strcmp(h.created, "1970-01-01T00:00:00Z") == 0, "epoch 0: %s",
              h.created);
    setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
    replay_header_init(&h, &cfg, "random");
    CHECK_MSG(strcmp(h.created, "2023-11-14T22:13:20Z") == 0,
              "epoch 1700000000: %s", h.created);
    const char *bad[] = {"", "-5", "12x", "1e9", "99999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("SOURCE_DATE_EPOCH", bad[i], 1);
        replay_header_init(&h, &cfg, "random");
        /* the clock's year, not 1970 or a parse of the bad value */
        CHECK_MSG(strncmp(h.created, "20", 2) == 0 &&
                      strcmp(h.created, "2023-11-14T22:13:20Z") != 0,
                  "SOURCE_DATE_EPOCH '%s': %s", bad[i], h.created);
    }
    if (old != NULL) {
        setenv("SOURCE_DATE_EPOCH", saved, 1);
    } else {
        unsetenv("SOURCE_DATE_EPOCH");
    }
}

int main(void)
{
    tmp_init();
    test_roundtrip();
    test_writer_refuses_disorder();
    test_created_time();
    tmp_cleanup();
    return test_report("replays_roundtrip");
}
