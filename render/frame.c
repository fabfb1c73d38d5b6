/* A Craft state drawn into an RGBA buffer (render/frame.h): tiles drawn by
 * code on a 24-unit design grid scaled to any tile size, the agent, the
 * side panel and the option timeline. */
#include "render/frame.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "render/font.h"

/* ---- layout --------------------------------------------------------------- */

#define MARGIN 8
#define PANEL_GAP 10
#define PANEL_W 184
#define PANEL_MIN_H 232
#define STRIP_GAP 8
#define STRIP_H 46
#define STRIP_LABEL_W 28
#define HINT_H 20

/* ---- colours ---------------------------------------------------------------- */

#define C_BG 0x22242effu
#define C_PANEL_TEXT 0xe6e6ebffu
#define C_DIM_TEXT 0x9a9cabffu
#define C_HEAD_TEXT 0xffffffffu
#define C_ACCENT 0xffd23cffu
#define C_GOOD 0x6cd28cffu
#define C_WARN 0xf0a050ffu
#define C_RULE 0x3c3f50ffu
#define C_CURRENT_BAR 0x3a3f5cffu
#define C_FLOOR 0xded6b4ffu
#define C_FLOOR_EDGE 0xcdc49effu

/* ---- drawing on the 24-unit tile grid ---------------------------------------- */

struct pen {
    struct render_image *img;
    int ox, oy; /* tile origin, pixels */
    float u;    /* pixels per design unit */
};

static int px(const struct pen *p, float v)
{
    return (int)lrintf(v * p->u);
}

static void p_rect(const struct pen *p, float x, float y, float w, float h,
                   uint32_t c)
{
    int x0 = px(p, x), y0 = px(p, y), x1 = px(p, x + w), y1 = px(p, y + h);
    if (x1 <= x0) {
        x1 = x0 + 1;
    }
    if (y1 <= y0) {
        y1 = y0 + 1;
    }
    render_rect(p->img, p->ox + x0, p->oy + y0, x1 - x0, y1 - y0, c);
}

static void p_disc(const struct pen *p, float cx, float cy, float r,
                   uint32_t c)
{
    render_disc(p->img, (float)p->ox + cx * p->u, (float)p->oy + cy * p->u,
                r * p->u, c);
}

static void p_line(const struct pen *p, float x0, float y0, float x1,
                   float y1, float w, uint32_t c)
{
    render_line_aa(p->img, (float)p->ox + x0 * p->u,
                   (float)p->oy + y0 * p->u, (float)p->ox + x1 * p->u,
                   (float)p->oy + y1 * p->u, w * p->u, c);
}

static void p_tri(const struct pen *p, float x0, float y0, float x1,
                  float y1, float x2, float y2, uint32_t c)
{
    float ox = (float)p->ox, oy = (float)p->oy;
    render_triangle(p->img, ox + x0 * p->u, oy + y0 * p->u, ox + x1 * p->u,
                    oy + y1 * p->u, ox + x2 * p->u, oy + y2 * p->u, c);
}

/* A one-letter badge in the tile's top-left corner (only when the tile is
 * big enough for the 5×7 font to fit). */
static void p_badge(const struct pen *p, char letter, uint32_t bg)
{
    if (p->u * 24.0f < 20.0f) {
        return;
    }
    render_rect(p->img, p->ox + 1, p->oy + 1, 7, 9, bg);
    char s[2] = {letter, '\0'};
    render_text(p->img, p->ox + 2, p->oy + 2, s, 0xffffffffu, 1);
}

static void floor_tile(const struct pen *p)
{
    p_rect(p, 0, 0, 24, 24, C_FLOOR);
    p_rect(p, 0, 23, 24, 1, C_FLOOR_EDGE);
    p_rect(p, 23, 0, 1, 24, C_FLOOR_EDGE);
}

static void tile_boundary(const struct pen *p)
{
    p_rect(p, 0, 0, 24, 24, 0x484a56ffu);
    uint32_t mortar = 0x34363fffu;
    for (int row = 0; row < 3; row++) {
        float y = (float)row * 8.0f;
        p_rect(p, 0, y + 7, 24, 1, mortar);
        p_rect(p, 0, y, 24, 1, 0x5c5e6cffu); /* top highlight */
        if (row % 2 == 0) {
            p_rect(p, 11, y, 1, 8, mortar);
        } else {
            p_rect(p, 4, y, 1, 8, mortar);
            p_rect(p, 18, y, 1, 8, mortar);
        }
    }
}

