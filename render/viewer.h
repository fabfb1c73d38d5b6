/* render/viewer.h — watching Craft: the replay viewer, replay export to PNG
 * frames or contact sheets, and a human playing in the window.
 *
 * All three draw frames with render/frame.h; the viewer and the live game
 * show them through render/window.h, export writes them with
 * render/pngfile.h. A replay is read once, validated as it streams (any
 * error is the replay reader's message, naming the file and byte offset,
 * before a window opens); its steps and keyframes are kept in memory
 * (≈ 24 bytes a step). The state at step t of an episode is rebuilt from the
 * last keyframe at or before t and the recorded actions, so stepping back
 * costs at most keyframe_every steps of simulation.
 *
 * Replay viewer keys (STYLE §7): space pause/resume, right/left one step
 * (pauses), +/- speed, home/end first/last step, n/p next/previous episode,
 * s screenshot (PNG of the frame as the window shows it, in shot_dir),
 * q or Esc quit. The title shows the file, episode, step and speed.
 * Human play keys: arrows move, space USE, backspace new episode, q or Esc
 * quit; after an episode ends any move, space or enter starts the next.
 *
 * Testing without a person: `frames` stops after N frames; `keys` is a
 * comma-separated script of key names (render_key_parse; "." = no key),
 * one key pushed per frame from the first, through the same event path as
 * a key press. Headless (chosen automatically without a display), play runs
 * until the script and the replay are exhausted.
 *
 * Memory: everything is released before return. Not thread-safe (SDL).
 * Errors: negative GR_E* with gr_last_error(); results ("saved PATH",
 * "wrote N files") go to opts->log when it is not NULL.
 *
 *   struct render_view_options o; render_view_options_default(&o);
 *   o.log = stdout;
 *   if (render_replay_play("run.replay", &o) < 0) fail(gr_last_error());
 */
#ifndef GROVE_RENDER_VIEWER_H
#define GROVE_RENDER_VIEWER_H

#include <stdint.h>
#include <stdio.h>

#include "envs/craft.h"

struct render_view_options {
    int headless;         /* 1, 0 or RENDER_HEADLESS_AUTO (default) */
    int frames;           /* stop after this many frames; 0 = no limit */
    const char *keys;     /* scripted keys, or NULL */
    const char *shot_dir; /* screenshots go here (default ".") */
    int scale;            /* initial window scale; 0 = fit the screen */
    int speed;            /* replay steps per second (default 8) */
    int episode;          /* first episode shown (from 0) */
    int recover;          /* open a truncated replay up to its last
                             complete episode */
    int force;            /* screenshots may overwrite */
    FILE *log;            /* results and notes, or NULL */
};

void render_view_options_default(struct render_view_options *o);

/* Plays a replay file in the window (or headless). */
int render_replay_play(const char *path, const struct render_view_options *o);

struct render_export_options {
    const char *out_dir;  /* created when missing */
    int episode;          /* -1: every episode */
    int every;            /* a frame every K steps (and the last), K ≥ 1 */
    int sheet;            /* one contact sheet per episode instead */
    int scale;            /* integer upscale of every image, 1..8 */
    int force;            /* overwrite existing PNGs */
    int recover;
    int quiet;            /* no progress line */
    FILE *log;
};

/* Writes PNGs of a replay into out_dir: ep0003_t0012.png per frame, or
 * ep0003_sheet.png per episode with `sheet`. Every target name is checked
 * before the first is written: an existing one without force is GR_EEXIST
 * and nothing is written. *n_written (may be NULL) gets the file count. */
int render_replay_export(const char *path,
                         const struct render_export_options *o,
                         int *n_written);

struct render_live_options {
    struct render_view_options view;
    struct craft_config config;
    const struct craft_task *tasks; /* [n_tasks], played in turn */
    int n_tasks;
    uint64_t seed;                  /* episode n uses craft_episode_seed(
                                       seed, 0, n) */
    const char *record;             /* replay file of finished episodes
                                       (agent kind "human"), or NULL */
    int force;                      /* the record file may be overwritten */
    const char *version;            /* program version for the replay */
};

/* A person plays Craft in the window; finished episodes are recorded. */
int render_craft_play(const struct render_live_options *o);

#endif
