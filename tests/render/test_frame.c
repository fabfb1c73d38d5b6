/* render/frame.h: every kind has its own tile (no two kinds, and no two
 * facings of the agent, draw the same pixels, at the grid size and at the
 * inventory icon size); the grid is drawn where the state says (each cell
 * of the frame equals its kind's tile drawn alone, row y = H-1 on top); and
 * a fixed small state (craft.md §11's map, three expert steps in, with an
 * option timeline) draws exactly the committed golden PNG.
 *
 *   test_render_frame FIXTURE_DIR [OUT_DIR]
 *
 * GROVE_UPDATE_GOLDEN=1 rewrites the golden (never in CI, and that run
 * fails: look at it, then run again; tests/test.h test_update_golden);
 * on a mismatch the frame drawn is written to OUT_DIR (default /tmp). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "envs/craft.h"
#include "render/frame.h"
#include "render/image.h"
#include "render/pngfile.h"
#include "tests/test.h"

static void draw_tile_image(struct render_image *img, int size, int kind,
                            int agent_dir)
{
    CHECK(render_image_init(img, size, size) == 0);
    render_tile(img, 0, 0, size, kind);
    if (agent_dir >= 0) {
        render_agent(img, 0, 0, size, agent_dir);
    }
}

static void test_distinct_tiles(void)
{
    const int sizes[] = {RENDER_TILE, 16};
    for (int si = 0; si < 2; si++) {
        int size = sizes[si];
        /* 21 kinds, then the agent on the floor facing each direction */
        struct render_image t[CRAFT_N_KINDS + CRAFT_N_DIRS];
        int n = CRAFT_N_KINDS + CRAFT_N_DIRS;
        for (int k = 0; k < n; k++) {
            if (k < CRAFT_N_KINDS) {
                draw_tile_image(&t[k], size, k, -1);
            } else {
                draw_tile_image(&t[k], size, CRAFT_KIND_EMPTY,
                                k - CRAFT_N_KINDS);
            }
        }
        for (int a = 0; a < n; a++) {
            /* every tile is opaque: nothing of the background shows */
            int opaque = 1;
            for (int y = 0; y < size; y++) {
                for (int x = 0; x < size; x++) {
                    opaque &= (render_get_pixel(&t[a], x, y) & 255) == 255;
                }
            }
            CHECK_MSG(opaque, "tile %d at %d px has transparent pixels", a,
                      size);
            for (int b = 0; b < a; b++) {
                /* distinct, and by a visible margin: at least 2 % of the
                 * pixels differ */
                int differ = 0;
                for (int y = 0; y < size; y++) {
                    for (int x = 0; x < size; x++) {
                        differ += render_get_pixel(&t[a], x, y) !=
                                  render_get_pixel(&t[b], x, y);
                    }
                }
                CHECK_MSG(differ * 50 >= size * size,
                          "tiles %d and %d at %d px differ in only %d pixels",
                          a, b, size, differ);
            }
        }
        for (int k = 0; k < n; k++) {
            render_image_free(&t[k]);
        }
    }
    /* an invalid kind is drawn, conspicuously, not as a floor */
    struct render_image bad, floor_img;
    draw_tile_image(&bad, RENDER_TILE, 99, -1);
    draw_tile_image(&floor_img, RENDER_TILE, CRAFT_KIND_EMPTY, -1);
    CHECK(!render_image_equal(&bad, &floor_img));
    render_image_free(&bad);
    render_image_free(&floor_img);
}

/* craft.md §11's map, plus water, stone and a gem so that the golden shows
 * more kinds; three expert steps taken (UP, RIGHT, USE: wood collected). */
static void example_world(struct craft_world *w, float *last_reward)
{
    struct craft_config cfg;
    craft_config_default(&cfg);
    struct craft_task task;
    CHECK(craft_task_parse("AC", &task) == 0);
    CHECK(craft_world_blank(w, &cfg, &task) == 0);
    craft_world_set(w, 3, 5, CRAFT_KIND_TOOLSHED);
    craft_world_set(w, 2, 2, CRAFT_KIND_FACTORY);
    craft_world_set(w, 7, 6, CRAFT_KIND_WORKBENCH);
    craft_world_set(w, 5, 4, CRAFT_KIND_WOOD);
    craft_world_set(w, 2, 7, CRAFT_KIND_IRON);
    craft_world_set(w, 7, 2, CRAFT_KIND_GRASS);
    craft_world_set(w, 6, 7, CRAFT_KIND_GOLD);
    craft_world_set(w, 1, 1, CRAFT_KIND_WATER);
    craft_world_set(w, 8, 8, CRAFT_KIND_STONE);
    craft_world_set(w, 8, 1, CRAFT_KIND_GEM);
    w->x = 3;
    w->y = 3;
    w->dir = CRAFT_DIR_UP;
    const int actions[3] = {CRAFT_ACTION_UP, CRAFT_ACTION_RIGHT,
                            CRAFT_ACTION_USE};
    struct craft_step st;
    for (int i = 0; i < 3; i++) {
        CHECK(craft_world_step(w, actions[i], &st) == 0);
    }
    *last_reward = st.reward;
    CHECK(w->k == 1 && w->inventory[CRAFT_KIND_WOOD] == 1);
    CHECK(craft_world_cell(w, 5, 4) == CRAFT_KIND_EMPTY);
    /* crafted items in the inventory, to show their icons */
    w->inventory[CRAFT_KIND_PLANK] = 2;
    w->inventory[CRAFT_KIND_AXE] = 1;
}