static void tile_water(const struct pen *p)
{
    p_rect(p, 0, 0, 24, 24, 0x346ebeffu);
    uint32_t wave = 0x82b4ebffu;
    for (int k = 0; k < 3; k++) {
        float y = 6.0f + 6.0f * (float)k, s = (k % 2) ? 3.0f : 0.0f;
        p_line(p, 1 + s, y, 4 + s, y - 2, 1.3f, wave);
        p_line(p, 4 + s, y - 2, 7 + s, y, 1.3f, wave);
        p_line(p, 7 + s, y, 10 + s, y - 2, 1.3f, wave);
        p_line(p, 10 + s, y - 2, 13 + s, y, 1.3f, wave);
        p_line(p, 13 + s, y, 16 + s, y - 2, 1.3f, wave);
        p_line(p, 16 + s, y - 2, 19 + s, y, 1.3f, wave);
    }
}

static void tile_stone(const struct pen *p)
{
    floor_tile(p);
    p_disc(p, 12, 14, 8.5f, 0x6e6e76ffu);
    p_disc(p, 11, 13, 7.5f, 0x92929cffu);
    p_disc(p, 9, 10.5f, 3.0f, 0xb4b4beffu);
    p_line(p, 13, 9, 15, 14, 1.0f, 0x5a5a62ffu);
    p_line(p, 15, 14, 13, 18, 1.0f, 0x5a5a62ffu);
}

static void tile_toolshed(const struct pen *p)
{
    floor_tile(p);
    p_rect(p, 5, 11, 14, 10, 0xaa7846ffu);
    p_tri(p, 2.5f, 12, 12, 3.5f, 21.5f, 12, 0xb43228ffu);
    p_rect(p, 10, 15, 4, 6, 0x5a371effu);
    /* a hammer on the wall */
    p_rect(p, 6, 13, 3, 1.5f, 0x8c8c96ffu);
    p_rect(p, 7, 14, 1, 4, 0x5a371effu);
    p_badge(p, 'T', 0xb43228ffu);
}

static void tile_workbench(const struct pen *p)
{
    floor_tile(p);
    p_rect(p, 3, 10, 18, 4, 0xa06e3cffu);
    p_rect(p, 3, 10, 18, 1, 0xc8965affu);
    p_rect(p, 5, 14, 3, 7, 0x785028ffu);
    p_rect(p, 16, 14, 3, 7, 0x785028ffu);
    /* a saw on the table */
    p_rect(p, 8, 7, 8, 3, 0xa0a5b4ffu);
    p_rect(p, 16, 7.5f, 3, 2, 0x5a371effu);
    p_badge(p, 'B', 0x785028ffu);
}

static void tile_factory(const struct pen *p)
{
    floor_tile(p);
    p_rect(p, 4, 11, 16, 10, 0x787887ffu);
    p_tri(p, 4, 11, 9, 6.5f, 9, 11, 0x5f5f6effu);
    p_tri(p, 9, 11, 14, 6.5f, 14, 11, 0x5f5f6effu);
    p_rect(p, 15, 3, 3, 8, 0x505060ffu);
    p_disc(p, 18.5f, 2.5f, 1.8f, 0xd2d2dcffu);
    p_disc(p, 21, 1.5f, 1.3f, 0xd2d2dcffu);
    p_rect(p, 6, 14, 3, 3, 0xf0d250ffu);
    p_rect(p, 11, 14, 3, 3, 0xf0d250ffu);
    p_rect(p, 16, 14, 2, 7, 0x3c3c46ffu);
    p_badge(p, 'F', 0x505060ffu);
}

static void tile_iron(const struct pen *p)
{
    floor_tile(p);
    p_disc(p, 9, 15, 5.0f, 0x505a6effu);
    p_disc(p, 15.5f, 13, 4.5f, 0x5f6982ffu);
    p_disc(p, 13, 18, 4.0f, 0x46505fffu);
    uint32_t rust = 0xc8784bffu, shine = 0xc8d2e6ffu;
    p_rect(p, 8, 13, 1.5f, 1.5f, rust);
    p_rect(p, 15, 11, 1.5f, 1.5f, shine);
    p_rect(p, 12, 17, 1.5f, 1.5f, rust);
    p_rect(p, 17, 14, 1.5f, 1.5f, rust);
    p_rect(p, 10, 16, 1.5f, 1.5f, shine);
}

