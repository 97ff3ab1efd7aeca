"""T.device_assert on the GPU: a passing check changes nothing; a failing one prints the source
line, message, block and thread, and the launch fails. (A trap poisons the CUDA context, so the
failing case runs in its own process.)"""
import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
import tilec  # noqa: E402
import tilec.language as T  # noqa: E402

pytestmark = pytest.mark.gpu
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

PROGRAM = textwrap.dedent('''
    import sys, torch, tilec, tilec.language as T
    N = T.dynamic("n")

    @T.prim_func
    def checked(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < N:
                    T.device_assert(A[bx * 128 + i] >= 0, "A must be non-negative")
                    B[bx * 128 + i] = T.sqrt(A[bx * 128 + i])

    k = tilec.compile(checked, out_idx=[-1], target="auto")
    a = torch.rand(300, device="cuda")
    torch.testing.assert_close(k(a), a.sqrt())
    if sys.argv[1] == "fail":
        a[257] = -1.0
        k(a)
        torch.cuda.synchronize()
    print("done")
''')


def _run(tmp_path, mode):
    script = tmp_path / "checked.py"  # the front end reads the kernel's source from its file
    script.write_text(PROGRAM)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    return subprocess.run([sys.executable, str(script), mode], capture_output=True, text=True, env=env, timeout=300)


def test_passing_checks_change_nothing(tmp_path):
    r = _run(tmp_path, "pass")
    assert r.returncode == 0 and "done" in r.stdout, r.stderr


def test_failing_check_traps_with_its_line_and_thread(tmp_path):
    r = _run(tmp_path, "fail")
    assert r.returncode != 0 and "done" not in r.stdout
    out = r.stdout + r.stderr
    assert "tilec: device assertion failed at checked.py:10: A must be non-negative (block (2, 0, 0) thread (1," in out, out


PRINT_PROGRAM = textwrap.dedent('''
    import torch, tilec, tilec.language as T

    @T.prim_func
    def show(A: T.Tensor((4, 8), "float32")):
        with T.Kernel(1, threads=32) as bx:
            S = T.alloc_shared((4, 8), "float32")
            F = T.alloc_fragment((4, 8), "float32")
            T.copy(A, S)
            T.copy(S, F)
            T.print(S, msg="shared")
            T.print(F, msg="fragment")

    k = tilec.compile(show, target="auto")
    k(torch.arange(32, dtype=torch.float32, device="cuda").reshape(4, 8) + 0.5)
    torch.cuda.synchronize()
''')


def test_print_of_whole_buffers_one_line_per_element(tmp_path):
    """T.print of a shared tile and a fragment: every element once, each line whole (one printf
    per line), naming the printing block and thread, with the element's indices and value."""
    import re

    script = tmp_path / "show.py"
    script.write_text(PRINT_PROGRAM)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    pattern = re.compile(r"^block \(0, 0, 0\) thread \((\d+), 0, 0\): (shared S|fragment F)\[i, j\] (\d) (\d) = (\S+)$")
    seen = {"shared S": {}, "fragment F": {}}
    for line in r.stdout.splitlines():
        m = pattern.match(line)
        assert m, f"malformed line {line!r} in:\n{r.stdout[:2000]}"
        thread, which, i, j, value = int(m[1]), m[2], int(m[3]), int(m[4]), float(m[5])
        assert 0 <= thread < 32 and value == i * 8 + j + 0.5, line
        assert (i, j) not in seen[which], f"{which}[{i}, {j}] printed twice"
        seen[which][(i, j)] = thread
    assert all(len(v) == 32 for v in seen.values()), {k: len(v) for k, v in seen.items()}
