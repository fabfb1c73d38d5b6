/* render/window.h — the one file that talks to SDL2: a window that shows a
 * render_image, integer-scaled, and turns key presses into render_keys.
 *
 * The program draws each frame into a render_image (render/frame.h, ...)
 * and hands it to render_window_present, which uploads it to a streaming
 * texture and shows it at the largest integer scale that fits the window,
 * centred on a dark border (nearest-neighbour: pixels stay square and
 * sharp at any window size). Resizing the window re-picks the scale.
 *
 * Headless: a window opened headless creates nothing with SDL; present only
 * remembers the frame, poll returns the keys pushed with
 * render_window_push_key, and capture returns the last frame. `headless`
 * RENDER_HEADLESS_AUTO picks headless when render_display_available() says
 * there is no display (no DISPLAY, WAYLAND_DISPLAY or SDL_VIDEODRIVER in the
 * environment), so commands work on servers and in CI unchanged. Tests can
 * also use SDL_VIDEODRIVER=offscreen or dummy, or run under xvfb-run.
 *
 * Scripted input: render_window_push_key queues a key exactly like a key
 * press (with a window it goes through SDL's event queue as an
 * SDL_KEYDOWN), so `--keys` in the commands exercises the real input path.
 *
 * Memory: the window owns its SDL objects and a copy of the last frame;
 * render_window_close frees everything. Thread safety: use a window from
 * the thread that opened it (SDL's rule). Errors: open, present and
 * capture return 0 or a negative GR_E* code with a message naming the SDL
 * call and SDL_GetError().
 *
 *   struct render_window *w;
 *   struct render_window_options o = {"grove", img.width, img.height,
 *                                     RENDER_HEADLESS_AUTO, 0};
 *   if (render_window_open(&w, &o) < 0) return -1;
 *   while (running) {
 *       struct render_event ev;
 *       while (render_window_poll(w, &ev)) { ... }
 *       draw(&img); render_window_present(w, &img);
 *       render_window_wait_frame(w, 60);
 *   }
 *   render_window_close(w);
 */
#ifndef GROVE_RENDER_WINDOW_H
#define GROVE_RENDER_WINDOW_H

#include <stdint.h>

#include "render/image.h"

enum render_key {
    RENDER_KEY_NONE = 0,
    RENDER_KEY_SPACE,
    RENDER_KEY_LEFT,
    RENDER_KEY_RIGHT,
    RENDER_KEY_UP,
    RENDER_KEY_DOWN,
    RENDER_KEY_PLUS,
    RENDER_KEY_MINUS,
    RENDER_KEY_HOME,
    RENDER_KEY_END,
    RENDER_KEY_N,
    RENDER_KEY_P,
    RENDER_KEY_S,
    RENDER_KEY_Q,
    RENDER_KEY_ESCAPE,
    RENDER_KEY_BACKSPACE,
    RENDER_KEY_ENTER,
    RENDER_KEY_COUNT
};

enum render_event_type { RENDER_EVENT_KEY, RENDER_EVENT_QUIT };

struct render_event {
    enum render_event_type type;
    enum render_key key; /* for RENDER_EVENT_KEY */
};

#define RENDER_HEADLESS_AUTO (-1)

struct render_window_options {
    const char *title;
    int width, height; /* size of the frames to show, pixels */
    int headless;      /* 1, 0, or RENDER_HEADLESS_AUTO */
    int scale;         /* initial integer scale; 0 = largest that fits */
};

struct render_window;

/* 1 if a window could be shown: SDL_VIDEODRIVER, DISPLAY or
 * WAYLAND_DISPLAY is set and non-empty. */
int render_display_available(void);

/* Opens a window (or a headless stand-in). With a window, failure of SDL
 * (no usable display, driver error) is GR_EDEVICE naming the SDL call and
 * suggesting --headless. */
int render_window_open(struct render_window **out,
                       const struct render_window_options *opts);

/* 1 when the window is headless (no SDL). */
int render_window_is_headless(const struct render_window *w);

/* Shows `frame` (any size: the texture follows it). Headless: keeps a copy
 * for render_window_capture. */
int render_window_present(struct render_window *w,
                          const struct render_image *frame);

/* Next pending event into *ev: returns 1, or 0 when there is none. Window
 * resize and expose events are handled inside (re-scale and redraw). */
int render_window_poll(struct render_window *w, struct render_event *ev);

/* Queues `key` as if it had been pressed. GR_EDEVICE if SDL refuses,
 * GR_EINVAL if the headless queue (64 keys) is full. */
int render_window_push_key(struct render_window *w, enum render_key key);

/* Sets the window title (no-op headless). */
void render_window_set_title(struct render_window *w, const char *title);

/* The last presented frame as the window shows it, at scale 1, into `out`
 * (allocated here). With a window, the frame is drawn again into the back
 * buffer, read back with SDL_RenderReadPixels (so the texture upload and
 * scaling are part of what is captured) and reduced by the integer scale;
 * headless, it is a copy of the frame. */
int render_window_capture(struct render_window *w, struct render_image *out);

/* Resizes the window to width×height screen pixels, as a person dragging
 * its edge would (no-op headless); the next present or poll re-picks the
 * integer scale and centres the frame. GR_EINVAL for a size < 1. */
int render_window_resize(struct render_window *w, int width, int height);

/* The integer scale in use (1 headless). */
int render_window_scale(const struct render_window *w);

/* Sleeps so that successive calls are 1/fps seconds apart (no-op
 * headless). */
void render_window_wait_frame(struct render_window *w, int fps);

void render_window_close(struct render_window *w);

/* "space", "left", "right", "up", "down", "plus", "minus", "home", "end",
 * "n", "p", "s", "q", "esc", "backspace", "enter" (also "+", "-"). */
const char *render_key_name(enum render_key key);

/* Parses a key name (as above); RENDER_KEY_NONE for an unknown name. */
enum render_key render_key_parse(const char *name);

#endif
