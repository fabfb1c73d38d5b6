/* The SDL2 window (render/window.h): the only file of grove that calls SDL.
 * Frames arrive as RGBA buffers; they are uploaded to a streaming texture
 * in SDL_PIXELFORMAT_RGBA32 (byte order R, G, B, A on every machine) and
 * copied at an integer scale. */
#define _POSIX_C_SOURCE 200809L
#include "render/window.h"

#include <SDL.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define HEADLESS_QUEUE 64
#define BORDER_R 24
#define BORDER_G 24
#define BORDER_B 28

struct render_window {
    int headless;
    SDL_Window *window;
    SDL_Renderer *renderer;
    SDL_Texture *texture;
    int tex_w, tex_h;
    struct render_image last; /* the last presented frame */
    int scale;
    SDL_Rect dst;
    uint64_t last_tick;
    enum render_key queue[HEADLESS_QUEUE];
    int q_head, q_len;
};

static const struct {
    enum render_key key;
    const char *name;
    SDL_Keycode sym;
} key_table[] = {
    {RENDER_KEY_SPACE, "space", SDLK_SPACE},
    {RENDER_KEY_LEFT, "left", SDLK_LEFT},
    {RENDER_KEY_RIGHT, "right", SDLK_RIGHT},
    {RENDER_KEY_UP, "up", SDLK_UP},
    {RENDER_KEY_DOWN, "down", SDLK_DOWN},
    {RENDER_KEY_PLUS, "plus", SDLK_PLUS},
    {RENDER_KEY_MINUS, "minus", SDLK_MINUS},
    {RENDER_KEY_HOME, "home", SDLK_HOME},
    {RENDER_KEY_END, "end", SDLK_END},
    {RENDER_KEY_N, "n", SDLK_n},
    {RENDER_KEY_P, "p", SDLK_p},
    {RENDER_KEY_S, "s", SDLK_s},
    {RENDER_KEY_Q, "q", SDLK_q},
    {RENDER_KEY_ESCAPE, "esc", SDLK_ESCAPE},
    {RENDER_KEY_BACKSPACE, "backspace", SDLK_BACKSPACE},
    {RENDER_KEY_ENTER, "enter", SDLK_RETURN},
};
#define N_KEYS (sizeof key_table / sizeof key_table[0])

const char *render_key_name(enum render_key key)
{
    for (size_t i = 0; i < N_KEYS; i++) {
        if (key_table[i].key == key) {
            return key_table[i].name;
        }
    }
    return "none";
}

enum render_key render_key_parse(const char *name)
{
    if (strcmp(name, "+") == 0) {
        return RENDER_KEY_PLUS;
    }
    if (strcmp(name, "-") == 0) {
        return RENDER_KEY_MINUS;
    }
    if (strcmp(name, "escape") == 0) {
        return RENDER_KEY_ESCAPE;
    }
    for (size_t i = 0; i < N_KEYS; i++) {
        if (strcmp(key_table[i].name, name) == 0) {
            return key_table[i].key;
        }
    }
    return RENDER_KEY_NONE;
}

static enum render_key key_from_sym(SDL_Keycode sym)
{
    switch (sym) {
    case SDLK_EQUALS: /* '+' without shift on most layouts */
    case SDLK_KP_PLUS:
        return RENDER_KEY_PLUS;
    case SDLK_KP_MINUS:
        return RENDER_KEY_MINUS;
    case SDLK_KP_ENTER:
        return RENDER_KEY_ENTER;
    default:
        break;
    }
    for (size_t i = 0; i < N_KEYS; i++) {
        if (key_table[i].sym == sym) {
            return key_table[i].key;
        }
    }
    return RENDER_KEY_NONE;
}

int render_display_available(void)
{
    const char *vars[] = {"SDL_VIDEODRIVER", "DISPLAY", "WAYLAND_DISPLAY"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v != NULL && v[0] != '\0') {
            return 1;
        }
    }
    return 0;
}

