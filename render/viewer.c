/* The replay viewer, replay export and human play (render/viewer.h). */
#define _POSIX_C_SOURCE 200809L
#include "render/viewer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/files.h"
#include "core/progress.h"
#include "render/font.h"
#include "render/frame.h"
#include "render/image.h"
#include "render/pngfile.h"
#include "render/window.h"
#include "replays/replay.h"

#define MAX_VIEW_STEPS ((size_t)64 << 20) /* steps kept in memory */
#define MAX_SCRIPT_KEYS 4096
#define LOOP_FPS 60

static const char *const replay_hint =
    "space pause  <- -> step  +/- speed  home/end  n/p episode  s shot  q quit";
static const char *const live_hint =
    "arrows move  space use  backspace new episode  q quit";

void render_view_options_default(struct render_view_options *o)
{
    memset(o, 0, sizeof *o);
    o->headless = RENDER_HEADLESS_AUTO;
    o->shot_dir = ".";
    o->speed = 8;
}

/* ---- a replay in memory ------------------------------------------------------ */

struct vstep {
    float r;
    float pe;  /* NaN when absent */
    int32_t s;
    int32_t o; /* -1 when absent */
    uint8_t a, d, tr;
};

struct vkey {
    uint32_t t;
    size_t off, len; /* into pool */
};

struct vepisode {
    uint64_t seed;
    struct craft_task task;
    uint32_t length;
    double ret;
    int success, ended;
    size_t step0; /* first step in steps[] */
    size_t kf0, n_kf;
};

struct vreplay {
    const char *path;
    struct replay_header header;
    struct vepisode *eps;
    size_t n_eps, cap_eps;
    struct vstep *steps;
    size_t n_steps, cap_steps;
    struct render_timeline_step *tl; /* [n_steps], built after loading */
    struct vkey *kfs;
    size_t n_kf, cap_kf;
    uint8_t *pool;
    size_t pool_len, pool_cap;
    int has_options;
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) {
        return 0;
    }
    size_t n = *cap ? *cap : 64;
    while (n < need) {
        n *= 2;
    }
    void *q = realloc(*p, n * elem);
    if (q == NULL) {
        return gr_error(GR_ENOMEM, "out of memory loading a replay");
    }
    *p = q;
    *cap = n;
    return 0;
}

static void vreplay_free(struct vreplay *v)
{
    free(v->eps);
    free(v->steps);
    free(v->tl);
    free(v->kfs);
    free(v->pool);
    memset(v, 0, sizeof *v);
}

