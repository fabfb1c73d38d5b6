"""The standalone readers printed in docs/formats.md: each Python block is
taken from the Markdown file as it stands, run on files that the built grove
makes here, and compared with python/grove's readers (grove.read_checkpoint,
grove.Replay). A reader in the docs that drifts from the formats fails here."""

import os
import re
import unittest

import numpy as np

import grove

from .helpers import ROOT, BC_FLAGS, TempDir, run_grove

DOC = os.path.join(ROOT, "docs", "formats.md")

tmp = None


def setUpModule():
    global tmp
    tmp = TempDir()


def tearDownModule():
    tmp.cleanup()


def doc_function(name):
    """The ```python block of docs/formats.md that defines `name`, executed;
    returns that function."""
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    blocks = re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)
    found = [b for b in blocks if re.search(r"^def %s\(" % name, b, re.M)]
    if len(found) != 1:
        raise AssertionError("docs/formats.md: %d python blocks define %s"
                             % (len(found), name))
    namespace = {}
    exec(compile(found[0], DOC, "exec"), namespace)
    return namespace[name]


def bc_flags_without(flag):
    """helpers.BC_FLAGS less one flag and its value."""
    out, skip = [], False
    for a in BC_FLAGS:
        if skip:
            skip = False
        elif a == flag:
            skip = True
        else:
            out.append(a)
    return out


