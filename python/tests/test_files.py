"""grove.read_checkpoint and grove.read_metrics on a tiny `grove train bc`
run made here, and on damaged copies of its files."""

import os
import re
import unittest

import msgpack
import numpy as np

import grove

from .helpers import TempDir, bc_run

tmp = None
RUN = None
STDOUT = None


def setUpModule():
    global tmp, RUN, STDOUT
    tmp = TempDir()
    RUN, STDOUT = bc_run(tmp, "bc")


def tearDownModule():
    tmp.cleanup()


def write(name, data):
    path = tmp.join(name)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    return path


class TestCheckpoint(unittest.TestCase):
    def test_ocn_parameters(self):
        ck = grove.read_checkpoint(os.path.join(RUN, "best.ckpt"))
        O, K, d, w, A = 1075, 3, 16, 16, 5
        want = {"ctrl.l1.wx": (O, w), "ctrl.l1.wh": (w, d),
                "ctrl.l1.bias": (w,), "ctrl.l2.weight": (w, w),
                "ctrl.l2.bias": (w,), "ctrl.head.weight": (K + d, w),
                "ctrl.head.bias": (K + d,), "ctrl.h_init": (2, d),
                "opt.l1.wx": (O, K * w), "opt.l1.wh": (K, w, d),
                "opt.l1.bias": (K, w), "opt.l2.weight": (K, w, w),
                "opt.l2.bias": (K, w), "opt.head.weight": (K, A + d + 1, w),
                "opt.head.bias": (K, A + d + 1)}
        params = ck.params()
        self.assertEqual({n: a.shape for n, a in params.items()}, want)
        for a in params.values():
            self.assertEqual(a.dtype, np.float32)
            self.assertTrue(np.isfinite(a).all())
        cfg = ck.config_lines()
        self.assertEqual((cfg["kind"], cfg["options"], cfg["tasks"]),
                         ("ocn", "3", "AC,CD"))
        with open(os.path.join(RUN, "config")) as f:
            self.assertIn(ck.config.splitlines()[0], f.read())
        # last.ckpt also has Adam's state; kinds= selects
        last = grove.read_checkpoint(os.path.join(RUN, "last.ckpt"))
        self.assertIn("optim", set(last.kinds.values()))
        only = grove.read_checkpoint(os.path.join(RUN, "last.ckpt"),
                                     kinds=("param",))
        self.assertEqual(set(only.kinds.values()), {"param"})

    def test_values_equal_the_raw_bytes(self):
        # an independent decode of one tensor: the raw MessagePack map
        path = os.path.join(RUN, "best.ckpt")
        with open(path, "rb") as f:
            top = msgpack.unpackb(f.read())
        t = top["tensors"]["opt.head.bias"]
        raw = np.frombuffer(t["data"], "<f4").reshape(t["shape"])
        np.testing.assert_array_equal(
            grove.read_checkpoint(path)["opt.head.bias"], raw)

    def test_damaged(self):
        path = os.path.join(RUN, "best.ckpt")
        with open(path, "rb") as f:
            data = f.read()
        top = msgpack.unpackb(data)
        t = top["tensors"]["ctrl.l2.bias"]
        at = data.index(t["data"]) + 3
        flipped = bytearray(data)
        flipped[at] ^= 0x10
        with self.assertRaisesRegex(grove.GroveError,
                                    "tensor 'ctrl.l2.bias': CRC mismatch"):
            grove.read_checkpoint(write("flip.ckpt", bytes(flipped)))
        with self.assertRaisesRegex(grove.GroveError, "not a grove"):
            grove.read_checkpoint(write("cut.ckpt", data[:len(data) // 2]))
        top["tensors"]["ctrl.l2.bias"]["shape"] = [3]
        with self.assertRaisesRegex(grove.GroveError,
                                    "ctrl.l2.bias': 64 data bytes, shape"):
            grove.read_checkpoint(write("shape.ckpt", msgpack.packb(top)))
        top["version"] = 2
        with self.assertRaisesRegex(grove.GroveError, "version 2"):
            grove.read_checkpoint(write("v2.ckpt", msgpack.packb(top)))
        with self.assertRaisesRegex(grove.GroveError, "not a grove"):
            grove.read_checkpoint(write("map.ckpt", msgpack.packb({"a": 1})))
        with self.assertRaisesRegex(grove.GroveError, "cannot read"):
            grove.read_checkpoint(tmp.join("absent.ckpt"))


class TestMetrics(unittest.TestCase):
    def test_bc_metrics(self):
        m = grove.read_metrics(os.path.join(RUN, "metrics.csv"))
        self.assertEqual(list(m)[:3], ["update", "nll", "action_acc"])
        np.testing.assert_array_equal(m["update"], [0, 2, 4])
        # train_nll is empty on the first row
        self.assertTrue(np.isnan(m["train_nll"][0]))
        self.assertFalse(np.isnan(m["train_nll"][1:]).any())
        # the last row equals grove's own summary line on stdout
        line = re.search(r"update 4: nll ([0-9.]+)\s+action_acc ([0-9.]+)",
                         STDOUT)
        self.assertIsNotNone(line, STDOUT)
        self.assertAlmostEqual(m["nll"][-1], float(line.group(1)), places=4)
        self.assertAlmostEqual(m["action_acc"][-1], float(line.group(2)),
                               places=4)

    def test_bad_metrics(self):
        with self.assertRaisesRegex(grove.GroveError, "line 3 has 1 cells"):
            grove.read_metrics(write("ragged.csv", "a,b\n1,2\n3\n"))
        with self.assertRaisesRegex(grove.GroveError,
                                    "line 2, column 'b': 'x'"):
            grove.read_metrics(write("text.csv", "a,b\n1,x\n"))
        with self.assertRaisesRegex(grove.GroveError, "empty"):
            grove.read_metrics(write("empty.csv", ""))


if __name__ == "__main__":
    unittest.main()
