/* core/lines.h: line walking, KEY VALUE splitting and lookup on
 * hand-written texts (numbers, empty lines, a missing final '\n', a line
 * one byte too long for the buffer). */
#include <string.h>

#include "core/error.h"
#include "core/lines.h"
#include "tests/test.h"

static int span_is(const char *s, size_t n, const char *want)
{
    return s != NULL && n == strlen(want) && memcmp(s, want, n) == 0;
}

int main(void)
{
    /* Lines and their numbers; an empty line counts, a final '\n' does
     * not open one more line, the last line may lack its '\n'. */
    struct gr_lines it;
    gr_lines_begin(&it, "a 1\n\nbb 2 3\nlast");
    CHECK(gr_lines_next(&it) == 1 && it.no == 1);
    CHECK(span_is(it.line, it.len, "a 1"));
    CHECK(gr_lines_next(&it) == 1 && it.no == 2 && it.len == 0);
    CHECK(gr_lines_next(&it) == 1 && it.no == 3);
    CHECK(span_is(it.line, it.len, "bb 2 3"));
    CHECK(gr_lines_next(&it) == 1 && it.no == 4);
    CHECK(span_is(it.line, it.len, "last"));
    CHECK(gr_lines_next(&it) == 0);
    CHECK(gr_lines_next(&it) == 0); /* stays at the end */

    gr_lines_begin(&it, "x\n");
    CHECK(gr_lines_next(&it) == 1 && gr_lines_next(&it) == 0 && it.no == 1);
    gr_lines_begin(&it, "");
    CHECK(gr_lines_next(&it) == 0 && it.no == 0);
    gr_lines_begin(&it, NULL);
    CHECK(gr_lines_next(&it) == 0);

    /* A key matches only whole, at the line's start, before a space. */
    size_t len = 99;
    gr_lines_begin(&it, "hidden 64\n");
    CHECK(gr_lines_next(&it) == 1);
    const char *v = gr_lines_value(&it, "hidden", &len);
    CHECK(span_is(v, len, "64"));
    CHECK(gr_lines_value(&it, "hid", &len) == NULL);
    CHECK(gr_lines_value(&it, "hidden 6", &len) == NULL);
    CHECK(gr_lines_value(&it, "idden", &len) == NULL);

    /* Lookup: the first line of the key wins; the value is a span into
     * the text (so a caller may read on to its '\n'); an empty value. */
    const char *text = "model onlstm\nhidden 32\nhidden 64\nnote \nxhidden 1";
    v = gr_lines_find(text, "hidden", &len);
    CHECK(span_is(v, len, "32"));
    CHECK(v == strstr(text, "32"));
    v = gr_lines_find(text, "note", &len);
    CHECK(v != NULL && len == 0 && *v == '\n');
    CHECK(gr_lines_find(text, "idden", &len) == NULL);
    CHECK(gr_lines_find(text, "width", &len) == NULL);
    v = gr_lines_find(text, "model", &len);
    CHECK(span_is(v, len, "onlstm"));

    /* KEY VALUE walk: split at the first space, lines without one passed
     * over, numbers still counting them. */
    char buf[16];
    const char *key = NULL, *value = NULL;
    gr_lines_begin(&it, "kind ocn\nheader\ntasks a,b c\n\nlast 1");
    CHECK(gr_lines_next_kv(&it, buf, sizeof buf, &key, &value) == 1);
    CHECK(strcmp(key, "kind") == 0 && strcmp(value, "ocn") == 0);
    CHECK(it.no == 1);
    CHECK(gr_lines_next_kv(&it, buf, sizeof buf, &key, &value) == 1);
    CHECK(strcmp(key, "tasks") == 0 && strcmp(value, "a,b c") == 0);
    CHECK(it.no == 3);
    CHECK(gr_lines_next_kv(&it, buf, sizeof buf, &key, &value) == 1);
    CHECK(strcmp(key, "last") == 0 && strcmp(value, "1") == 0);
    CHECK(it.no == 5);
    CHECK(gr_lines_next_kv(&it, buf, sizeof buf, &key, &value) == 0);

    /* A line that fills the buffer (15 bytes + NUL fits, 16 does not) is
     * an error naming its number and the limit. */
    gr_lines_begin(&it, "k 0123456789abc\nk 0123456789abcd\n");
    CHECK(gr_lines_next_kv(&it, buf, sizeof buf, &key, &value) == 1);
    CHECK(strcmp(value, "0123456789abc") == 0);
    CHECK(gr_lines_next_kv(&it, buf, sizeof buf, &key, &value) ==
          GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "config line 2 is longer than 15");
    /* ... even on a line with no space, which would be passed over. */
    gr_lines_begin(&it, "0123456789abcdefgh");
    CHECK(gr_lines_next_kv(&it, buf, sizeof buf, &key, &value) ==
          GR_EFORMAT);
    CHECK_STR_CONTAINS(gr_last_error(), "config line 1 ");
    return test_report("core_lines");
}