static void tile_grass(const struct pen *p)
{
    floor_tile(p);
    uint32_t dark = 0x2d8232ffu, light = 0x50b446ffu;
    for (int k = 0; k < 3; k++) {
        float bx = 6.0f + 6.0f * (float)k, by = k == 1 ? 18.0f : 20.0f;
        p_line(p, bx, by, bx - 3, by - 9, 1.4f, dark);
        p_line(p, bx, by, bx + 3, by - 9, 1.4f, dark);
        p_line(p, bx, by, bx, by - 12, 1.5f, light);
    }
}

static void tile_wood(const struct pen *p)
{
    floor_tile(p);
    p_disc(p, 5, 13, 4.5f, 0x8c5a2dffu);
    p_rect(p, 5, 8.5f, 13, 9, 0x8c5a2dffu);
    p_line(p, 7, 11, 15, 11, 0.8f, 0x6e461effu);
    p_line(p, 8, 15, 16, 15, 0.8f, 0x6e461effu);
    p_disc(p, 18, 13, 4.5f, 0xd2aa6effu);
    p_disc(p, 18, 13, 2.8f, 0xa0733cffu);
    p_disc(p, 18, 13, 1.8f, 0xd2aa6effu);
    p_disc(p, 18, 13, 0.7f, 0xa0733cffu);
}

static void tile_gold(const struct pen *p)
{
    floor_tile(p);
    uint32_t gold = 0xe6b41effu, dark = 0xb48214ffu, hi = 0xffeb8cffu;
    p_disc(p, 10, 15, 5.0f, dark);
    p_disc(p, 10, 14.5f, 4.3f, gold);
    p_disc(p, 16, 17, 3.8f, dark);
    p_disc(p, 16, 16.5f, 3.2f, gold);
    p_disc(p, 15, 10, 3.2f, dark);
    p_disc(p, 15, 9.6f, 2.6f, gold);
    p_disc(p, 8.5f, 13, 1.3f, hi);
    p_disc(p, 15, 15.5f, 1.0f, hi);
    p_disc(p, 14.2f, 9, 0.9f, hi);
}

static void tile_gem(const struct pen *p)
{
    floor_tile(p);
    uint32_t mid = 0x3cc8d2ffu, light = 0xaaf0f5ffu, dark = 0x1e8ca0ffu;
    p_tri(p, 4, 10, 8, 5, 12, 10, light);
    p_tri(p, 8, 5, 16, 5, 12, 10, mid);
    p_tri(p, 12, 10, 16, 5, 20, 10, dark);
    p_tri(p, 4, 10, 12, 10, 12, 21, mid);
    p_tri(p, 12, 10, 20, 10, 12, 21, dark);
}

static void tile_plank(const struct pen *p)
{
    floor_tile(p);
    p_rect(p, 3, 8, 18, 8, 0xb4823cffu);
    p_rect(p, 3, 8, 18, 1, 0xd7aa64ffu);
    p_line(p, 5, 11, 12, 11, 0.8f, 0x8c5f28ffu);
    p_line(p, 9, 13.5f, 19, 13.5f, 0.8f, 0x8c5f28ffu);
    p_rect(p, 5, 10, 1, 1, 0x5a3c1effu);
    p_rect(p, 18, 10, 1, 1, 0x5a3c1effu);
}

static void tile_stick(const struct pen *p)
{
    floor_tile(p);
    p_line(p, 6, 19, 18, 5, 2.4f, 0x825528ffu);
    p_line(p, 11.5f, 12.5f, 8, 9, 1.4f, 0x825528ffu);
    p_disc(p, 7.5f, 8.5f, 1.5f, 0x50a03cffu);
}

static void tile_axe(const struct pen *p)
{
    floor_tile(p);
    p_line(p, 7, 20, 15, 5, 2.2f, 0x8c5f32ffu);
    p_tri(p, 13, 5, 20, 2.5f, 19.5f, 11.5f, 0xaab4c3ffu);
    p_tri(p, 13, 5, 19.5f, 11.5f, 14, 9, 0xaab4c3ffu);
    p_line(p, 20, 2.5f, 19.5f, 11.5f, 1.0f, 0xe1e6f0ffu);
}

