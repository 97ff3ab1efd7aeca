"""`import tilec` stays light (issue 11: under 100 ms without torch): it pulls in no heavy
module, and its own import time (`python -X importtime`, bytecode cached, the best of a few
fresh processes) stays under 150 ms."""
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def _run(code, *flags):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    return subprocess.run([sys.executable, *flags, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_import_pulls_in_no_heavy_module():
    r = _run("import sys, tilec; print(sorted(m for m in ('torch', 'numpy', 'matplotlib', 'scipy', 'tvm') "
             "if m in sys.modules))")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]", r.stdout


def _tilec_import_us(env):
    """The cumulative `-X importtime` time of the `tilec` line, in µs: tilec's own modules and the
    extension, not the interpreter's start-up or site hooks."""
    r = subprocess.run([sys.executable, "-X", "importtime", "-c", "import tilec"], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stderr.splitlines() if ln.rstrip().endswith("| tilec"))
    return int(line.split("|")[1])


# Issue 11's target is 100 ms. Measured on the 2-core CI machine (2026-12-02) with the bytecode
# cached, as an installed package has it: 31-35 ms, 83 ms once with the load average at 7; without
# bytecode (PYTHONDONTWRITEBYTECODE, as this CI sets) every module is compiled from source on
# each import: 80-170 ms. The bound leaves room for a busy or slower machine (and the fastest of
# several fresh processes takes out most of the noise) but fails long before the old 600 ms.
IMPORT_BOUND_US = 150_000


def test_import_time_of_tilec_itself(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), PYTHONPYCACHEPREFIX=str(tmp_path / "pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    _tilec_import_us(env)  # writes the bytecode (under tmp_path, not into the source tree)
    tries = []
    for _ in range(5):
        tries.append(_tilec_import_us(env))
        if tries[-1] < IMPORT_BOUND_US // 2:
            break  # clearly fine: no need to spend more processes
    fastest = min(tries)
    assert fastest < IMPORT_BOUND_US, f"import tilec took {fastest / 1000:.0f} ms at best of {tries} µs " \
                                      f"(bound {IMPORT_BOUND_US // 1000} ms; target 100 ms): a heavy import slipped in?"
