/* render/window.h with SDL's dummy video driver (a real SDL window and
 * software renderer, no display needed) and headless: what the window
 * shows, read back, equals the frame at every integer scale, including
 * after the window is resized to sizes that are not multiples of the
 * frame; pushed keys arrive in order; key names round-trip; the automatic
 * headless choice follows the environment. Skips (77) when SDL has no
 * dummy driver. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "render/image.h"
#include "render/window.h"
#include "tests/test.h"

static void pattern(struct render_image *img, unsigned salt)
{
    for (int y = 0; y < img->height; y++) {
        for (int x = 0; x < img->width; x++) {
            render_pixel(img, x, y,
                         render_rgb((unsigned)(x * 9 + salt),
                                    (unsigned)(y * 5) ^ salt,
                                    (unsigned)(x * y) + salt));
        }
    }
}

static void check_capture(struct render_window *w,
                          const struct render_image *frame, const char *what)
{
    struct render_image shot;
    int rc = render_window_capture(w, &shot);
    CHECK_MSG(rc == 0, "%s: %s", what, gr_last_error());
    if (rc == 0) {
        CHECK_MSG(render_image_equal(&shot, frame),
                  "%s: the window does not show the frame", what);
        render_image_free(&shot);
    }
}

static void drain(struct render_window *w)
{
    struct render_event ev;
    while (render_window_poll(w, &ev)) {
    }
}

static void test_keys_and_env(void)
{
    for (int k = RENDER_KEY_NONE + 1; k < RENDER_KEY_COUNT; k++) {
        CHECK_MSG((int)render_key_parse(render_key_name((enum render_key)k)) == k,
                  "key %d (%s)", k, render_key_name((enum render_key)k));
    }
    CHECK(render_key_parse("+") == RENDER_KEY_PLUS);
    CHECK(render_key_parse("-") == RENDER_KEY_MINUS);
    CHECK(render_key_parse("escape") == RENDER_KEY_ESCAPE);
    CHECK(render_key_parse("jump") == RENDER_KEY_NONE);

    unsetenv("DISPLAY");
    unsetenv("WAYLAND_DISPLAY");
    unsetenv("SDL_VIDEODRIVER");
    CHECK(render_display_available() == 0);
    setenv("DISPLAY", "", 1); /* empty counts as unset */
    CHECK(render_display_available() == 0);
    struct render_window *w = NULL;
    struct render_window_options o = {"t", 10, 10, RENDER_HEADLESS_AUTO, 0};
    CHECK(render_window_open(&w, &o) == 0);
    CHECK(w != NULL && render_window_is_headless(w));
    render_window_close(w);
    setenv("DISPLAY", ":99", 1);
    CHECK(render_display_available() == 1);
    unsetenv("DISPLAY");
    setenv("SDL_VIDEODRIVER", "dummy", 1);
    CHECK(render_display_available() == 1);
}

static void test_headless(void)
{
    struct render_window *w = NULL;
    struct render_window_options o = {"t", 30, 20, 1, 0};
    CHECK(render_window_open(&w, &o) == 0);
    struct render_image frame;
    CHECK(render_image_init(&frame, 30, 20) == 0);
    struct render_image none;
    CHECK(render_window_capture(w, &none) == GR_EINVAL); /* nothing shown */
    pattern(&frame, 3);
    CHECK(render_window_present(w, &frame) == 0);
    check_capture(w, &frame, "headless");
    CHECK(render_window_scale(w) == 1);
    CHECK(render_window_resize(w, 100, 100) == 0);
    CHECK(render_window_push_key(w, RENDER_KEY_SPACE) == 0);
    CHECK(render_window_push_key(w, RENDER_KEY_Q) == 0);
    struct render_event ev;
    CHECK(render_window_poll(w, &ev) == 1 && ev.key == RENDER_KEY_SPACE);
    CHECK(render_window_poll(w, &ev) == 1 && ev.key == RENDER_KEY_Q);
    CHECK(render_window_poll(w, &ev) == 0);
    int pushed = 0;
    while (render_window_push_key(w, RENDER_KEY_N) == 0 && pushed < 1000) {
        pushed++;
    }
    CHECK(pushed == 64);
    CHECK_STR_CONTAINS(gr_last_error(), "too many queued keys");
    render_image_free(&frame);
    render_window_close(w);
}

static int test_dummy(void)
{
    setenv("SDL_VIDEODRIVER", "dummy", 1);
    struct render_window *w = NULL;
    const int fw = 40, fh = 24;
    struct render_window_options o = {"grove test", fw, fh, 0, 2};
    if (render_window_open(&w, &o) < 0) {
        test_absent(NULL, "SDL's dummy video driver is not available: %s",
                    gr_last_error());
        return TEST_SKIP;
    }
    CHECK(!render_window_is_headless(w));
    struct render_image frame;
    CHECK(render_image_init(&frame, fw, fh) == 0);
    pattern(&frame, 11);
    CHECK(render_window_present(w, &frame) == 0);
    CHECK(render_window_scale(w) == 2);
    check_capture(w, &frame, "scale 2");

    /* a size that is no multiple of the frame: the largest scale that
     * fits, frame centred */
    CHECK(render_window_resize(w, 3 * fw + 7, 3 * fh + 5) == 0);
    drain(w);
    CHECK(render_window_present(w, &frame) == 0);
    CHECK_MSG(render_window_scale(w) == 3, "scale %d after resize",
              render_window_scale(w));
    check_capture(w, &frame, "resized to 3x + margin");
    /* the narrow side decides */
    CHECK(render_window_resize(w, fw + 10, 5 * fh) == 0);
    drain(w);
    CHECK(render_window_present(w, &frame) == 0);
    CHECK(render_window_scale(w) == 1);
    check_capture(w, &frame, "narrow window");
    CHECK(render_window_resize(w, 0, 10) == GR_EINVAL);

    /* a frame of another size gets a new texture */
    struct render_image other;
    CHECK(render_image_init(&other, 17, 9) == 0);
    pattern(&other, 99);
    CHECK(render_window_present(w, &other) == 0);
    check_capture(w, &other, "new frame size");

    /* pushed keys come back through SDL's queue, in order */
    render_window_set_title(w, "grove test: keys");
    CHECK(render_window_push_key(w, RENDER_KEY_RIGHT) == 0);
    CHECK(render_window_push_key(w, RENDER_KEY_PLUS) == 0);
    CHECK(render_window_push_key(w, RENDER_KEY_ESCAPE) == 0);
    enum render_key got[3] = {RENDER_KEY_NONE, RENDER_KEY_NONE,
                              RENDER_KEY_NONE};
    struct render_event ev;
    int n = 0;
    while (n < 3 && render_window_poll(w, &ev)) {
        if (ev.type == RENDER_EVENT_KEY) {
            got[n++] = ev.key;
        }
    }
    CHECK(n == 3 && got[0] == RENDER_KEY_RIGHT && got[1] == RENDER_KEY_PLUS &&
          got[2] == RENDER_KEY_ESCAPE);
    render_window_wait_frame(w, 1000);
    render_image_free(&other);
    render_image_free(&frame);
    render_window_close(w);
    return 0;
}

int main(void)
{
    test_keys_and_env();
    test_headless();
    int rc = test_dummy();
    if (rc == TEST_SKIP && test_failures == 0) {
        return TEST_SKIP;
    }
    return test_report("render_window");
}