/* Reads the whole file; any problem is the reader's error. */
static int vreplay_load(struct vreplay *v, const char *path, int recover)
{
    memset(v, 0, sizeof *v);
    v->path = path;
    struct replay_reader *r = NULL;
    int rc = replay_reader_open(&r, path, recover ? REPLAY_READ_RECOVER : 0);
    if (rc < 0) {
        return rc;
    }
    v->header = *replay_reader_header(r);
    struct replay_record rec;
    while ((rc = replay_reader_next(r, &rec)) > 0) {
        if (rec.type == REPLAY_RECORD_EPISODE_START) {
            rc = grow((void **)&v->eps, &v->cap_eps, v->n_eps + 1,
                      sizeof *v->eps);
            if (rc < 0) {
                break;
            }
            struct vepisode *e = &v->eps[v->n_eps++];
            memset(e, 0, sizeof *e);
            e->seed = rec.start.seed;
            e->task = rec.start.task;
            e->step0 = v->n_steps;
            e->kf0 = v->n_kf;
        } else if (rec.type == REPLAY_RECORD_KEYFRAME && v->n_eps > 0) {
            const struct replay_keyframe *k = &rec.keyframe;
            rc = grow((void **)&v->kfs, &v->cap_kf, v->n_kf + 1,
                      sizeof *v->kfs);
            if (rc == 0) {
                rc = grow((void **)&v->pool, &v->pool_cap,
                          v->pool_len + k->state_len, 1);
            }
            if (rc < 0) {
                break;
            }
            memcpy(v->pool + v->pool_len, k->state, k->state_len);
            v->kfs[v->n_kf].t = k->t;
            v->kfs[v->n_kf].off = v->pool_len;
            v->kfs[v->n_kf].len = k->state_len;
            v->pool_len += k->state_len;
            v->n_kf++;
            v->eps[v->n_eps - 1].n_kf++;
        } else if (rec.type == REPLAY_RECORD_STEP && v->n_eps > 0) {
            if (v->n_steps >= MAX_VIEW_STEPS) {
                rc = gr_error(GR_EINVAL, "%s: more than %zu steps, too many "
                              "to view at once", path, MAX_VIEW_STEPS);
                break;
            }
            rc = grow((void **)&v->steps, &v->cap_steps, v->n_steps + 1,
                      sizeof *v->steps);
            if (rc < 0) {
                break;
            }
            const struct replay_step *s = &rec.step;
            struct vstep *d = &v->steps[v->n_steps++];
            d->a = s->a;
            d->r = s->r;
            d->d = s->d;
            d->tr = s->tr;
            d->s = (int32_t)s->s;
            d->o = s->has_o ? (int32_t)s->o : -1;
            d->pe = s->has_pe ? s->pe : NAN;
            if (s->has_o || s->has_pe) {
                v->has_options = 1;
            }
        } else if (rec.type == REPLAY_RECORD_EPISODE_END && v->n_eps > 0) {
            struct vepisode *e = &v->eps[v->n_eps - 1];
            e->length = rec.end.length;
            e->ret = rec.end.episode_return;
            e->success = rec.end.success;
            e->ended = 1;
        }
    }
    replay_reader_close(r);
    if (rc < 0) {
        vreplay_free(v);
        return rc;
    }
    /* An episode without its end (a recovered file) is left out. */
    while (v->n_eps > 0 && !v->eps[v->n_eps - 1].ended) {
        v->n_eps--;
    }
    if (v->n_eps == 0) {
        vreplay_free(v);
        return gr_error(GR_EFORMAT, "%s has no complete episode to show",
                        path);
    }
    for (size_t i = 0; i < v->n_eps; i++) {
        const struct vepisode *e = &v->eps[i];
        if (e->n_kf == 0 || v->kfs[e->kf0].t != 0 ||
            e->step0 + e->length > v->n_steps) {
            vreplay_free(v);
            return gr_error(GR_EFORMAT, "%s: episode %zu has no keyframe at "
                            "step 0 or misses steps", path, i);
        }
    }
    v->tl = malloc((v->n_steps ? v->n_steps : 1) * sizeof *v->tl);
    if (v->tl == NULL) {
        vreplay_free(v);
        return gr_error(GR_ENOMEM, "out of memory loading %s", path);
    }
    for (size_t i = 0; i < v->n_steps; i++) {
        v->tl[i].subtask = v->steps[i].s;
        v->tl[i].option = v->steps[i].o;
        v->tl[i].end_prob = v->steps[i].pe;
    }
    return 0;
}

/* The world at step t (0..length) of episode e: the last keyframe at or
 * before t, then the recorded actions. */
static int vreplay_world(const struct vreplay *v, size_t e, uint32_t t,
                         struct craft_world *w)
{
    const struct vepisode *ep = &v->eps[e];
    if (t > ep->length) {
        t = ep->length;
    }
    size_t k = ep->kf0;
    for (size_t i = ep->kf0; i < ep->kf0 + ep->n_kf; i++) {
        if (v->kfs[i].t <= t) {
            k = i;
        }
    }
    const struct vkey *key = &v->kfs[k];
    int rc = craft_state_from_bytes(w, &v->header.env_config,
                                    v->pool + key->off, key->len);
    if (rc < 0) {
        return gr_error_wrap(rc, "%s: episode %zu, keyframe at step %u",
                             v->path, e, key->t);
    }
    for (uint32_t i = key->t; i < t; i++) {
        struct craft_step st;
        rc = craft_world_step(w, v->steps[ep->step0 + i].a, &st);
        if (rc < 0) {
            return gr_error_wrap(rc, "%s: episode %zu, step %u cannot be "
                                 "re-simulated", v->path, e, i);
        }
    }
    float ret = 0.0f;
    for (uint32_t i = 0; i < t; i++) {
        ret += v->steps[ep->step0 + i].r;
    }
    w->episode_return = ret;
    w->seed = ep->seed;
    return 0;
}

static void vreplay_frame_size(const struct vreplay *v, int *w, int *h)
{
    render_frame_size(&v->header.env_config, v->has_options, w, h);
}

