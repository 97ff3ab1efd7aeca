"""Every example, run as a script on the GPU: each checks itself against torch (float64
reference, fresh random inputs, poisoned outputs) at several sizes, including sizes that
are not multiples of the block."""
import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
EXAMPLES = sorted(p for p in glob.glob(os.path.join(ROOT, "examples", "*.py"))
                  if not os.path.basename(p).startswith("_"))


@pytest.mark.gpu
@pytest.mark.parametrize("path", EXAMPLES, ids=[os.path.basename(p)[:-3] for p in EXAMPLES])
def test_example(path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, path], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, f"{os.path.basename(path)} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
