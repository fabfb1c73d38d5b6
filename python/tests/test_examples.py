"""The examples of python/examples/ run, and the numpy OCN of
ocn_numpy.py equals grove's own acting (the o/po/pe grove craft run
--agent ocn records) for the OCN, its variants and the MoE."""

import importlib.util
import os
import subprocess
import sys
import unittest

import grove

from .helpers import ROOT, TempDir, bc_run, run_grove

EXAMPLES = os.path.join(ROOT, "python", "examples")
tmp = None


def setUpModule():
    global tmp
    tmp = TempDir()


def tearDownModule():
    tmp.cleanup()


_runs = {}


def cached_run(name, *flags):
    """A tiny BC run made once per module (each takes about a second)."""
    if name not in _runs:
        _runs[name] = bc_run(tmp, name, *flags)[0]
    return _runs[name]


def load_example(name):
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(EXAMPLES, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_example(*args):
    env = dict(os.environ, GROVE_LIB=grove.find_library())
    return subprocess.run([sys.executable] + list(args), capture_output=True,
                          text=True, env=env, timeout=60)


class TestOCNNumpy(unittest.TestCase):
    def check_model(self, name, *flags):
        run = cached_run(name, *flags)
        ckpt = os.path.join(run, "best.ckpt")
        rep = tmp.join(name + ".replay")
        run_grove("craft", "run", "--agent", "ocn", "--checkpoint", ckpt,
                  "--episodes", "3", "--device", "cpu", "--threads", "1",
                  "--quiet", "--record", rep)
        ocn = load_example("ocn_numpy")
        steps, bad, dpe, dpo = ocn.compare(ckpt, rep)
        self.assertGreater(steps, 100)
        self.assertEqual(bad, 0)
        self.assertLess(dpe, 1e-5)
        self.assertLess(dpo, 1e-5)
        return ckpt, rep

    def test_ocn(self):
        ckpt, rep = self.check_model("ocn")
        p = run_example(os.path.join(EXAMPLES, "ocn_numpy.py"), ckpt, rep)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("0 greedy actions differ", p.stdout)

    def test_variants(self):
        self.check_model("variants", "--blind-controller",
                         "--options-without-inventory", "--tau", "1")

    def test_moe(self):
        self.check_model("moe", "--model", "moe")

    def test_single_option_step(self):
        # one option's cell against the OCN step with one option (K = 1:
        # Π^C ≡ 1, so e_t and π_t are that option's own outputs)
        run, _ = bc_run(tmp, "k1", "--options", "1")
        ckpt = os.path.join(run, "best.ckpt")
        rep = tmp.join("k1.replay")
        run_grove("craft", "run", "--agent", "ocn", "--checkpoint", ckpt,
                  "--episodes", "1", "--tasks", "AC", "--device", "cpu",
                  "--threads", "1", "--quiet", "--record", rep)
        ocn = load_example("ocn_numpy")
        m = ocn.OCN(ckpt)
        _, eps = grove.read_replay(rep, observations=True)
        ep = eps[0]
        h = None
        for t in range(len(ep["actions"])):
            xo = m.option_inputs(ep["obs"][t].astype("float64"))
            pi, h_new, e = m.option_step(0, xo[0], h)
            if t > 0:
                self.assertAlmostEqual(e, ep["pe"][t], delta=1e-5)
            # e = 1 restarts the option: the next state mixes toward z
            _, h_restart, _ = m.option_step(0, xo[0], None)
            ee = 1.0 if t == 0 else e
            h = ee * h_restart + (1 - ee) * h_new
            self.assertAlmostEqual(ep["po"][t][0], 1.0, delta=1e-6)


class TestExamples(unittest.TestCase):
    def test_random_agent(self):
        p = run_example(os.path.join(EXAMPLES, "random_agent.py"),
                        "--steps", "100", "--envs", "16")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"C log: \d+ episodes")

    def test_bc_metrics(self):
        run = cached_run("ocn")
        p = run_example(os.path.join(EXAMPLES, "bc_metrics.py"), run)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("lowest validation nll", p.stdout)
        p = run_example(os.path.join(EXAMPLES, "bc_metrics.py"),
                        tmp.join("nothere"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot read", p.stderr)


if __name__ == "__main__":
    unittest.main()