static int vreplay_draw(const struct vreplay *v, size_t e, uint32_t t,
                        struct render_image *img)
{
    struct craft_world w;
    int rc = vreplay_world(v, e, t, &w);
    if (rc < 0) {
        return rc;
    }
    const struct vepisode *ep = &v->eps[e];
    if (t > ep->length) {
        t = ep->length;
    }
    const struct vstep *steps = v->steps + ep->step0;
    struct render_frame f;
    memset(&f, 0, sizeof f);
    f.world = &w;
    f.episode = (int)e;
    f.n_episodes = (int)v->n_eps;
    f.n_steps = (int)ep->length;
    f.agent = v->header.agent_kind;
    f.action = t < ep->length ? steps[t].a : -1;
    f.action_label = "next";
    f.has_reward = t > 0;
    f.reward = t > 0 ? steps[t - 1].r : 0.0f;
    if (t == ep->length) {
        f.status = ep->success ? "task done"
                               : (ep->length > 0 && steps[ep->length - 1].tr
                                      ? "time limit"
                                      : "episode over");
    }
    f.timeline = v->has_options;
    f.steps = v->tl + ep->step0;
    f.n_options = (int)v->header.agent_n_options;
    f.hint = replay_hint;
    return render_frame_draw(img, &f);
}

/* ---- export ------------------------------------------------------------------ */

static int frame_count(uint32_t length, int every)
{
    /* t = 0, K, 2K, ... and the last state */
    int n = (int)(length / (uint32_t)every) + 1;
    if (length % (uint32_t)every != 0) {
        n++;
    }
    return n;
}

static uint32_t frame_t(uint32_t length, int every, int i)
{
    uint32_t t = (uint32_t)i * (uint32_t)every;
    return t > length ? length : t;
}

static int write_scaled(const char *path, const struct render_image *img,
                        int scale, int force)
{
    if (scale <= 1) {
        return render_png_write(path, img, force);
    }
    struct render_image big;
    int rc = render_image_init(&big, img->width * scale, img->height * scale);
    if (rc < 0) {
        return rc;
    }
    render_blit(&big, 0, 0, img, scale);
    rc = render_png_write(path, &big, force);
    render_image_free(&big);
    return rc;
}

#define SHEET_MARGIN 10
#define SHEET_GAP 10
#define SHEET_HEAD 50
#define SHEET_CAPTION 14
#define SHEET_OPT 5

static int sheet_columns(int n)
{
    int c = (int)lrint(sqrt((double)n * 1.5));
    if (c < 1) {
        c = 1;
    }
    if (c > 8) {
        c = 8;
    }
    return c > n ? n : c;
}

/* One contact sheet: the episode's grid every K steps, captioned. */
static int draw_sheet(const struct vreplay *v, size_t e, int every,
                      struct render_image *img)
{
    const struct vepisode *ep = &v->eps[e];
    const struct craft_config *cfg = &v->header.env_config;
    int n = frame_count(ep->length, every);
    int cols = sheet_columns(n), rows = (n + cols - 1) / cols;
    int cw = cfg->width * RENDER_TILE;
    int ch = cfg->height * RENDER_TILE + SHEET_CAPTION +
             (v->has_options ? SHEET_OPT : 0);
    int width = 2 * SHEET_MARGIN + cols * cw + (cols - 1) * SHEET_GAP;
    int min_w = 2 * SHEET_MARGIN + 62 * RENDER_FONT_ADVANCE;
    if (width < min_w) {
        width = min_w;
    }
    int height = SHEET_MARGIN + SHEET_HEAD + rows * ch + (rows - 1) * SHEET_GAP +
                 SHEET_MARGIN;
    int rc = render_image_init(img, width, height);
    if (rc < 0) {
        return rc;
    }
    render_fill(img, 0x22242effu);
    const char *base = strrchr(v->path, '/');
    base = base ? base + 1 : v->path;
    char line[256];
    snprintf(line, sizeof line, "episode %zu (0..%zu)  task %s", e,
             v->n_eps - 1, ep->task.name);
    render_text(img, SHEET_MARGIN, SHEET_MARGIN, line, 0xffffffffu, 2);
    char ret[32];
    if (fabs(ep->ret - nearbyint(ep->ret)) < 1e-6) {
        snprintf(ret, sizeof ret, "%.0f", ep->ret);
    } else {
        snprintf(ret, sizeof ret, "%.2f", ep->ret);
    }
    snprintf(line, sizeof line,
             "%.60s  agent %s  seed %llu  %u steps  return %s  %s", base,
             v->header.agent_kind, (unsigned long long)ep->seed, ep->length,
             ret, ep->success ? "success" : "failed");
    render_text(img, SHEET_MARGIN, SHEET_MARGIN + 24, line, 0xb4b6c3ffu, 1);
    snprintf(line, sizeof line, "a frame every %d step%s; caption: step, "
             "action taken next, last reward", every, every == 1 ? "" : "s");
    render_text(img, SHEET_MARGIN, SHEET_MARGIN + 24 + RENDER_FONT_LINE,
                line, 0x8a8c9bffu, 1);
    const struct vstep *steps = v->steps + ep->step0;
    for (int i = 0; i < n; i++) {
        uint32_t t = frame_t(ep->length, every, i);
        struct craft_world w;
        rc = vreplay_world(v, e, t, &w);
        if (rc < 0) {
            render_image_free(img);
            return rc;
        }
        int x = SHEET_MARGIN + (i % cols) * (cw + SHEET_GAP);
        int y = SHEET_MARGIN + SHEET_HEAD + (i / cols) * (ch + SHEET_GAP);
        render_grid_draw(img, x, y, &w);
        int cy = y + cfg->height * RENDER_TILE + 3;
        if (t < ep->length) {
            snprintf(line, sizeof line, "t %u  %s", t,
                     craft_action_name(steps[t].a));
        } else {
            snprintf(line, sizeof line, "t %u  %s", t,
                     ep->success ? "done" : "end");
        }
        int tx = render_text(img, x, cy, line, 0xe6e6ebffu, 1);
        if (t > 0 && steps[t - 1].r != 0.0f) {
            snprintf(line, sizeof line, "  %+g", (double)steps[t - 1].r);
            render_text(img, tx, cy, line, 0x6cd28cffu, 1);
        }
        if (v->has_options && t < ep->length && steps[t].o >= 0) {
            render_rect(img, x, cy + RENDER_FONT_LINE, cw, SHEET_OPT - 1,
                        render_option_color(steps[t].o));
            snprintf(line, sizeof line, "o%d", (int)steps[t].o);
            render_text(img, x + cw - render_text_width(line, 1), cy, line,
                        render_option_color(steps[t].o), 1);
        }
    }
    return 0;
}