static int sdl_fail(const char *call)
{
    return gr_error(GR_EDEVICE,
                    "cannot open a window: %s failed: %s (no display? use "
                    "--headless)",
                    call, SDL_GetError());
}

/* Largest integer scale at which w×h fits in 85% of the desktop, 1..4. */
static int auto_scale(int w, int h)
{
    SDL_DisplayMode mode;
    if (SDL_GetDesktopDisplayMode(0, &mode) != 0 || mode.w <= 0 ||
        mode.h <= 0) {
        return 2;
    }
    int s = 4;
    while (s > 1 && (w * s > mode.w * 85 / 100 || h * s > mode.h * 85 / 100)) {
        s--;
    }
    return s;
}

/* Picks the integer scale and the centred destination for the current
 * output size. */
static void layout(struct render_window *w)
{
    int ow = 0, oh = 0;
    if (SDL_GetRendererOutputSize(w->renderer, &ow, &oh) != 0 || ow <= 0 ||
        oh <= 0 || w->tex_w <= 0 || w->tex_h <= 0) {
        w->scale = 1;
        w->dst.x = w->dst.y = 0;
        w->dst.w = w->tex_w;
        w->dst.h = w->tex_h;
        return;
    }
    int s = ow / w->tex_w;
    if (oh / w->tex_h < s) {
        s = oh / w->tex_h;
    }
    if (s < 1) {
        s = 1;
    }
    w->scale = s;
    w->dst.w = w->tex_w * s;
    w->dst.h = w->tex_h * s;
    w->dst.x = (ow - w->dst.w) / 2;
    w->dst.y = (oh - w->dst.h) / 2;
}

static void draw_back_buffer(struct render_window *w)
{
    SDL_SetRenderDrawColor(w->renderer, BORDER_R, BORDER_G, BORDER_B, 255);
    SDL_RenderClear(w->renderer);
    if (w->texture != NULL) {
        SDL_RenderCopy(w->renderer, w->texture, NULL, &w->dst);
    }
}

int render_window_open(struct render_window **out,
                       const struct render_window_options *opts)
{
    *out = NULL;
    if (opts->width < 1 || opts->height < 1) {
        return gr_error(GR_EINVAL, "window frame size %dx%d is invalid",
                        opts->width, opts->height);
    }
    struct render_window *w = calloc(1, sizeof *w);
    if (w == NULL) {
        return gr_error(GR_ENOMEM, "out of memory for a window");
    }
    w->headless = opts->headless == RENDER_HEADLESS_AUTO
                      ? !render_display_available()
                      : opts->headless != 0;
    w->scale = 1;
    if (w->headless) {
        *out = w;
        return 0;
    }
    if (SDL_InitSubSystem(SDL_INIT_VIDEO) != 0) {
        free(w);
        return sdl_fail("SDL_Init(video)");
    }
    SDL_SetHint(SDL_HINT_RENDER_SCALE_QUALITY, "0");
    int scale = opts->scale > 0 ? opts->scale
                                : auto_scale(opts->width, opts->height);
    w->window = SDL_CreateWindow(opts->title ? opts->title : "grove",
                                 SDL_WINDOWPOS_CENTERED,
                                 SDL_WINDOWPOS_CENTERED, opts->width * scale,
                                 opts->height * scale,
                                 SDL_WINDOW_RESIZABLE |
                                     SDL_WINDOW_ALLOW_HIGHDPI);
    if (w->window == NULL) {
        int rc = sdl_fail("SDL_CreateWindow");
        SDL_QuitSubSystem(SDL_INIT_VIDEO);
        free(w);
        return rc;
    }
    SDL_SetWindowMinimumSize(w->window, opts->width, opts->height);
    w->renderer = SDL_CreateRenderer(w->window, -1, 0);
    if (w->renderer == NULL) {
        int rc = sdl_fail("SDL_CreateRenderer");
        SDL_DestroyWindow(w->window);
        SDL_QuitSubSystem(SDL_INIT_VIDEO);
        free(w);
        return rc;
    }
    w->last_tick = SDL_GetTicks64();
    *out = w;
    return 0;
}

