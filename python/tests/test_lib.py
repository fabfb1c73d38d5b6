"""libgrove: how the package finds it, and what it exports."""

import os
import re
import shutil
import subprocess
import unittest

import grove
from grove import _lib

from .helpers import ROOT

PUBLIC = ["core", "envs", "replays"]


def header_declarations():
    """Function and data names declared at the start of a line in the
    public headers (not *internal.h), static inline functions excluded."""
    names = set()
    for module in PUBLIC:
        folder = os.path.join(ROOT, module)
        for f in sorted(os.listdir(folder)):
            if not f.endswith(".h") or f.endswith("internal.h"):
                continue
            with open(os.path.join(folder, f)) as fh:
                text = fh.read()
            # drop comments, then read top-level declarations
            text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
            for line in text.splitlines():
                if not re.match(r"[a-z]", line) or \
                        re.match(r"(static|typedef)\b", line):
                    continue
                m = re.match(r"extern\b.*?(\w+)\s*(\[|;)", line) or \
                    re.match(r"[^(]*?(\w+)\(", line)
                if m:
                    names.add(m.group(1))
    return names


def exported(path):
    out = subprocess.run(["nm", "-D", "--defined-only", path],
                         capture_output=True, text=True, check=True).stdout
    return {p[2] for p in (l.split() for l in out.splitlines())
            if len(p) == 3 and p[1] in "TDRB"}


class TestLibrary(unittest.TestCase):
    def test_exports_exactly_the_public_headers(self):
        if shutil.which("nm") is None:
            self.skipTest("no nm")
        path = grove.find_library()
        syms = exported(path)
        decl = header_declarations()
        self.assertGreater(len(decl), 80)
        self.assertEqual(sorted(syms - decl), [],
                         "exported but not in a public header")
        self.assertEqual(sorted(decl - syms), [],
                         "declared in a public header but not exported")
        # helpers shared inside a module stay local
        for name in ("replay_scan", "craft_core_expert_search"):
            self.assertNotIn(name, syms)

    def test_grove_lib_path(self):
        real = grove.find_library()
        old = os.environ.get("GROVE_LIB")
        try:
            os.environ["GROVE_LIB"] = real
            self.assertEqual(_lib.find_library(), real)
            os.environ["GROVE_LIB"] = os.path.dirname(real)
            self.assertEqual(_lib.find_library(),
                             os.path.join(os.path.dirname(real),
                                          "libgrove.so"))
            os.environ["GROVE_LIB"] = "/nonexistent/libgrove.so"
            with self.assertRaisesRegex(grove.GroveError,
                                        "GROVE_LIB=/nonexistent"):
                _lib.find_library()
        finally:
            if old is None:
                os.environ.pop("GROVE_LIB", None)
            else:
                os.environ["GROVE_LIB"] = old


if __name__ == "__main__":
    unittest.main()
