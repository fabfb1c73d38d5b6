"""grove.Craft and grove.World against independent references: the
observation layout of craft.md §7 rebuilt here from the state, the seed
stream of §9 computed here, single worlds stepped one by one."""

import unittest

import numpy as np

import grove
from grove._lib import OBS_SIZE

M64 = (1 << 64) - 1


def mix64(z):
    """splitmix64's finaliser (craft.md §9), written here."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def episode_seed(base, world, episode):
    return mix64(mix64(base ^ world) ^ episode)


def expected_obs_parts(w):
    """Local view, inventory and direction of craft.md §7 from the state."""
    g = w.grid
    W, H = g.shape
    local = np.zeros(525, np.float32)
    for i in range(5):
        for j in range(5):
            cx, cy = w.x + i - 2, w.y + j - 2
            if 0 <= cx < W and 0 <= cy < H:
                local[(i * 5 + j) * 21 + g[cx, cy]] = 1.0
    direction = np.zeros(4, np.float32)
    direction[w.dir] = 1.0
    return local, w.inventory.astype(np.float32), direction


class TestCraft(unittest.TestCase):
    def test_batch_equals_single_worlds(self):
        # world j runs tasks[j % 2] from seed episode_seed(S, j, n) (§9);
        # every step's obs, reward and flags equal a single world's
        S, N = 7, 6
        tasks = ["AC", "CD"]
        env = grove.Craft(N, tasks, seed=S)
        obs, info = env.reset()
        worlds = [grove.World(task=tasks[j % 2], seed=episode_seed(S, j, 0))
                  for j in range(N)]
        episodes = [0] * N
        for j in range(N):
            np.testing.assert_array_equal(obs[j], worlds[j].observe())
            self.assertEqual(env.world(j).seed, episode_seed(S, j, 0))
        rng = np.random.default_rng(3)
        finished = 0
        for step in range(400):
            a = rng.integers(0, 5, N)
            obs, rew, term, trunc, info = env.step(a)
            for j in range(N):
                r, te, tr, _ = worlds[j].step(a[j])
                self.assertEqual(rew[j], r)
                self.assertEqual((term[j], trunc[j]), (te, tr))
                if te or tr:
                    finished += 1
                    self.assertEqual(info["episode_return"][j],
                                     worlds[j].episode_return)
                    self.assertEqual(info["episode_length"][j], worlds[j].t)
                    episodes[j] += 1
                    worlds[j] = grove.World(
                        task=tasks[j % 2],
                        seed=episode_seed(S, j, episodes[j]))
                np.testing.assert_array_equal(obs[j], worlds[j].observe())
        self.assertGreater(finished, 20)
        self.assertEqual(env.log.episodes, finished)

    def test_observation_layout(self):
        env = grove.Craft(4, ["AC"], seed=2, n_each=4)
        rng = np.random.default_rng(0)
        for _ in range(50):
            obs, *_ = env.step(rng.integers(0, 5, 4))
            for j in range(4):
                local, inv, direction = expected_obs_parts(env.world(j))
                np.testing.assert_array_equal(obs[j, :525], local)
                np.testing.assert_array_equal(obs[j, 1050:1071], inv)
                np.testing.assert_array_equal(obs[j, 1071:], direction)
        self.assertEqual(env.config["n_each"], 4)

    def test_buffers_are_reused(self):
        env = grove.Craft(3, "AC,CD", seed=1)
        obs0, _ = env.reset()
        addr = obs0.ctypes.data
        out = env.step(np.zeros(3, np.int64))
        self.assertIs(out[0], obs0)
        self.assertEqual(out[0].ctypes.data, addr)
        self.assertEqual(out[0].shape, (3, OBS_SIZE))
        self.assertEqual(out[0].dtype, np.float32)
        self.assertEqual(out[2].dtype, np.bool_)
        env.actions[:] = [4, 4, 4]
        self.assertIs(env.step(env.actions)[1], out[1])

    def test_reset_and_determinism(self):
        a = grove.Craft(5, ["AC"], seed=11)
        b = grove.Craft(5, ["AC"], seed=12)
        rng = np.random.default_rng(5)
        acts = rng.integers(0, 5, (100, 5))
        first = a.reset()[0].copy()
        for x in acts:
            a.step(x)
        self.assertFalse(np.array_equal(a.obs, first))
        np.testing.assert_array_equal(a.reset()[0], first)
        self.assertEqual(a.log.episodes, 0)
        b.reset(seed=11)
        for x in acts:
            ra = a.step(x)[1].copy()
            np.testing.assert_array_equal(b.step(x)[1], ra)
        np.testing.assert_array_equal(a.obs, b.obs)

    def test_expert_solves_tasks(self):
        env = grove.Craft(32, ["AC", "CD"], seed=4, reward="sparse")
        done = succ = 0
        for _ in range(200):
            _, rew, term, trunc, info = env.step(env.expert_actions())
            done += int((term | trunc).sum())
            succ += int(term.sum())
            # sparse: the only reward is 1 when the task is done
            np.testing.assert_array_equal(rew, term.astype(np.float32))
        self.assertGreater(done, 50)
        self.assertGreater(succ / done, 0.95)
        self.assertEqual(env.config["reward"], "sparse")

    def test_errors(self):
        with self.assertRaisesRegex(grove.GroveError, "XYZ"):
            grove.Craft(2, ["XYZ"])
        with self.assertRaisesRegex(grove.GroveError, "n_each"):
            grove.Craft(2, ["AC"], n_each=-1)
        with self.assertRaisesRegex(grove.GroveError, "colour"):
            grove.Craft(2, ["AC"], colour=3)
        with self.assertRaises(grove.GroveError):
            grove.Craft(0, ["AC"])
        env = grove.Craft(2, ["AC"])
        with self.assertRaisesRegex(ValueError, "outside 0..4"):
            env.step([0, 5])
        with self.assertRaisesRegex(ValueError, "shape"):
            env.step([0, 1, 2])
        with self.assertRaisesRegex(ValueError, "dtype"):
            env.step(np.array([0.0, 1.0]))
        # a uint8 array goes to C as it is: the C check names the world
        with self.assertRaisesRegex(grove.GroveError, "1"):
            env.step(np.array([0, 9], np.uint8))
        with self.assertRaises(IndexError):
            env.world(2)

    def test_world(self):
        w = grove.World(task="AC", seed=5)
        self.assertEqual(w.task_name, "AC")
        self.assertEqual(w.t, 0)
        h = w.state_hash()
        back = grove.World.from_state_bytes(
            grove.make_config(), w.state_bytes())
        self.assertEqual(back.state_hash(), h)
        np.testing.assert_array_equal(back.observe(), w.observe())
        text = w.render_text()
        self.assertEqual(len(text.splitlines()), 11)
        while not w.done:
            a = w.expert_action()
            self.assertIsNotNone(a)
            w.step(a)
        self.assertEqual(w.k, 2)
        with self.assertRaises(grove.GroveError):
            w.step(0)
        with self.assertRaises(grove.GroveError):
            grove.World.from_state_bytes(grove.make_config(), b"\x93\x01")


if __name__ == "__main__":
    unittest.main()