class TestDocCheckpointReader(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.read = staticmethod(doc_function("read_checkpoint"))
        cls.rundir = tmp.join("bc0")
        # --updates 0: the initial model only (about a second)
        run_grove("train", "bc", *bc_flags_without("--updates"),
                  "--updates", "0", "--out", cls.rundir)

    def check_same(self, path):
        config, arrays, kinds = self.read(path)
        ref = grove.read_checkpoint(path)
        self.assertEqual(config, ref.config)
        self.assertEqual(sorted(arrays), sorted(ref.tensors))
        self.assertEqual(kinds, ref.kinds)
        for name, a in arrays.items():
            b = ref[name]
            self.assertEqual(a.shape, b.shape, name)
            self.assertEqual(a.dtype.kind, b.dtype.kind, name)
            self.assertEqual(a.dtype.itemsize, b.dtype.itemsize, name)
            self.assertTrue(np.array_equal(a, b), name)
        return arrays, kinds

    def test_last_ckpt_every_kind(self):
        arrays, kinds = self.check_same(
            os.path.join(self.rundir, "last.ckpt"))
        # last.ckpt has weights, Adam's moments and the i32 training state
        self.assertEqual(set(kinds.values()), {"param", "buffer", "optim"})
        self.assertIn(np.dtype("<i4"), {a.dtype for a in arrays.values()})
        self.assertEqual(arrays["ctrl.head.weight"].shape, (3 + 16, 16))

    def test_best_ckpt(self):
        self.check_same(os.path.join(self.rundir, "best.ckpt"))

    def test_damaged_tensor_is_refused(self):
        path = os.path.join(self.rundir, "best.ckpt")
        with open(path, "rb") as f:
            data = bytearray(f.read())
        big = grove.read_checkpoint(path)["opt.l1.wx"].tobytes()
        at = data.find(big)
        self.assertGreater(at, 0)
        data[at + len(big) // 2] ^= 0x40
        bad = tmp.join("damaged.ckpt")
        with open(bad, "wb") as f:
            f.write(bytes(data))
        with self.assertRaisesRegex(ValueError, "opt.l1.wx: CRC mismatch"):
            self.read(bad)


class TestDocReplayReader(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.read = staticmethod(doc_function("read_replay"))
        cls.path = tmp.join("demos.replay")
        run_grove("craft", "demos", "--tasks", "AC,CD", "--episodes", "3",
                  "--seed", "5", "--out", cls.path)

    def test_same_as_grove_replay(self):
        header, episodes = self.read(self.path)
        with grove.Replay(self.path) as r:
            ref = list(r.episodes())
            self.assertEqual(header["env_config"]["width"],
                             r.header["env_config"]["width"])
            self.assertEqual(header["agent"]["kind"],
                             r.header["agent"]["kind"])
        self.assertEqual(header["magic"], "grove-replay")
        self.assertEqual(len(episodes), len(ref))
        self.assertEqual(len(episodes), 6)
        for mine, theirs in zip(episodes, ref):
            self.assertEqual(mine["seed"], theirs["seed"])
            self.assertEqual(mine["task"], list(theirs["task"]))
            self.assertEqual(mine["actions"], theirs["actions"].tolist())
            self.assertAlmostEqual(mine["return"], theirs["return"], places=6)

    def test_damage_and_truncation_are_refused(self):
        with open(self.path, "rb") as f:
            data = bytearray(f.read())
        cut = tmp.join("cut.replay")
        with open(cut, "wb") as f:
            f.write(bytes(data[:len(data) // 2]))
        with self.assertRaisesRegex(ValueError, "truncated"):
            self.read(cut)
        data[len(data) // 3] ^= 0x01
        bad = tmp.join("bad.replay")
        with open(bad, "wb") as f:
            f.write(bytes(data))
        with self.assertRaisesRegex(ValueError, "CRC mismatch"):
            self.read(bad)


class TestNonUtf8Paths(unittest.TestCase):
    """A path holding a byte that is not UTF-8 (0xff) is stored as
    MessagePack bin: a plain msgpack reader returns its bytes, the readers
    of the docs and python/grove read the files, grove shows it escaped."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tmp.join(os.fsdecode(b"path\xff"))
        os.makedirs(cls.dir)
        cls.demos = os.path.join(cls.dir, "demos.replay")
        run_grove("craft", "demos", "--tasks", "AC,CD", "--episodes", "12",
                  "--out", cls.demos)
        run_dir = os.path.join(cls.dir, "run")
        run_grove("train", "bc", *bc_flags_without("--updates"),
                  "--updates", "0", "--demos", cls.demos, "--out", run_dir)
        cls.ckpt = os.path.join(run_dir, "best.ckpt")
        cls.replay = os.path.join(cls.dir, "ocn.replay")
        run_grove("craft", "run", "--checkpoint", cls.ckpt, "--tasks", "AC",
                  "--episodes", "1", "--record", cls.replay, "--quiet")

    def test_checkpoint_config_is_bin(self):
        import msgpack
        with open(self.ckpt, "rb") as f:
            top = msgpack.unpackb(f.read(), raw=False)
        self.assertIsInstance(top["config"], bytes)
        self.assertIn(b"demos file " + os.fsencode(self.demos) + b"\n",
                      top["config"])
        config, _, _ = doc_function("read_checkpoint")(self.ckpt)
        ref = grove.read_checkpoint(self.ckpt)
        self.assertEqual(config, ref.config)
        self.assertEqual(ref.config_lines()["demos"], "file " + self.demos)

    def test_replay_checkpoint_is_bin(self):
        import msgpack
        with open(self.replay, "rb") as f:
            header = next(iter(msgpack.Unpacker(f, raw=False)))
        self.assertEqual(header["agent"]["checkpoint"],
                         os.fsencode(self.ckpt))
        with grove.Replay(self.replay) as r:
            self.assertEqual(r.header["agent"]["checkpoint"], self.ckpt)
        h, _ = doc_function("read_replay")(self.replay)
        self.assertEqual(h["agent"]["checkpoint"], os.fsencode(self.ckpt))

    def test_info_shows_it_escaped(self):
        out = run_grove("replay", "info", self.replay)
        self.assertIn("checkpoint " + self.ckpt.replace(
            os.fsdecode(b"\xff"), "\\xff"), out)
        run_grove("replay", "verify", self.replay)


if __name__ == "__main__":
    unittest.main()