static void tile_rope(const struct pen *p)
{
    floor_tile(p);
    uint32_t rope = 0xc8aa6effu, dark = 0x96783cffu;
    p_disc(p, 12, 12, 7.5f, dark);
    p_disc(p, 12, 12, 6.5f, rope);
    p_disc(p, 12, 12, 4.5f, dark);
    p_disc(p, 12, 12, 3.5f, rope);
    p_disc(p, 12, 12, 1.8f, C_FLOOR);
    p_line(p, 18, 15, 21, 21, 1.8f, rope);
}

static void tile_bed(const struct pen *p)
{
    floor_tile(p);
    p_rect(p, 2, 7, 20, 12, 0x8c5a37ffu);
    p_rect(p, 3, 8, 18, 8, 0xebebf0ffu);
    p_rect(p, 10, 8, 11, 8, 0xc83c46ffu);
    p_rect(p, 10, 11, 11, 1, 0xe66e78ffu);
    p_rect(p, 4, 9, 5, 5, 0xfafaffffu);
    p_rect(p, 2, 19, 2, 3, 0x6e4628ffu);
    p_rect(p, 20, 19, 2, 3, 0x6e4628ffu);
}

static void tile_shears(const struct pen *p)
{
    floor_tile(p);
    uint32_t steel = 0x8c96a5ffu, grip = 0xc8323cffu;
    p_line(p, 12, 12, 8, 3, 2.0f, steel);
    p_line(p, 12, 12, 16, 3, 2.0f, steel);
    p_line(p, 12, 12, 8, 16, 1.6f, grip);
    p_line(p, 12, 12, 16, 16, 1.6f, grip);
    p_disc(p, 7.5f, 18.5f, 3.2f, grip);
    p_disc(p, 7.5f, 18.5f, 1.6f, C_FLOOR);
    p_disc(p, 16.5f, 18.5f, 3.2f, grip);
    p_disc(p, 16.5f, 18.5f, 1.6f, C_FLOOR);
    p_disc(p, 12, 12, 1.2f, 0x3c3c46ffu);
}

static void tile_cloth(const struct pen *p)
{
    floor_tile(p);
    p_rect(p, 4, 5, 16, 15, 0x9650aaffu);
    p_tri(p, 13, 5, 20, 5, 20, 12, 0xc882dcffu);
    p_line(p, 13, 5, 20, 12, 0.8f, 0x6e3282ffu);
    for (int k = 0; k < 6; k++) {
        p_rect(p, 5.5f + 2.2f * (float)k, 18, 1.2f, 0.8f, 0xdcb4ebffu);
    }
}

static void tile_bridge(const struct pen *p)
{
    floor_tile(p);
    p_rect(p, 0, 15, 24, 9, 0x346ebeffu);
    p_line(p, 2, 12, 12, 8, 3.0f, 0x966437ffu);
    p_line(p, 12, 8, 22, 12, 3.0f, 0x966437ffu);
    p_rect(p, 3, 13, 2, 8, 0x6e4628ffu);
    p_rect(p, 19, 13, 2, 8, 0x6e4628ffu);
    p_line(p, 2, 8, 12, 4, 1.0f, 0x5a371effu);
    p_line(p, 12, 4, 22, 8, 1.0f, 0x5a371effu);
}

static void tile_ladder(const struct pen *p)
{
    floor_tile(p);
    uint32_t rail = 0x966432ffu;
    p_rect(p, 7, 2, 2, 20, rail);
    p_rect(p, 15, 2, 2, 20, rail);
    for (int k = 0; k < 4; k++) {
        p_rect(p, 9, 5.0f + 4.5f * (float)k, 6, 1.5f, 0xbe8c50ffu);
    }
}