int render_replay_export(const char *path,
                         const struct render_export_options *o,
                         int *n_written)
{
    if (n_written != NULL) {
        *n_written = 0;
    }
    if (o->every < 1) {
        return gr_error(GR_EINVAL, "--every must be at least 1 (got %d)",
                        o->every);
    }
    if (o->scale < 1 || o->scale > 8) {
        return gr_error(GR_EINVAL, "--scale must be 1..8 (got %d)", o->scale);
    }
    struct vreplay v;
    int rc = vreplay_load(&v, path, o->recover);
    if (rc < 0) {
        return rc;
    }
    size_t e0 = 0, e1 = v.n_eps;
    if (o->episode >= 0) {
        if ((size_t)o->episode >= v.n_eps) {
            rc = gr_error(GR_EINVAL, "--episode %d: %s has episodes 0..%zu",
                          o->episode, path, v.n_eps - 1);
            vreplay_free(&v);
            return rc;
        }
        e0 = (size_t)o->episode;
        e1 = e0 + 1;
    }
    rc = gr_mkdir_p(o->out_dir);
    char file[GR_PATH_MAX], name[64];
    /* Check every name first: nothing is written when one would be lost. */
    for (size_t e = e0; rc == 0 && e < e1 && !o->force; e++) {
        int n = o->sheet ? 1 : frame_count(v.eps[e].length, o->every);
        for (int i = 0; rc == 0 && i < n; i++) {
            if (o->sheet) {
                snprintf(name, sizeof name, "ep%04zu_sheet.png", e);
            } else {
                snprintf(name, sizeof name, "ep%04zu_t%04u.png", e,
                         frame_t(v.eps[e].length, o->every, i));
            }
            rc = gr_path_join(file, sizeof file, o->out_dir, name);
            if (rc == 0 && gr_path_exists(file)) {
                rc = gr_error(GR_EEXIST, "%s already exists (use --force to "
                              "overwrite); nothing was written", file);
            }
        }
    }
    int fw, fh;
    vreplay_frame_size(&v, &fw, &fh);
    struct render_image img = {0, 0, NULL};
    if (rc == 0 && !o->sheet) {
        rc = render_image_init(&img, fw, fh);
    }
    struct gr_progress prog;
    gr_progress_start(&prog, "export", (uint64_t)(e1 - e0), "episodes",
                      o->quiet);
    int written = 0;
    for (size_t e = e0; rc == 0 && e < e1; e++) {
        if (o->sheet) {
            struct render_image sheet;
            snprintf(name, sizeof name, "ep%04zu_sheet.png", e);
            rc = gr_path_join(file, sizeof file, o->out_dir, name);
            if (rc == 0) {
                rc = draw_sheet(&v, e, o->every, &sheet);
            }
            if (rc == 0) {
                rc = write_scaled(file, &sheet, o->scale, o->force);
                render_image_free(&sheet);
                written += rc == 0;
            }
        } else {
            int n = frame_count(v.eps[e].length, o->every);
            for (int i = 0; rc == 0 && i < n; i++) {
                uint32_t t = frame_t(v.eps[e].length, o->every, i);
                snprintf(name, sizeof name, "ep%04zu_t%04u.png", e, t);
                rc = gr_path_join(file, sizeof file, o->out_dir, name);
                if (rc == 0) {
                    rc = vreplay_draw(&v, e, t, &img);
                }
                if (rc == 0) {
                    rc = write_scaled(file, &img, o->scale, o->force);
                    written += rc == 0;
                }
            }
        }
        gr_progress_update(&prog, (uint64_t)(e - e0 + 1));
    }
    gr_progress_finish(&prog);
    render_image_free(&img);
    vreplay_free(&v);
    if (n_written != NULL) {
        *n_written = written;
    }
    if (rc == 0 && o->log != NULL) {
        fprintf(o->log, "wrote %d PNG file%s to %s\n", written,
                written == 1 ? "" : "s", o->out_dir);
    }
    return rc;
}

