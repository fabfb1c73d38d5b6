#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets under tests/fuzz/seeds/
(except checkpoint/, written by the C program fuzz_make_checkpoint_seeds
with grove's own checkpoint writer). Small valid inputs of each reader, so
that the fuzzer starts from files that parse. Run from the repository
root:

    /usr/bin/python3 tests/fuzz/make_seeds.py

Only the standard library; zip entries have a fixed date, so the output is
the same on every run."""
import io
import os
import zipfile

DATE = (2024, 1, 2, 3, 4, 6)

MRG_1 = b"""
( (S
    (NP-SBJ (NNP Pierre) (NNP Vinken) )
    (, ,)
    (VP (MD will)
      (VP (VB join)
        (NP (DT the) (NN board) )
        (NP-TMP (NNP Nov.) (CD 29) )))
    (. .) ))
( (S
    (NP-SBJ-1 (-NONE- *) )
    (VP (VBZ is)
      (NP-PRD (NP (NN chairman) )
        (PP (IN of) (NP (NNP Elsevier) (NNP N.V.) ))))
    (. .) ))
"""

MRG_2 = b"""( (S (NP-SBJ (PRP It) ) (VP (VBD was) (ADJP-PRD (JJ 'll) ) (S (-NONE- *T*-1) )) (. .) ))
( (FRAG (NP (CD 1987) ) (: --) (NP (NNS sales) ) ))
"""


def write(folder, name, data):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def treebank_zip(method_1, method_2, prefix):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data, method in (
                (prefix + "README", b"a sample\n", zipfile.ZIP_STORED),
                (prefix + "wsj_0001.mrg", MRG_1, method_1),
                (prefix + "wsj_0002.mrg", MRG_2, method_2)):
            info = zipfile.ZipInfo(name, DATE)
            info.compress_type = method
            z.writestr(info, data)
    return buf.getvalue()


def main():
    root = "tests/fuzz/seeds"
    tb = os.path.join(root, "treebank")
    write(tb, "wsj_0001.mrg", MRG_1)
    write(tb, "two_files_deflated.zip",
          treebank_zip(zipfile.ZIP_DEFLATED, zipfile.ZIP_DEFLATED,
                       "treebank/combined/"))
    write(tb, "two_files_stored.zip",
          treebank_zip(zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, ""))

    co = os.path.join(root, "corpus")
    write(co, "three_splits",
          b" the cat sat on the mat \n the dog <unk> N\r\na b\n\0"
          b" the cat N \n\0 a mat\r the dog")
    write(co, "train_only", b"one two three\none\n")

    oc = os.path.join(root, "ocn_config")
    write(oc, "ocn", b"kind ocn\noptions 3\nhidden 128\nwidth 64\nobs 1076\n"
          b"actions 5\ntau 1\ntasks AC,BD,CE\n")
    write(oc, "moe_world", b"kind moe\noptions 2\nhidden 16\nwidth 8\n"
          b"obs 1076\nactions 5\ntau 0.5\ntasks AC\ncontroller blind\n"
          b"options_ignore 0:1\nbalance 0.25\nworld width 8\n"
          b"world height 8\nworld n_each 2\nworld workshops off\n"
          b"world coarse_view on\nworld max_steps 40\n")

    nt = os.path.join(root, "nlp_text")
    # first byte even: an LM checkpoint's config; odd: a syneval TSV
    write(nt, "lm_config", b"\x00grove-lm 1\nmodel onlstm\nvocab 3\n"
          b"emsize 8\nnhid 8\nnlayers 2\nchunk-size 4\ndropout 0.5\n"
          b"dropouth 0.25\ndropouti 0.5\ndropoute 0.1\nwdrop 0.45\n"
          b"alpha 2\nbeta 1\nwords 3\n<eos>\nthe\ncat\n")
    write(nt, "syneval", b"\x01task\tcondition\tgrammatical\tungrammatical"
          b"\tungrammatical2\nsimple_agrmt\tsing_MS_MV\tthe author laughs"
          b"\tthe author laugh\t\nlong_vp_coord\tplur\tthe dogs run and "
          b"eat\tthe dogs run and eats\tthe dogs runs and eat\n")


if __name__ == "__main__":
    main()