void render_tile(struct render_image *img, int x, int y, int size, int kind)
{
    if (size < 8) {
        size = 8;
    }
    struct pen p = {img, x, y, (float)size / 24.0f};
    switch (kind) {
    case CRAFT_KIND_EMPTY: floor_tile(&p); break;
    case CRAFT_KIND_BOUNDARY: tile_boundary(&p); break;
    case CRAFT_KIND_WATER: tile_water(&p); break;
    case CRAFT_KIND_STONE: tile_stone(&p); break;
    case CRAFT_KIND_TOOLSHED: tile_toolshed(&p); break;
    case CRAFT_KIND_WORKBENCH: tile_workbench(&p); break;
    case CRAFT_KIND_FACTORY: tile_factory(&p); break;
    case CRAFT_KIND_IRON: tile_iron(&p); break;
    case CRAFT_KIND_GRASS: tile_grass(&p); break;
    case CRAFT_KIND_WOOD: tile_wood(&p); break;
    case CRAFT_KIND_GOLD: tile_gold(&p); break;
    case CRAFT_KIND_GEM: tile_gem(&p); break;
    case CRAFT_KIND_PLANK: tile_plank(&p); break;
    case CRAFT_KIND_STICK: tile_stick(&p); break;
    case CRAFT_KIND_AXE: tile_axe(&p); break;
    case CRAFT_KIND_ROPE: tile_rope(&p); break;
    case CRAFT_KIND_BED: tile_bed(&p); break;
    case CRAFT_KIND_SHEARS: tile_shears(&p); break;
    case CRAFT_KIND_CLOTH: tile_cloth(&p); break;
    case CRAFT_KIND_BRIDGE: tile_bridge(&p); break;
    case CRAFT_KIND_LADDER: tile_ladder(&p); break;
    default: /* not a kind: magenta, never silently a floor */
        p_rect(&p, 0, 0, 24, 24, 0xff00ffffu);
        break;
    }
}

void render_agent(struct render_image *img, int x, int y, int size, int dir)
{
    struct pen p = {img, x, y, (float)size / 24.0f};
    /* Screen vectors: y grows UP on the map, DOWN on screen. */
    float dx = 0.0f, dy = 0.0f;
    switch (dir) {
    case CRAFT_DIR_DOWN: dy = 1.0f; break;
    case CRAFT_DIR_UP: dy = -1.0f; break;
    case CRAFT_DIR_LEFT: dx = -1.0f; break;
    default: dx = 1.0f; break;
    }
    float nx = -dy, ny = dx; /* perpendicular */
    float cx = 12.0f, cy = 12.0f;
    /* pointer */
    p_tri(&p, cx + dx * 11.5f, cy + dy * 11.5f, cx + dx * 6.5f + nx * 4.5f,
          cy + dy * 6.5f + ny * 4.5f, cx + dx * 6.5f - nx * 4.5f,
          cy + dy * 6.5f - ny * 4.5f, C_ACCENT);
    /* body */
    p_disc(&p, cx, cy, 7.8f, 0x782814ffu);
    p_disc(&p, cx, cy, 6.8f, 0xe65a32ffu);
    p_disc(&p, cx - 2.0f, cy - 2.5f, 2.0f, 0xf5965affu);
    /* eyes, looking the way it faces */
    for (int s = -1; s <= 1; s += 2) {
        float ex = cx + dx * 2.8f + nx * 2.9f * (float)s;
        float ey = cy + dy * 2.8f + ny * 2.9f * (float)s;
        p_disc(&p, ex, ey, 2.0f, 0xffffffffu);
        p_disc(&p, ex + dx * 0.8f, ey + dy * 0.8f, 1.0f, 0x141418ffu);
    }
}

uint32_t render_option_color(int o)
{
    static const uint32_t colors[10] = {
        0x4c9be8ffu, /* blue */
        0xf08c3cffu, /* orange */
        0x5ac86effu, /* green */
        0xe65a78ffu, /* rose */
        0xaa82e6ffu, /* lilac */
        0xe6d250ffu, /* yellow */
        0x46c8c8ffu, /* teal */
        0xc8966effu, /* tan */
        0xf0a0d2ffu, /* pink */
        0xa0aab4ffu, /* grey */
    };
    if (o < 0) {
        return 0x4a4c5cffu;
    }
    return colors[o % 10];
}

/* ---- frame ------------------------------------------------------------------ */

static int grid_h(const struct craft_config *c)
{
    return c->height * RENDER_TILE;
}

static int body_h(const struct craft_config *c)
{
    return grid_h(c) > PANEL_MIN_H ? grid_h(c) : PANEL_MIN_H;
}

void render_frame_size(const struct craft_config *config, int timeline,
                       int *width, int *height)
{
    *width = MARGIN + config->width * RENDER_TILE + PANEL_GAP + PANEL_W +
             MARGIN;
    *height = MARGIN + body_h(config) + (timeline ? STRIP_GAP + STRIP_H : 0) +
              HINT_H;
}

