"""grove.Replay on files the grove binary writes (grove craft demos,
grove craft run --record) and on damaged copies of them."""

import os
import unittest

import numpy as np

import grove

from .helpers import ROOT, TempDir, run_grove

tmp = None
DEMOS = None


def setUpModule():
    global tmp, DEMOS
    tmp = TempDir()
    DEMOS = tmp.join("demos.replay")
    run_grove("craft", "demos", "--tasks", "AC,CD", "--episodes", "4",
              "--keyframe-every", "4", "--seed", "3", "--quiet",
              "--out", DEMOS)


def tearDownModule():
    tmp.cleanup()


def damaged(name, data):
    path = tmp.join(name)
    with open(path, "wb") as f:
        f.write(data)
    return path


class TestReplay(unittest.TestCase):
    def test_episodes_re_simulate(self):
        header, eps = grove.read_replay(DEMOS, observations=True)
        self.assertEqual(header["agent"]["kind"], "expert")
        self.assertEqual(header["keyframe_every"], 4)
        self.assertEqual(header["env_config"]["width"], 10)
        self.assertEqual(len(eps), 8)
        config = grove.make_config(**{k: v for k, v in
                                      header["env_config"].items()})
        for i, ep in enumerate(eps):
            self.assertEqual(ep["episode"], i)
            self.assertEqual(ep["task_name"], "AC" if i < 4 else "CD")
            self.assertEqual(ep["task"][0],
                             "get wood" if i < 4 else "get iron")
            T = len(ep["actions"])
            self.assertEqual(ep["length"], T)
            self.assertTrue(ep["success"])
            self.assertAlmostEqual(ep["return"], float(ep["rewards"].sum()))
            self.assertTrue(ep["done"][-1] and not ep["done"][:-1].any())
            self.assertNotIn("po", ep)  # the expert records no options
            # keyframes at t = 0, 4, 8, ... (before the step of that t)
            self.assertEqual([k["t"] for k in ep["keyframes"]],
                             list(range(0, T, 4)))
            # re-simulate here with single worlds: the same observations,
            # rewards and keyframe hashes
            w = grove.World(task=ep["task_name"], seed=ep["seed"],
                            n_each=header["env_config"]["n_each"])
            keys = {k["t"]: k for k in ep["keyframes"]}
            for t in range(T):
                if t in keys:
                    self.assertEqual(w.state_hash(), keys[t]["hash"])
                    self.assertEqual(w.state_bytes(), keys[t]["state"])
                    kw = grove.World.from_state_bytes(config, keys[t]["state"])
                    np.testing.assert_array_equal(kw.observe(), w.observe())
                np.testing.assert_array_equal(ep["obs"][t], w.observe())
                self.assertEqual(w.k, ep["subtask"][t])
                r, *_ = w.step(ep["actions"][t])
                self.assertEqual(r, ep["rewards"][t])
            self.assertTrue(w.done)

    def test_records_stream(self):
        with grove.Replay(DEMOS, verify=False) as r:
            recs = list(r.records())
            types = [x["type"] for x in recs]
            self.assertEqual(types[0], "header")
            self.assertEqual(types[-1], "footer")
            self.assertEqual(types.count("episode start"), 8)
            self.assertEqual(types.count("episode end"), 8)
            steps = [x for x in recs if x["type"] == "step"]
            self.assertEqual(recs[-1]["steps"], len(steps))
            kf = [x for x in recs if x["type"] == "keyframe"]
            self.assertEqual([(k["episode"], k["t"], k["offset"]) for k in kf],
                             recs[-1]["index"])
            self.assertEqual(r.keyframe_world(kf[3]).state_hash(),
                             kf[3]["hash"])
            # offsets increase and tile the file up to the footer
            for a, b in zip(recs, recs[1:]):
                self.assertEqual(a["offset"] + a["size"], b["offset"])
            self.assertTrue(r.status()["complete"])
        v = grove.verify_replay(DEMOS)
        self.assertEqual(v["episodes"], 8)
        self.assertEqual(v["steps"], len(steps))
        self.assertEqual(v["keyframes"], len(kf))

    def test_golden_fixture(self):
        path = os.path.join(ROOT, "tests", "fixtures", "replays",
                            "golden.replay")
        header, eps = grove.read_replay(path, observations=True)
        self.assertGreater(len(eps), 0)
        for ep in eps:
            self.assertEqual(ep["obs"].shape, (ep["length"], 1075))

    def test_damage(self):
        with open(DEMOS, "rb") as f:
            data = f.read()
        # cut inside the third episode: an error naming the byte offset;
        # with recover, the complete episodes before it
        with grove.Replay(DEMOS, verify=False) as r:
            starts = [x["offset"] for x in r.records()
                      if x["type"] == "episode start"]
        cut = damaged("cut.replay", data[:starts[2] + 5])
        with self.assertRaisesRegex(grove.GroveError, "truncated at byte"):
            grove.read_replay(cut)
        _, eps = grove.read_replay(cut, recover=True)
        self.assertEqual(len(eps), 2)
        # a changed action: re-simulation catches it
        with grove.Replay(DEMOS, verify=False) as r:
            step = next(x for x in r.records()
                        if x["type"] == "step" and x["t"] == 1)
        b = bytearray(data)
        at = data.index(b"\xa1a", step["offset"]) + 2
        b[at] = (b[at] + 1) % 4
        forged = damaged("forged.replay", bytes(b))
        with self.assertRaisesRegex(grove.GroveError, "episode 0"):
            grove.read_replay(forged)
        with self.assertRaisesRegex(grove.GroveError, "byte"):
            grove.verify_replay(forged)
        with self.assertRaisesRegex(grove.GroveError, "nothere"):
            grove.Replay(tmp.join("nothere.replay"))
        with self.assertRaises(grove.GroveError):
            grove.read_replay(damaged("junk.replay", b"\x00" * 64))


if __name__ == "__main__":
    unittest.main()
