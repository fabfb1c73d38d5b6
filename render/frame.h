/* render/frame.h — a Craft state drawn into an RGBA buffer.
 *
 * One frame shows: the grid (one drawn tile per kind of craft.md §2, the
 * agent as a round figure that looks and points the way it faces, and a
 * yellow outline on the cell it faces, the one USE acts on); a panel with
 * the step (of the episode length when known), the episode, the return and
 * last reward, the task with each subtask done / in progress / to do, the
 * inventory (icon, name, count), the agent kind, the action and, for agents
 * with options, the option in control and the end probability; when the
 * frame has a timeline, a strip under the grid with one column per step of
 * the episode: the subtask being worked on (letter), the option in control
 * (one colour per option) and the end probability (a bar from 0 to 1), with
 * a cursor on the current step; and a line of key help.
 *
 * Layout (pixels, at scale 1): tiles are RENDER_TILE × RENDER_TILE; the
 * grid's row y = H-1 is on top (craft.md §2). The frame size depends only
 * on the grid size and whether there is a timeline (render_frame_size), so
 * every frame of an episode has the same size. Drawing is deterministic:
 * the same inputs give the same bytes in every build (golden tests).
 *
 * Memory: the caller owns the image and everything the frame points to;
 * nothing is allocated. Thread-safe for distinct images. Errors: GR_EINVAL
 * when the image does not have the frame's size or the world is invalid.
 *
 *   struct render_frame f = {0};
 *   f.world = &world; f.episode = 0; f.n_episodes = 1; f.action = -1;
 *   int w, h; render_frame_size(&world.config, 0, &w, &h);
 *   render_image_init(&img, w, h);
 *   render_frame_draw(&img, &f);
 */
#ifndef GROVE_RENDER_FRAME_H
#define GROVE_RENDER_FRAME_H

#include <stdint.h>

#include "envs/craft.h"
#include "render/image.h"

#define RENDER_TILE 24 /* pixels per grid cell */

/* One step of the timeline strip (the replay's step record t). */
struct render_timeline_step {
    int32_t subtask; /* "s": k before the action; -1 unknown */
    int32_t option;  /* "o": option in control; -1 absent */
    float end_prob;  /* "pe": end probability; NaN absent */
};

struct render_frame {
    const struct craft_world *world; /* the state shown (at step world->t) */
    int episode;          /* index from 0; -1 hides it */
    int n_episodes;       /* episodes in the file; 0 unknown */
    int n_steps;          /* episode length T when known (replays), else 0 */
    const char *agent;    /* agent kind ("ocn", "human", ...) or NULL */
    int action;           /* action shown, -1 none */
    const char *action_label; /* "next" (chosen in this state) or "last" */
    int has_reward;       /* 1: `reward` is the reward of the last step */
    float reward;
    const char *status;   /* "task done", "time limit", ... or NULL */
    /* Timeline strip: drawn when `timeline` is non-zero; steps[n_steps]. */
    int timeline;
    const struct render_timeline_step *steps;
    int n_options;        /* K, for the option colours (0: from the data) */
    const char *hint;     /* key help shown on the last line, or NULL */
};

/* Size in pixels of a frame for grids of `config`, with or without the
 * timeline strip. */
void render_frame_size(const struct craft_config *config, int timeline,
                       int *width, int *height);

/* Draws the frame; `img` must have render_frame_size's size. */
int render_frame_draw(struct render_image *img, const struct render_frame *f);

/* Draws only the grid of `w` (tiles, agent, faced-cell outline) with its
 * top-left corner at (x, y): W·RENDER_TILE × H·RENDER_TILE pixels. */
void render_grid_draw(struct render_image *img, int x, int y,
                      const struct craft_world *w);

/* Draws the tile of `kind` (0..CRAFT_N_KINDS-1) as a size×size square with
 * its top-left corner at (x, y); size ≥ 8. Every kind looks different
 * (tested); the art is drawn by code at any size. */
void render_tile(struct render_image *img, int x, int y, int size, int kind);

/* Draws the agent facing `dir` (enum craft_dir) on a size×size cell
 * (transparent around it: draw the floor first). */
void render_agent(struct render_image *img, int x, int y, int size, int dir);

/* The colour of option `o` in timelines (cycles after 10). */
uint32_t render_option_color(int o);

#endif