void render_grid_draw(struct render_image *img, int gx, int gy,
                      const struct craft_world *w)
{
    int W = w->config.width, H = w->config.height;
    for (int x = 0; x < W; x++) {
        for (int y = 0; y < H; y++) {
            int sx = gx + x * RENDER_TILE, sy = gy + (H - 1 - y) * RENDER_TILE;
            render_tile(img, sx, sy, RENDER_TILE, craft_world_cell(w, x, y));
        }
    }
    /* the cell USE acts on */
    int fx = w->x + craft_dir_dx[w->dir], fy = w->y + craft_dir_dy[w->dir];
    if (fx >= 0 && fy >= 0 && fx < W && fy < H) {
        render_rect_outline(img, gx + fx * RENDER_TILE,
                            gy + (H - 1 - fy) * RENDER_TILE, RENDER_TILE,
                            RENDER_TILE, 1, C_ACCENT);
    }
    render_agent(img, gx + w->x * RENDER_TILE,
                 gy + (H - 1 - w->y) * RENDER_TILE, RENDER_TILE, w->dir);
}

/* Formats a reward or return compactly: "2", "0.5", "-0.25". */
static void fmt_num(char *out, size_t cap, double v)
{
    if (fabs(v - nearbyint(v)) < 1e-6) {
        snprintf(out, cap, "%.0f", v);
    } else {
        snprintf(out, cap, "%.2f", v);
    }
}

static int section(struct render_image *img, int x, int y, const char *title)
{
    render_rect(img, x, y, PANEL_W, 1, C_RULE);
    render_text(img, x, y + 5, title, C_DIM_TEXT, 1);
    return y + 5 + RENDER_FONT_LINE + 1;
}

