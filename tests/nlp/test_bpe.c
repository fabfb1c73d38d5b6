/* Byte-pair encoding (nlp/data/bpe.h): the merges of Sennrich et al.'s
 * example corpus worked out by hand ("low" x5, "lower" x2, "newest" x6,
 * "widest" x3: pair counts e s 9, s t</w> 9 (tie: "e s" < "s t</w>"),
 * then es t</w> 9, then l o 7), encoding with them, the round trip
 * decode(encode(line)) = line on a corpus and on unseen words and
 * characters, determinism, save/load, and bad files. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "nlp/data/bpe.h"
#include "tests/test.h"

static const char *merge_text(const struct nlp_bpe *b, int k, char *buf)
{
    sprintf(buf, "%s %s", nlp_vocab_word(&b->sym, b->merge[3 * k]),
            nlp_vocab_word(&b->sym, b->merge[3 * k + 1]));
    return buf;
}

int main(void)
{
    const char *paper[] = {"low low low low low lower lower",
                           "newest newest newest newest newest newest",
                           "widest widest widest"};
    struct nlp_bpe b;
    CHECK(nlp_bpe_learn(&b, paper, 3, 3) == 0);
    char m[128], out[512], back[512];
    CHECK(b.n_merges == 3);
    CHECK_MSG(strcmp(merge_text(&b, 0, m), "e s") == 0, "merge 0: %s", m);
    CHECK_MSG(strcmp(merge_text(&b, 1, m), "es t</w>") == 0, "merge 1: %s",
              m);
    CHECK_MSG(strcmp(merge_text(&b, 2, m), "l o") == 0, "merge 2: %s", m);
    CHECK(nlp_bpe_encode_line(&b, "lowest  newer", out, sizeof out) == 0);
    CHECK_MSG(strcmp(out, "lo@@ w@@ est n@@ e@@ w@@ e@@ r") == 0, "encode: %s",
              out);
    CHECK(nlp_bpe_decode_line(out, back, sizeof back) == 0);
    CHECK_MSG(strcmp(back, "lowest newer") == 0, "decode: %s", back);
    nlp_bpe_free(&b);
    /* all merges until no pair occurs twice: the frequent words whole */
    CHECK(nlp_bpe_learn(&b, paper, 3, 1000) == 0);
    CHECK(b.n_merges < 1000);
    CHECK(nlp_bpe_encode_line(&b, "newest low widest", out, sizeof out) == 0);
    CHECK_MSG(strcmp(out, "newest low widest") == 0, "whole words: %s", out);

    /* the round trip on a corpus and on unseen text */
    const char *corpus[] = {
        "the quick brown fox jumps over the lazy dog",
        "a stitch in time saves nine , the early bird catches the worm",
        "grove builds the path ; only the data are missing here",
        "über naïve café résumé , déjà vu",
    };
    struct nlp_bpe c, c2;
    CHECK(nlp_bpe_learn(&c, corpus, 4, 40) == 0);
    CHECK(nlp_bpe_learn(&c2, corpus, 4, 40) == 0);
    int same = c.n_merges == c2.n_merges && c.n_merges > 10;
    for (int k = 0; same && k < c.n_merges; k++) {
        char m2[128];
        same = strcmp(merge_text(&c, k, m), merge_text(&c2, k, m2)) == 0;
    }
    CHECK_MSG(same, "learning twice gives different merges");
    nlp_bpe_free(&c2);
    const char *probe[] = {"the quick brown fox", "zebra ünïcode ☃ x",
                           "  spaced\tout  words ", "thethethe the"};
    const char *want[] = {"the quick brown fox", "zebra ünïcode ☃ x",
                          "spaced out words", "thethethe the"};
    for (int i = 0; i < 4 + 4; i++) {
        const char *in = i < 4 ? corpus[i] : probe[i - 4];
        CHECK(nlp_bpe_encode_line(&c, in, out, sizeof out) == 0);
        CHECK(nlp_bpe_decode_line(out, back, sizeof back) == 0);
        const char *w = i < 4 ? in : want[i - 4];
        CHECK_MSG(strcmp(back, w) == 0, "round trip: '%s' -> '%s' -> '%s'",
                  in, out, back);
    }

    /* save, load, same encoding; refusals */
    char dir[] = "/tmp/grove_bpe_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256], bad[256];
    snprintf(path, sizeof path, "%s/codes", dir);
    snprintf(bad, sizeof bad, "%s/bad", dir);
    CHECK(nlp_bpe_save(&c, path, 0) == 0);
    CHECK(nlp_bpe_save(&c, path, 0) == GR_EEXIST);
    struct nlp_bpe l;
    CHECK(nlp_bpe_load(&l, path) == 0 && l.n_merges == c.n_merges);
    char out2[512];
    for (int i = 0; i < 4; i++) {
        nlp_bpe_encode_line(&c, probe[i], out, sizeof out);
        nlp_bpe_encode_line(&l, probe[i], out2, sizeof out2);
        CHECK_MSG(strcmp(out, out2) == 0, "loaded codes encode '%s' as '%s', "
                  "learned as '%s'", probe[i], out2, out);
    }
    nlp_bpe_free(&l);
    FILE *fp = fopen(bad, "w");
    fputs("#version: grove-bpe 1\ne s\nes\n", fp);
    fclose(fp);
    CHECK(nlp_bpe_load(&l, bad) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "line 3");
    fp = fopen(bad, "w");
    fputs("e s\n", fp);
    fclose(fp);
    CHECK(nlp_bpe_load(&l, bad) < 0);
    CHECK_STR_CONTAINS(gr_last_error(), "not a grove BPE codes file");
    CHECK(nlp_bpe_encode_line(&c, "the quick brown fox", out, 6) < 0);
    unlink(path);
    unlink(bad);
    rmdir(dir);
    nlp_bpe_free(&c);
    nlp_bpe_free(&b);
    return test_report("nlp_seq2seq_bpe");
}
