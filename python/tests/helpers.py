"""Shared by the Python tests: the grove binary beside libgrove, temporary
folders, and runs of the binary that make the files the readers read."""

import os
import shutil
import subprocess
import tempfile
import unittest

import grove

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def grove_bin():
    """The grove binary: GROVE_BIN, else beside libgrove.so (skip if none)."""
    path = os.environ.get("GROVE_BIN") or os.path.join(
        os.path.dirname(grove.find_library()), "grove")
    if not os.access(path, os.X_OK):
        raise unittest.SkipTest("no grove binary at %s (set GROVE_BIN)" % path)
    return path


def run_grove(*args, cwd=None):
    """Runs grove with args; returns stdout (fails the test on exit != 0)."""
    p = subprocess.run([grove_bin()] + [str(a) for a in args], cwd=cwd,
                       capture_output=True, text=True, errors="surrogateescape",
                       timeout=120)
    if p.returncode != 0:
        raise AssertionError("grove %s: exit %d\n%s%s" % (
            " ".join(map(str, args)), p.returncode, p.stdout, p.stderr))
    return p.stdout


class TempDir:
    """A temporary folder removed at exit (module-level fixtures)."""

    def __init__(self):
        self.path = tempfile.mkdtemp(prefix="grove-py-")

    def join(self, *parts):
        return os.path.join(self.path, *parts)

    def cleanup(self):
        shutil.rmtree(self.path, ignore_errors=True)


# A tiny BC run (about a second): the same flags for every test module.
BC_FLAGS = ["--tasks", "AC,CD", "--options", "3", "--demos-per-task", "20",
            "--updates", "4", "--batch", "8", "--hidden", "16", "--width",
            "16", "--eval-every", "2", "--return-every", "2",
            "--return-episodes", "2", "--device", "cpu", "--threads", "1"]


def bc_run(tmp, name, *extra):
    """grove train bc into tmp/name; returns (folder, stdout). A flag in
    `extra` replaces BC_FLAGS' value (grove refuses a flag given twice)."""
    out = tmp.join(name)
    given = {f for f in extra if f.startswith("--")}
    flags = []
    i = 0
    while i < len(BC_FLAGS):
        if BC_FLAGS[i] in given:
            i += 2
            continue
        flags.append(BC_FLAGS[i])
        if i + 1 < len(BC_FLAGS) and not BC_FLAGS[i + 1].startswith("--"):
            flags.append(BC_FLAGS[i + 1])
            i += 1
        i += 1
    text = run_grove("train", "bc", *flags, *extra, "--out", out)
    return out, text