static void draw_panel(struct render_image *img, const struct render_frame *f,
                       int x, int y, int bottom)
{
    const struct craft_world *w = f->world;
    char line[96], num[32];

    /* step, big */
    if (f->n_steps > 0) {
        snprintf(line, sizeof line, "step %d/%d", w->t, f->n_steps);
    } else {
        snprintf(line, sizeof line, "step %d", w->t);
    }
    render_text(img, x, y, line, C_HEAD_TEXT, 2);
    y += 2 * RENDER_FONT_GLYPH_H + 4;
    if (f->episode >= 0) {
        if (f->n_episodes > 0) {
            /* episodes count from 0 everywhere (replays/README.md) */
            snprintf(line, sizeof line, "episode %d (0..%d)", f->episode,
                     f->n_episodes - 1);
        } else {
            snprintf(line, sizeof line, "episode %d", f->episode);
        }
        render_text(img, x, y, line, C_PANEL_TEXT, 1);
        y += RENDER_FONT_LINE;
    }
    fmt_num(num, sizeof num, w->episode_return);
    int ex = render_text(img, x, y, "return ", C_DIM_TEXT, 1);
    ex = render_text(img, ex, y, num, C_HEAD_TEXT, 1);
    if (f->has_reward) {
        char r[32];
        fmt_num(r, sizeof r, f->reward);
        snprintf(line, sizeof line, "  (last %s%s)", f->reward > 0 ? "+" : "",
                 r);
        render_text(img, ex, y, line,
                    f->reward > 0 ? C_GOOD : C_DIM_TEXT, 1);
    }
    y += RENDER_FONT_LINE;
    if (f->status != NULL) {
        render_text(img, x, y, f->status,
                    w->k >= w->task.n ? C_GOOD : C_WARN, 1);
    }
    y += RENDER_FONT_LINE + 2;

    /* task */
    snprintf(line, sizeof line, "task %s", w->task.name);
    y = section(img, x, y, line);
    int max_lines = 6;
    int first = 0;
    if (w->task.n > max_lines && w->k > 2) {
        first = w->k - 2;
        if (first > w->task.n - max_lines) {
            first = w->task.n - max_lines;
        }
    }
    for (int i = first; i < w->task.n && i < first + max_lines; i++) {
        char name[48];
        if (craft_subtask_name(&w->task.sub[i], name, sizeof name) < 0) {
            snprintf(name, sizeof name, "?");
        }
        char letter = craft_subtask_letter(&w->task.sub[i]);
        if (letter) {
            snprintf(line, sizeof line, "%c %s", letter, name);
        } else {
            snprintf(line, sizeof line, "%d %s", i + 1, name);
        }
        uint32_t color = C_DIM_TEXT;
        if (i < w->k) {
            /* done: a check mark */
            render_line(img, x + 1, y + 4, x + 3, y + 6, C_GOOD);
            render_line(img, x + 3, y + 6, x + 7, y + 1, C_GOOD);
            color = C_GOOD;
        } else if (i == w->k) {
            render_rect(img, x - 2, y - 2, PANEL_W, RENDER_FONT_LINE,
                        C_CURRENT_BAR);
            render_text(img, x + 2, y, ">", C_ACCENT, 1);
            color = C_HEAD_TEXT;
        }
        render_text(img, x + 12, y, line, color, 1);
        y += RENDER_FONT_LINE;
    }
    y += 3;

    /* inventory: icon, name, count; two columns */
    y = section(img, x, y, "inventory");
    int col = 0, shown = 0;
    for (int kind = CRAFT_FIRST_GRABBABLE; kind < CRAFT_N_KINDS; kind++) {
        if (w->inventory[kind] == 0) {
            continue;
        }
        if (y + 16 > bottom - 36) {
            break;
        }
        int ix = x + col * (PANEL_W / 2);
        render_tile(img, ix, y, 16, kind);
        snprintf(line, sizeof line, "%s %u", craft_kind_name(kind),
                 (unsigned)w->inventory[kind]);
        render_text(img, ix + 20, y + 4, line, C_PANEL_TEXT, 1);
        shown++;
        col ^= 1;
        if (col == 0) {
            y += 18;
        }
    }
    if (col == 1) {
        y += 18;
    }
    if (shown == 0) {
        render_text(img, x, y, "(empty)", C_DIM_TEXT, 1);
        y += RENDER_FONT_LINE;
    }
    y += 3;

    /* agent, action, option */
    snprintf(line, sizeof line, "agent %s", f->agent ? f->agent : "?");
    y = section(img, x, y, line);
    if (f->action >= 0 && craft_action_name(f->action) != NULL) {
        int ax = render_text(img, x, y, f->action_label ? f->action_label : "action",
                             C_DIM_TEXT, 1);
        render_text(img, ax + 6, y, craft_action_name(f->action), C_HEAD_TEXT,
                    1);
    } else {
        render_text(img, x, y, "-", C_DIM_TEXT, 1);
    }
    y += RENDER_FONT_LINE;
    if (f->timeline && f->steps != NULL && w->t < f->n_steps) {
        const struct render_timeline_step *s = &f->steps[w->t];
        int ox = x;
        if (s->option >= 0) {
            render_rect(img, x, y, 8, 8, render_option_color(s->option));
            snprintf(line, sizeof line, "option %d", (int)s->option);
            ox = render_text(img, x + 12, y, line, C_PANEL_TEXT, 1);
        }
        if (isfinite(s->end_prob)) {
            snprintf(line, sizeof line, "%send p %.2f",
                     ox > x ? "  " : "", (double)s->end_prob);
            render_text(img, ox, y, line, C_PANEL_TEXT, 1);
        }
    }
}