int render_window_is_headless(const struct render_window *w)
{
    return w->headless;
}

int render_window_resize(struct render_window *w, int width, int height)
{
    if (width < 1 || height < 1) {
        return gr_error(GR_EINVAL, "window size %dx%d is invalid", width,
                        height);
    }
    if (!w->headless) {
        SDL_SetWindowSize(w->window, width, height);
        layout(w);
    }
    return 0;
}

int render_window_scale(const struct render_window *w)
{
    return w->scale;
}

/* Keeps a copy of the frame (resizing the copy when the size changes). */
static int keep_frame(struct render_window *w, const struct render_image *f)
{
    if (w->last.width != f->width || w->last.height != f->height) {
        render_image_free(&w->last);
        int rc = render_image_init(&w->last, f->width, f->height);
        if (rc < 0) {
            return rc;
        }
    }
    memcpy(w->last.rgba, f->rgba, (size_t)f->width * (size_t)f->height * 4);
    return 0;
}

int render_window_present(struct render_window *w,
                          const struct render_image *frame)
{
    int rc = keep_frame(w, frame);
    if (rc < 0 || w->headless) {
        return rc;
    }
    if (w->texture == NULL || w->tex_w != frame->width ||
        w->tex_h != frame->height) {
        if (w->texture != NULL) {
            SDL_DestroyTexture(w->texture);
        }
        w->texture = SDL_CreateTexture(w->renderer, SDL_PIXELFORMAT_RGBA32,
                                       SDL_TEXTUREACCESS_STREAMING,
                                       frame->width, frame->height);
        if (w->texture == NULL) {
            return gr_error(GR_EDEVICE, "SDL_CreateTexture(%dx%d) failed: %s",
                            frame->width, frame->height, SDL_GetError());
        }
        SDL_SetTextureBlendMode(w->texture, SDL_BLENDMODE_NONE);
        w->tex_w = frame->width;
        w->tex_h = frame->height;
        SDL_SetWindowMinimumSize(w->window, frame->width, frame->height);
    }
    if (SDL_UpdateTexture(w->texture, NULL, frame->rgba, frame->width * 4) !=
        0) {
        return gr_error(GR_EDEVICE, "SDL_UpdateTexture failed: %s",
                        SDL_GetError());
    }
    layout(w);
    draw_back_buffer(w);
    SDL_RenderPresent(w->renderer);
    return 0;
}

int render_window_poll(struct render_window *w, struct render_event *ev)
{
    if (w->headless) {
        if (w->q_len == 0) {
            return 0;
        }
        ev->type = RENDER_EVENT_KEY;
        ev->key = w->queue[w->q_head];
        w->q_head = (w->q_head + 1) % HEADLESS_QUEUE;
        w->q_len--;
        return 1;
    }
    SDL_Event e;
    while (SDL_PollEvent(&e)) {
        if (e.type == SDL_QUIT) {
            ev->type = RENDER_EVENT_QUIT;
            ev->key = RENDER_KEY_NONE;
            return 1;
        }
        if (e.type == SDL_WINDOWEVENT &&
            (e.window.event == SDL_WINDOWEVENT_SIZE_CHANGED ||
             e.window.event == SDL_WINDOWEVENT_EXPOSED)) {
            if (w->texture != NULL) {
                layout(w);
                draw_back_buffer(w);
                SDL_RenderPresent(w->renderer);
            }
            continue;
        }
        if (e.type == SDL_KEYDOWN) {
            enum render_key k = key_from_sym(e.key.keysym.sym);
            if (k != RENDER_KEY_NONE) {
                ev->type = RENDER_EVENT_KEY;
                ev->key = k;
                return 1;
            }
        }
    }
    return 0;
}