/* ---- scripted keys ------------------------------------------------------------- */

struct script {
    enum render_key keys[MAX_SCRIPT_KEYS];
    int n, next;
};

static int script_parse(const char *text, struct script *s)
{
    s->n = s->next = 0;
    if (text == NULL || text[0] == '\0') {
        return 0;
    }
    const char *p = text;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char name[32];
        if (len == 0 || len >= sizeof name) {
            return gr_error(GR_EINVAL, "--keys: empty or overlong key name "
                            "in '%s'", text);
        }
        memcpy(name, p, len);
        name[len] = '\0';
        enum render_key k = RENDER_KEY_NONE;
        if (strcmp(name, ".") != 0) {
            k = render_key_parse(name);
            if (k == RENDER_KEY_NONE) {
                return gr_error(GR_EINVAL, "--keys: unknown key '%s' (keys: "
                                "space left right up down plus minus home "
                                "end n p s q esc backspace enter, '.' for "
                                "none)", name);
            }
        }
        if (s->n == MAX_SCRIPT_KEYS) {
            return gr_error(GR_EINVAL, "--keys: more than %d keys",
                            MAX_SCRIPT_KEYS);
        }
        s->keys[s->n++] = k;
        if (comma == NULL) {
            return 0;
        }
        p = comma + 1;
    }
}

/* Pushes this frame's scripted key, if any. */
static int script_push(struct script *s, struct render_window *w)
{
    if (s->next >= s->n) {
        return 0;
    }
    enum render_key k = s->keys[s->next++];
    return k == RENDER_KEY_NONE ? 0 : render_window_push_key(w, k);
}

static int script_done(const struct script *s)
{
    return s->next >= s->n;
}

/* Screenshot of what the window shows into dir/<stem>-ep<E>-t<T>.png;
 * a fresh "-2", "-3", ... suffix instead of overwriting (unless force). */
static int screenshot(struct render_window *w, const char *dir,
                      const char *stem, size_t e, uint32_t t, int force,
                      FILE *log)
{
    struct render_image shot;
    int rc = render_window_capture(w, &shot);
    if (rc < 0) {
        return rc;
    }
    rc = gr_mkdir_p(dir);
    char name[160], path[GR_PATH_MAX];
    for (int k = 1; rc == 0; k++) {
        if (k == 1) {
            snprintf(name, sizeof name, "%.100s-ep%04zu-t%04u.png", stem, e, t);
        } else {
            snprintf(name, sizeof name, "%.100s-ep%04zu-t%04u-%d.png", stem, e,
                     t, k);
        }
        rc = gr_path_join(path, sizeof path, dir, name);
        if (rc < 0 || force || !gr_path_exists(path)) {
            break;
        }
    }
    if (rc == 0) {
        rc = render_png_write(path, &shot, force);
    }
    render_image_free(&shot);
    if (rc == 0 && log != NULL) {
        fprintf(log, "saved %s\n", path);
        fflush(log);
    }
    return rc;
}