static void test_grid_placement(void)
{
    struct craft_world w;
    float r;
    example_world(&w, &r);
    struct render_frame f;
    memset(&f, 0, sizeof f);
    f.world = &w;
    f.episode = -1;
    f.action = -1;
    int fw, fh;
    render_frame_size(&w.config, 0, &fw, &fh);
    struct render_image img, tile;
    CHECK(render_image_init(&img, fw, fh) == 0);
    CHECK(render_frame_draw(&img, &f) == 0);
    CHECK(render_image_init(&tile, RENDER_TILE, RENDER_TILE) == 0);
    int fx = w.x + craft_dir_dx[w.dir], fy = w.y + craft_dir_dy[w.dir];
    const int gx = 8, gy = 8; /* the frame's margin */
    int cells = 0;
    for (int x = 0; x < w.config.width; x++) {
        for (int y = 0; y < w.config.height; y++) {
            if ((x == w.x && y == w.y) || (x == fx && y == fy)) {
                continue; /* agent and faced-cell outline drawn over */
            }
            render_tile(&tile, 0, 0, RENDER_TILE, craft_world_cell(&w, x, y));
            int sx = gx + x * RENDER_TILE;
            int sy = gy + (w.config.height - 1 - y) * RENDER_TILE;
            int same = 1;
            for (int j = 0; j < RENDER_TILE && same; j++) {
                for (int i = 0; i < RENDER_TILE && same; i++) {
                    same = render_get_pixel(&img, sx + i, sy + j) ==
                           render_get_pixel(&tile, i, j);
                }
            }
            CHECK_MSG(same, "cell (%d,%d) is not its kind's tile", x, y);
            cells++;
        }
    }
    CHECK(cells == w.config.width * w.config.height - 2);
    /* the agent cell shows the agent facing its way */
    render_tile(&tile, 0, 0, RENDER_TILE, CRAFT_KIND_EMPTY);
    render_agent(&tile, 0, 0, RENDER_TILE, w.dir);
    int sx = gx + w.x * RENDER_TILE;
    int sy = gy + (w.config.height - 1 - w.y) * RENDER_TILE;
    int same = 1;
    for (int j = 0; j < RENDER_TILE && same; j++) {
        for (int i = 0; i < RENDER_TILE && same; i++) {
            same = render_get_pixel(&img, sx + i, sy + j) ==
                   render_get_pixel(&tile, i, j);
        }
    }
    CHECK(same);
    /* a wrong-sized image is refused, not overrun */
    struct render_image small;
    CHECK(render_image_init(&small, fw - 1, fh) == 0);
    CHECK(render_frame_draw(&small, &f) == GR_EINVAL);
    CHECK_STR_CONTAINS(gr_last_error(), "image is");
    render_image_free(&small);
    /* the timeline adds height, not width */
    int tw, th;
    render_frame_size(&w.config, 1, &tw, &th);
    CHECK(tw == fw && th > fh);
    render_image_free(&tile);
    render_image_free(&img);
}

static void test_golden(const char *fixtures, const char *out_dir)
{
    struct craft_world w;
    float last_reward;
    example_world(&w, &last_reward);
    /* an 8-step episode: options 0, 1, 2 in control, end probabilities */
    struct render_timeline_step steps[8];
    for (int i = 0; i < 8; i++) {
        steps[i].subtask = i < 3 ? 0 : 1;
        steps[i].option = i < 3 ? 0 : (i < 7 ? 1 : 2);
        steps[i].end_prob = (i == 2 || i == 7) ? 0.9f : 0.05f * (float)i;
    }
    struct render_frame f;
    memset(&f, 0, sizeof f);
    f.world = &w;
    f.episode = 2;
    f.n_episodes = 10;
    f.n_steps = 8;
    f.agent = "ocn";
    f.action = CRAFT_ACTION_UP;
    f.action_label = "next";
    f.has_reward = 1;
    f.reward = last_reward;
    f.timeline = 1;
    f.steps = steps;
    f.n_options = 3;
    f.hint = "space pause  <- -> step  +/- speed  n/p episode  s shot  q quit";
    int fw, fh;
    render_frame_size(&w.config, 1, &fw, &fh);
    struct render_image img;
    CHECK(render_image_init(&img, fw, fh) == 0);
    CHECK(render_frame_draw(&img, &f) == 0);

    char golden[512], actual[512];
    snprintf(golden, sizeof golden, "%s/frame_golden.png", fixtures);
    snprintf(actual, sizeof actual, "%s/frame_actual.png", out_dir);
    if (test_update_golden(golden)) {
        CHECK(render_png_write(golden, &img, 1) == 0);
        printf("rewrote %s\n", golden);
    }
    struct render_image want;
    CHECK_MSG(render_png_read(golden, &want) == 0, "%s", gr_last_error());
    int same = render_image_equal(&img, &want);
    CHECK_MSG(same, "the frame differs from %s; wrote what was drawn to %s",
              golden, actual);
    if (!same) {
        render_png_write(actual, &img, 1);
    }
    /* drawing is a pure function of its inputs: a second draw is equal */
    struct render_image again;
    CHECK(render_image_init(&again, fw, fh) == 0);
    render_fill(&again, render_rgb(1, 2, 3));
    CHECK(render_frame_draw(&again, &f) == 0);
    CHECK(render_image_equal(&img, &again));
    render_image_free(&again);
    render_image_free(&want);
    render_image_free(&img);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_render_frame FIXTURE_DIR [OUT_DIR]\n");
        return 2;
    }
    test_distinct_tiles();
    test_grid_placement();
    test_golden(argv[1], argc > 2 ? argv[2] : "/tmp");
    return test_report("render_frame");
}