int render_window_push_key(struct render_window *w, enum render_key key)
{
    if (w->headless) {
        if (w->q_len == HEADLESS_QUEUE) {
            return gr_error(GR_EINVAL, "too many queued keys (%d)",
                            HEADLESS_QUEUE);
        }
        w->queue[(w->q_head + w->q_len) % HEADLESS_QUEUE] = key;
        w->q_len++;
        return 0;
    }
    SDL_Keycode sym = SDLK_UNKNOWN;
    for (size_t i = 0; i < N_KEYS; i++) {
        if (key_table[i].key == key) {
            sym = key_table[i].sym;
        }
    }
    if (sym == SDLK_UNKNOWN) {
        return gr_error(GR_EINVAL, "no key to push for %d", (int)key);
    }
    SDL_Event e;
    memset(&e, 0, sizeof e);
    e.type = SDL_KEYDOWN;
    e.key.timestamp = SDL_GetTicks();
    e.key.windowID = SDL_GetWindowID(w->window);
    e.key.state = SDL_PRESSED;
    e.key.keysym.sym = sym;
    e.key.keysym.scancode = SDL_GetScancodeFromKey(sym);
    if (SDL_PushEvent(&e) < 0) {
        return gr_error(GR_EDEVICE, "SDL_PushEvent failed: %s",
                        SDL_GetError());
    }
    return 0;
}

void render_window_set_title(struct render_window *w, const char *title)
{
    if (!w->headless) {
        SDL_SetWindowTitle(w->window, title);
    }
}

int render_window_capture(struct render_window *w, struct render_image *out)
{
    out->rgba = NULL;
    out->width = out->height = 0;
    if (w->last.rgba == NULL) {
        return gr_error(GR_EINVAL, "no frame has been shown yet");
    }
    if (w->headless) {
        int rc = render_image_init(out, w->last.width, w->last.height);
        if (rc == 0) {
            memcpy(out->rgba, w->last.rgba,
                   (size_t)out->width * (size_t)out->height * 4);
        }
        return rc;
    }
    layout(w);
    draw_back_buffer(w);
    size_t n = (size_t)w->dst.w * (size_t)w->dst.h * 4;
    uint8_t *big = malloc(n);
    if (big == NULL) {
        return gr_error(GR_ENOMEM, "out of memory for a screenshot");
    }
    if (SDL_RenderReadPixels(w->renderer, &w->dst, SDL_PIXELFORMAT_RGBA32,
                             big, w->dst.w * 4) != 0) {
        free(big);
        return gr_error(GR_EDEVICE, "SDL_RenderReadPixels failed: %s",
                        SDL_GetError());
    }
    int rc = render_image_init(out, w->tex_w, w->tex_h);
    if (rc < 0) {
        free(big);
        return rc;
    }
    /* Nearest-neighbour scaling made each pixel an s×s block: keep one. */
    int s = w->scale;
    for (int y = 0; y < out->height; y++) {
        for (int x = 0; x < out->width; x++) {
            memcpy(out->rgba + 4 * ((size_t)y * out->width + x),
                   big + 4 * ((size_t)(y * s) * w->dst.w + (size_t)(x * s)),
                   4);
        }
    }
    free(big);
    return 0;
}

void render_window_wait_frame(struct render_window *w, int fps)
{
    if (w->headless || fps <= 0) {
        return;
    }
    uint64_t period = 1000u / (uint64_t)fps;
    uint64_t now = SDL_GetTicks64();
    uint64_t due = w->last_tick + period;
    if (now < due) {
        SDL_Delay((Uint32)(due - now));
        w->last_tick = due;
    } else {
        w->last_tick = now;
    }
}

void render_window_close(struct render_window *w)
{
    if (w == NULL) {
        return;
    }
    if (!w->headless) {
        if (w->texture != NULL) {
            SDL_DestroyTexture(w->texture);
        }
        SDL_DestroyRenderer(w->renderer);
        SDL_DestroyWindow(w->window);
        SDL_QuitSubSystem(SDL_INIT_VIDEO);
        if (SDL_WasInit(SDL_INIT_EVERYTHING) == 0) {
            SDL_Quit(); /* unloads the drivers SDL loaded */
        }
    }
    render_image_free(&w->last);
    free(w);
}
