#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets under tests/fuzz/seeds/
(except checkpoint/, written by the C program fuzz_make_checkpoint_seeds
with grove's own checkpoint writer): small valid inputs of each reader, so
that the fuzzer starts from files that parse. Also writes hand-made nasty
inputs under tests/fuzz/regressions/NAME/hand-* (huge declared counts and
sizes, Zip64 claims), which ctest replays beside the fuzzers' finds. Run
from the repository root:

    /usr/bin/python3 tests/fuzz/make_seeds.py

Only the standard library; zip entries have a fixed date, so the output is
the same on every run."""
import io
import os
import struct
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
    # one line per split: an empty split is refused since the loader names
    # it (nlp_corpus), so every seed has all three
    write(co, "one_line_splits", b"one two three\none\n\0two\n\0three one\n")

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

    nd = os.path.join(root, "nlp_data")
    # first byte mod 3: 0 ListOps TSV, 1 logic pairs, 2 SST trees
    write(nd, "listops", b"\x00" b"0\t( ( ( ( ( [SM 6 ) 5 ) 9 ) 0 ) ] )\n"
          b"0\t( ( ( ( ( [MIN 6 ) 3 ) 5 ) 0 ) ] )\n7\t7\n")
    write(nd, "logic", b"\x01" b"#\ta\tb\n=\tb\tb\n"
          b"<\t( not ( f ( or ( d ( or f ) ) ) ) )\t( f ( or ( not d ) ) )\n"
          b"#\te\t( f ( and ( ( f ( or c ) ) ( and c ) ) ) )\n")
    write(nd, "sst", b"\x02" b"(3 (2 It) (4 (2 's) (4 (3 lovely) (2 film))))\n"
          b"(1 (2 No) (1 (1 one) (2 .)))\n")
    nasty()


def eocd_at(z):
    return z.rindex(b"PK\x05\x06")


def nasty():
    """Inputs that ask a reader to trust a size or a count."""
    reg = "tests/fuzz/regressions"
    base = treebank_zip(zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED, "")
    e = eocd_at(base)
    tb = os.path.join(reg, "treebank")
    # 65,535 entries declared, 3 present
    z = bytearray(base)
    z[e + 8:e + 12] = struct.pack("<HH", 0xFFFF, 0xFFFF)
    write(tb, "hand-count-65535.zip", bytes(z))
    # every entry declares 4 GiB - 2 uncompressed bytes
    z = bytearray(base)
    p = 0
    while True:
        p = z.find(b"PK\x01\x02", p)
        if p < 0:
            break
        z[p + 24:p + 28] = struct.pack("<I", 0xFFFFFFFE)
        p += 4
    write(tb, "hand-size-4g.zip", bytes(z))
    # a Zip64 end record claiming 2^62 entries in a 2^62-byte directory
    cd_size, cd_off = struct.unpack("<II", base[e + 12:e + 20])
    z64 = struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0,
                      1 << 62, 1 << 62, 1 << 62, cd_off)
    loc = struct.pack("<IIQI", 0x07064B50, 0, e, 1)
    end = bytearray(base[e:])
    end[8:20] = struct.pack("<HHII", 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF)
    write(tb, "hand-zip64-huge.zip", base[:e] + z64 + loc + bytes(end))

    ck = os.path.join(reg, "checkpoint")
    write(ck, "hand-map32-huge", b"\xdf\xff\xff\xff\xff")
    # a plausible head, then a tensor whose data claims 4 GiB - 16 bytes
    head = (b"\x85\xa6format\xb0grove-checkpoint\xa7version\x01"
            b"\xa6config\xa0\xacconfig_crc32\x00\xa7tensors\x81"
            b"\xa6fc.bias\x85\xa4kind\xa5param\xa5dtype\xa3f32"
            b"\xa5shape\x91\x03\xa4data\xc6\xff\xff\xff\xf0")
    write(ck, "hand-bin32-huge", head + b"\x00" * 12)

    co = os.path.join(reg, "corpus")
    write(co, "hand-one-long-word", b"w" * 4000)
    write(co, "hand-only-line-ends", b"\r\n\r\r\n\n\0\r\0\n")

    nt = os.path.join(reg, "nlp_text")
    write(nt, "hand-words-int32-max", b"\x00grove-lm 1\nvocab 3\n"
          b"words 2147483647\nthe\n")
    write(nt, "hand-syneval-header-only",
          b"\x01task\tcondition\tgrammatical\tungrammatical\n")


if __name__ == "__main__":
    main()
