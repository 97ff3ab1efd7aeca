"""TILEC_DUMP_IR=diff: each pass's change to the IR as a unified diff (issue 14)."""
import os
import subprocess
import sys
import textwrap

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

PROGRAM = textwrap.dedent('''
    import tilec, tilec.language as T

    @T.prim_func
    def add(A: T.Tensor((1000,), "float32"), B: T.Tensor((1000,), "float32")):
        with T.Kernel(8, threads=128) as bx:
            for i in T.Parallel(128):
                B[bx * 128 + i] = A[bx * 128 + i] + 1.0

    tilec.compile(add, target="sm_80")
''')


def _run(tmp_path, spec):
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), TILEC_DUMP_IR=spec, TILEC_DISABLE_CACHE="1")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stderr


def test_diff_of_one_pass(tmp_path):
    err = _run(tmp_path, "diff,legalize_bounds")
    assert "# ---- tilec: IR of 'add': what pass 'legalize_bounds' changed ----" in err
    assert "--- before legalize_bounds\n+++ after legalize_bounds\n@@ -" in err
    assert "\n+" in err and "\n-" in err
    assert "what pass 'vectorize' changed" not in err  # other passes not asked for
    assert "@T.prim_func\n" not in err.split("@@", 1)[0]  # a diff, not the whole IR


def test_diff_alone_covers_every_pass(tmp_path):
    err = _run(tmp_path, "diff")
    assert err.count("# ---- tilec: IR of 'add': what pass") >= 3