static void file_stem(const char *path, char *out, size_t cap)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(out, cap, "%s", base);
    char *dot = strrchr(out, '.');
    if (dot != NULL && dot != out) {
        *dot = '\0';
    }
}

static int open_window(struct render_window **w, const char *title, int fw,
                       int fh, const struct render_view_options *o)
{
    struct render_window_options wo = {title, fw, fh, o->headless, o->scale};
    int rc = render_window_open(w, &wo);
    if (rc == 0 && render_window_is_headless(*w) &&
        o->headless == RENDER_HEADLESS_AUTO && o->log != NULL) {
        fprintf(stderr, "note: no display found (DISPLAY, WAYLAND_DISPLAY and "
                "SDL_VIDEODRIVER are unset); running headless\n");
    }
    return rc;
}

/* ---- replay viewer ------------------------------------------------------------ */

static const int speeds[] = {1, 2, 4, 8, 15, 30, 60};
#define N_SPEEDS ((int)(sizeof speeds / sizeof speeds[0]))

int render_replay_play(const char *path, const struct render_view_options *o)
{
    struct script script;
    int rc = script_parse(o->keys, &script);
    if (rc < 0) {
        return rc;
    }
    struct vreplay v;
    rc = vreplay_load(&v, path, o->recover);
    if (rc < 0) {
        return rc;
    }
    size_t e = 0;
    if (o->episode > 0) {
        if ((size_t)o->episode >= v.n_eps) {
            rc = gr_error(GR_EINVAL, "--episode %d: %s has episodes 0..%zu",
                          o->episode, path, v.n_eps - 1);
            vreplay_free(&v);
            return rc;
        }
        e = (size_t)o->episode;
    }
    int speed = 0;
    while (speed + 1 < N_SPEEDS && speeds[speed] < o->speed) {
        speed++;
    }
    int fw, fh;
    vreplay_frame_size(&v, &fw, &fh);
    struct render_image img;
    rc = render_image_init(&img, fw, fh);
    struct render_window *win = NULL;
    if (rc == 0) {
        rc = open_window(&win, "grove replay play", fw, fh, o);
    }
    char stem[128];
    file_stem(path, stem, sizeof stem);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    uint32_t t = 0;
    int paused = 0, quit = 0, dirty = 1, acc = 0, at_end = 0;
    for (long frame = 0; rc == 0 && !quit; frame++) {
        if (o->frames > 0 && frame >= o->frames) {
            break;
        }
        rc = script_push(&script, win);
        struct render_event ev;
        int shot = 0;
        while (rc == 0 && render_window_poll(win, &ev)) {
            if (ev.type == RENDER_EVENT_QUIT) {
                quit = 1;
                break;
            }
            uint32_t len = v.eps[e].length;
            switch (ev.key) {
            case RENDER_KEY_SPACE:
                paused = !paused;
                if (!paused && at_end) {
                    /* resume at the end of the last episode: start over */
                    e = 0;
                    t = 0;
                    at_end = 0;
                }
                break;
            case RENDER_KEY_RIGHT:
                paused = 1;
                t = t < len ? t + 1 : len;
                break;
            case RENDER_KEY_LEFT:
                paused = 1;
                t = t > 0 ? t - 1 : 0;
                break;
            case RENDER_KEY_PLUS:
                speed = speed + 1 < N_SPEEDS ? speed + 1 : speed;
                break;
            case RENDER_KEY_MINUS:
                speed = speed > 0 ? speed - 1 : 0;
                break;
            case RENDER_KEY_HOME:
                t = 0;
                break;
            case RENDER_KEY_END:
                t = len;
                break;
            case RENDER_KEY_N:
                if (e + 1 < v.n_eps) {
                    e++;
                    t = 0;
                }
                break;
            case RENDER_KEY_P:
                if (e > 0) {
                    e--;
                    t = 0;
                }
                break;
            case RENDER_KEY_S:
                shot = 1;
                break;
            case RENDER_KEY_Q:
            case RENDER_KEY_ESCAPE:
                quit = 1;
                break;
            default:
                break;
            }
            acc = 0;
            dirty = 1;
        }
        if (quit || rc < 0) {
            break;
        }
        if (!paused) {
            acc += speeds[speed];
            while (acc >= LOOP_FPS) {
                acc -= LOOP_FPS;
                if (t < v.eps[e].length) {
                    t++;
                } else if (e + 1 < v.n_eps) {
                    e++;
                    t = 0;
                } else {
                    paused = 1; /* the end of the file: hold the last frame */
                    at_end = 1;
                    acc = 0;
                }
                dirty = 1;
            }
        }
        if (dirty) {
            rc = vreplay_draw(&v, e, t, &img);
            if (rc == 0) {
                rc = render_window_present(win, &img);
            }
            char title[512];
            snprintf(title, sizeof title,
                     "grove replay play: %.200s | episode %zu (0..%zu) | "
                     "step %u/%u | %s %d steps/s",
                     base, e, v.n_eps - 1, t, v.eps[e].length,
                     paused ? "paused," : "playing", speeds[speed]);
            render_window_set_title(win, title);
            dirty = 0;
        }
        if (rc == 0 && shot) {
            rc = screenshot(win, o->shot_dir, stem, e, t, o->force, o->log);
        }
        if (render_window_is_headless(win) && o->frames == 0 &&
            script_done(&script) && (paused || at_end)) {
            break; /* nothing more can happen without a person */
        }
        render_window_wait_frame(win, LOOP_FPS);
    }
    render_window_close(win);
    render_image_free(&img);
    vreplay_free(&v);
    return rc;
}