static void draw_timeline(struct render_image *img,
                          const struct render_frame *f, int x0, int y0,
                          int x1)
{
    int n = f->n_steps > 0 ? f->n_steps : 1;
    int lx = x0 + STRIP_LABEL_W, avail = x1 - lx;
    int rows_y[3] = {y0 + 2, y0 + 15, y0 + 29};
    int rows_h[3] = {11, 12, 15};
    const char *labels[3] = {"sub", "opt", "end"};
    for (int r = 0; r < 3; r++) {
        render_text(img, x0, rows_y[r] + (rows_h[r] - 7) / 2, labels[r],
                    C_DIM_TEXT, 1);
        render_rect(img, lx, rows_y[r], avail, rows_h[r], 0x2e3140ffu);
    }
    int run_start = 0;
    for (int i = 0; i < n && f->steps != NULL && f->n_steps > 0; i++) {
        const struct render_timeline_step *s = &f->steps[i];
        int cx0 = lx + (int)((long)i * avail / n);
        int cx1 = lx + (int)((long)(i + 1) * avail / n);
        if (cx1 <= cx0) {
            cx1 = cx0 + 1;
        }
        /* subtask row: alternating shades per subtask, letter per run */
        if (s->subtask >= 0) {
            render_rect(img, cx0, rows_y[0], cx1 - cx0, rows_h[0],
                        (s->subtask % 2) ? 0x5a5f7dffu : 0x474b64ffu);
        }
        int run_end = i + 1 == n || f->steps[i + 1].subtask != s->subtask;
        if (run_end) {
            int sx0 = lx + (int)((long)run_start * avail / n);
            if (s->subtask >= 0 && s->subtask < f->world->task.n &&
                cx1 - sx0 >= 7) {
                char letter = craft_subtask_letter(&f->world->task.sub[s->subtask]);
                char txt[16];
                if (letter) {
                    snprintf(txt, sizeof txt, "%c", letter);
                } else {
                    snprintf(txt, sizeof txt, "%d", (int)s->subtask + 1);
                }
                if (cx1 - sx0 < render_text_width(txt, 1) + 2) {
                    txt[1] = '\0';
                }
                render_text(img, sx0 + (cx1 - sx0 - render_text_width(txt, 1)) / 2,
                            rows_y[0] + 2, txt, C_PANEL_TEXT, 1);
            }
            if (i > 0 && run_start > 0) {
                render_rect(img, sx0, rows_y[0], 1, rows_h[0], C_BG);
            }
            run_start = i + 1;
        }
        /* option row */
        if (s->option >= 0) {
            render_rect(img, cx0, rows_y[1], cx1 - cx0, rows_h[1],
                        render_option_color(s->option));
        }
        /* end probability row: a bar from the bottom */
        if (isfinite(s->end_prob)) {
            float pe = s->end_prob < 0.0f ? 0.0f
                                          : (s->end_prob > 1.0f ? 1.0f
                                                                : s->end_prob);
            int h = (int)lrintf(pe * (float)rows_h[2]);
            if (h > 0) {
                render_rect(img, cx0, rows_y[2] + rows_h[2] - h, cx1 - cx0, h,
                            0xe6e6ebffu);
            }
        }
    }
    /* cursor on the current step (or after the last one at the end) */
    int t = f->world->t;
    int cx0 = lx + (int)((long)(t < n ? t : n) * avail / n);
    int cx1 = t < n ? lx + (int)((long)(t + 1) * avail / n) : cx0 + 1;
    if (cx1 - cx0 < 2) {
        cx1 = cx0 + 2;
    }
    if (cx1 > x1 + 1) {
        cx0 -= cx1 - x1 - 1;
        cx1 = x1 + 1;
    }
    render_rect_outline(img, cx0 - 1, y0, cx1 - cx0 + 2, STRIP_H - 2, 1,
                        C_ACCENT);
}

int render_frame_draw(struct render_image *img, const struct render_frame *f)
{
    const struct craft_world *w = f->world;
    if (w == NULL || w->config.width < CRAFT_MIN_SIDE ||
        w->config.height < CRAFT_MIN_SIDE ||
        w->config.width > CRAFT_MAX_SIDE || w->config.height > CRAFT_MAX_SIDE) {
        return gr_error(GR_EINVAL, "render_frame_draw: no valid world");
    }
    int fw, fh;
    render_frame_size(&w->config, f->timeline, &fw, &fh);
    if (img->width != fw || img->height != fh || img->rgba == NULL) {
        return gr_error(GR_EINVAL,
                        "render_frame_draw: image is %dx%d, the frame %dx%d",
                        img->width, img->height, fw, fh);
    }
    if (f->timeline && f->n_steps > 0 && f->steps == NULL) {
        return gr_error(GR_EINVAL, "render_frame_draw: timeline without steps");
    }
    render_fill(img, C_BG);
    int gx = MARGIN, gy = MARGIN;
    render_grid_draw(img, gx, gy, w);
    int px0 = MARGIN + w->config.width * RENDER_TILE + PANEL_GAP;
    draw_panel(img, f, px0, MARGIN, MARGIN + body_h(&w->config));
    int y = MARGIN + body_h(&w->config);
    if (f->timeline) {
        draw_timeline(img, f, MARGIN, y + STRIP_GAP, fw - MARGIN);
        y += STRIP_GAP + STRIP_H;
    }
    if (f->hint != NULL) {
        render_text(img, MARGIN, y + (HINT_H - RENDER_FONT_GLYPH_H) / 2 + 1,
                    f->hint, C_DIM_TEXT, 1);
    }
    return 0;
}
