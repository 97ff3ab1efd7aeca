"""The tilec command-line tool (tools/tilec_main.cc)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _cli() -> str:
    for c in (os.environ.get("TILEC_CLI"), str(REPO / "build" / "tilec"), shutil.which("tilec")):
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    message = "the tilec CLI is not built: run scripts/setup.sh (or set TILEC_CLI)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def run(*args, env=None):
    return subprocess.run([_cli(), *args], capture_output=True, text=True, env=env)


def test_help_lists_every_command():
    out = run("--help")
    assert out.returncode == 0
    for command in ("example-gemm", "pipeline", "--list-knobs", "--list-configs", "--version"):
        assert f"tilec {command}" in out.stdout


def test_version():
    out = run("--version")
    assert out.returncode == 0
    assert out.stdout.startswith("tilec ") and out.stdout.strip().split()[1][0].isdigit()


def test_unknown_command_is_a_usage_error():
    out = run("frobnicate")
    assert out.returncode == 2
    assert "unknown command 'frobnicate'" in out.stderr


def test_example_gemm_prints_t_script():
    out = run("example-gemm")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("@T.prim_func")
    for piece in ("def gemm_relu(", "T.Kernel(", "T.Pipelined(", "T.gemm(A_shared, B_shared, C_local)"):
        assert piece in out.stdout


def test_example_gemm_through_the_pipeline_with_dumps(tmp_path):
    # Until every tile op has a lowering for the target, the pipeline may stop with a user
    # error (exit 1); the stages before that are dumped and timed either way.
    env = dict(os.environ, TILEC_DUMP_DIR=str(tmp_path), TILEC_TIME_PASSES="1")
    out = run("example-gemm", "--pipeline", "sm_90a", env=env)
    assert out.returncode in (0, 1), out.stderr
    assert "pass times for kernel 'gemm_relu'" in out.stderr
    stages = sorted(p.name for p in (tmp_path / "gemm_relu").iterdir())
    assert stages[0] == "00_input.py" and stages[1] == "01_verify.py"
    assert (tmp_path / "gemm_relu" / "00_input.py").read_text() == run("example-gemm").stdout


def test_pipeline_and_configs():
    out = run("pipeline", "sm_90a")
    assert out.returncode == 0
    assert out.stdout.splitlines()[1:3] == ["verify", "simplify"]
    configs = run("--list-configs").stdout
    assert "tl.disable_tma_lower  (default: false)" in configs