/* ---- a person plays ------------------------------------------------------------- */

struct live_episode {
    uint8_t *actions;
    size_t n, cap;
};

/* Re-simulates a finished episode from (seed, task) through the writer. */
static int record_episode(struct replay_writer *wr,
                          const struct craft_config *cfg, uint64_t seed,
                          const struct craft_task *task,
                          const struct live_episode *le)
{
    struct craft_world w;
    int rc = craft_world_reset(&w, cfg, seed, task);
    if (rc == 0) {
        rc = replay_writer_episode_start(wr, &w);
    }
    for (size_t i = 0; rc >= 0 && i < le->n; i++) {
        rc = replay_record_step(wr, &w, le->actions[i], NULL, NULL);
    }
    return rc < 0 ? rc : 0;
}

int render_craft_play(const struct render_live_options *o)
{
    const struct render_view_options *vo = &o->view;
    if (o->n_tasks < 1) {
        return gr_error(GR_EINVAL, "craft play needs at least one task");
    }
    struct script script;
    int rc = script_parse(vo->keys, &script);
    if (rc < 0) {
        return rc;
    }
    /* every task must run under the configuration the replay will name */
    for (int i = 0; i < o->n_tasks; i++) {
        struct craft_config c;
        craft_config_for_task(&o->config, &o->tasks[i], &c);
        if (memcmp(&c, &o->config, sizeof c) != 0) {
            return gr_error(GR_EINVAL, "task '%s' needs another map "
                            "configuration (treasure); play it on its own",
                            o->tasks[i].name);
        }
    }
    struct replay_writer *wr = NULL;
    if (o->record != NULL) {
        struct replay_header h;
        replay_header_init(&h, &o->config, "human");
        if (o->version != NULL) {
            snprintf(h.grove, sizeof h.grove, "%s", o->version);
        }
        rc = replay_writer_open(&wr, o->record, o->force, &h);
        if (rc < 0) {
            return rc;
        }
    }
    int fw, fh;
    render_frame_size(&o->config, 0, &fw, &fh);
    struct render_image img;
    rc = render_image_init(&img, fw, fh);
    struct render_window *win = NULL;
    if (rc == 0) {
        rc = open_window(&win, "grove craft play", fw, fh, vo);
    }
    struct live_episode le = {NULL, 0, 0};
    uint64_t n = 0;
    int task_i = 0, recorded = 0;
    struct craft_world w;
    if (rc == 0) {
        rc = craft_world_reset(&w, &o->config, craft_episode_seed(o->seed, 0, n),
                               &o->tasks[task_i]);
    }
    int quit = 0, dirty = 1, last_action = -1, has_reward = 0;
    float last_reward = 0.0f;
    for (long frame = 0; rc == 0 && !quit; frame++) {
        if (vo->frames > 0 && frame >= vo->frames) {
            break;
        }
        rc = script_push(&script, win);
        struct render_event ev;
        int shot = 0;
        while (rc == 0 && render_window_poll(win, &ev)) {
            if (ev.type == RENDER_EVENT_QUIT) {
                quit = 1;
                break;
            }
            int action = -1, next = 0;
            switch (ev.key) {
            case RENDER_KEY_UP: action = CRAFT_ACTION_UP; break;
            case RENDER_KEY_DOWN: action = CRAFT_ACTION_DOWN; break;
            case RENDER_KEY_LEFT: action = CRAFT_ACTION_LEFT; break;
            case RENDER_KEY_RIGHT: action = CRAFT_ACTION_RIGHT; break;
            case RENDER_KEY_SPACE: action = CRAFT_ACTION_USE; break;
            case RENDER_KEY_ENTER: next = craft_world_done(&w); break;
            case RENDER_KEY_BACKSPACE: next = 1; break;
            case RENDER_KEY_S: shot = 1; break;
            case RENDER_KEY_Q:
            case RENDER_KEY_ESCAPE: quit = 1; break;
            default: break;
            }
            if (quit) {
                break;
            }
            if (action >= 0 && craft_world_done(&w)) {
                next = 1; /* any move after the end starts the next one */
                action = -1;
            }
            if (action >= 0) {
                if (grow((void **)&le.actions, &le.cap, le.n + 1, 1) < 0) {
                    rc = GR_ENOMEM;
                    break;
                }
                struct craft_step st;
                rc = craft_world_step(&w, action, &st);
                if (rc < 0) {
                    break;
                }
                le.actions[le.n++] = (uint8_t)action;
                last_action = action;
                last_reward = st.reward;
                has_reward = 1;
                if (craft_world_done(&w) && wr != NULL) {
                    rc = record_episode(wr, &o->config, w.seed, &w.task, &le);
                    recorded += rc == 0;
                }
                if (craft_world_done(&w) && vo->log != NULL) {
                    fprintf(vo->log, "episode %llu (task %s): %s in %d steps, "
                            "return %g\n", (unsigned long long)n, w.task.name,
                            w.k >= w.task.n ? "done" : "time limit", w.t,
                            (double)w.episode_return);
                }
            }
            if (next) {
                if (craft_world_done(&w)) {
                    task_i = (task_i + 1) % o->n_tasks;
                }
                n++;
                le.n = 0;
                last_action = -1;
                has_reward = 0;
                rc = craft_world_reset(&w, &o->config,
                                       craft_episode_seed(o->seed, 0, n),
                                       &o->tasks[task_i]);
            }
            dirty = 1;
        }
        if (quit || rc < 0) {
            break;
        }
        if (dirty) {
            struct render_frame f;
            memset(&f, 0, sizeof f);
            f.world = &w;
            f.episode = (int)n;
            f.agent = "human";
            f.action = last_action;
            f.action_label = "last";
            f.has_reward = has_reward;
            f.reward = last_reward;
            if (craft_world_done(&w)) {
                f.status = w.k >= w.task.n ? "task done! any key: next"
                                           : "time limit. any key: next";
            }
            f.hint = live_hint;
            rc = render_frame_draw(&img, &f);
            if (rc == 0) {
                rc = render_window_present(win, &img);
            }
            char title[256];
            snprintf(title, sizeof title,
                     "grove craft play | task %s | episode %llu | step %d",
                     w.task.name, (unsigned long long)n + 1, w.t);
            render_window_set_title(win, title);
            dirty = 0;
        }
        if (rc == 0 && shot) {
            rc = screenshot(win, vo->shot_dir, "craft-play", (size_t)n,
                            (uint32_t)w.t, vo->force, vo->log);
        }
        if (render_window_is_headless(win) && vo->frames == 0 &&
            script_done(&script)) {
            break;
        }
        render_window_wait_frame(win, LOOP_FPS);
    }
    render_window_close(win);
    render_image_free(&img);
    free(le.actions);
    if (wr != NULL) {
        if (rc < 0) {
            replay_writer_abort(wr);
        } else if (recorded == 0) {
            replay_writer_abort(wr);
            if (vo->log != NULL) {
                fprintf(vo->log, "no episode was finished: nothing recorded, "
                        "%s not written\n", o->record);
            }
        } else {
            rc = replay_writer_close(wr);
            if (rc == 0 && vo->log != NULL) {
                fprintf(vo->log, "recorded %d episode%s to %s\n", recorded,
                        recorded == 1 ? "" : "s", o->record);
            }
        }
    }
    if (rc == 0 && !craft_world_done(&w) && le.n > 0 && wr != NULL &&
        vo->log != NULL) {
        fprintf(vo->log, "the unfinished episode was not recorded\n");
    }
    return rc;
}
