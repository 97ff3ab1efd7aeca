"""The tilec command-line tool (tools/tilec_main.cc)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
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
    for command in ("compile", "example-gemm", "pipeline", "--list-knobs", "--list-configs", "--version"):
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
    stages = sorted(p.name for p in (tmp_path / "gemm_relu" / "sm_90a").iterdir())
    assert stages[0] == "00_input.py" and stages[1] == "01_verify.py"
    assert (tmp_path / "gemm_relu" / "sm_90a" / "00_input.py").read_text() == run("example-gemm").stdout


def test_pipeline_and_configs():
    out = run("pipeline", "sm_90a")
    assert out.returncode == 0
    assert out.stdout.splitlines()[1:3] == ["verify", "simplify"]
    configs = run("--list-configs").stdout
    assert "tl.disable_tma_lower  (default: false)" in configs


def test_pipeline_for_sm100_is_refused():
    out = run("pipeline", "sm_100a")
    assert out.returncode == 1
    assert "tilec does not support sm_100 (Blackwell) yet" in out.stderr
    assert "compile for 'sm_90a' (Hopper) or 'sm_80' (Ampere)" in out.stderr


def run_compile(*args):
    # The CLI runs tilec.tools.compile_cli with $TILEC_PYTHON (default python3): this interpreter.
    return run("compile", *args, env=dict(os.environ, TILEC_PYTHON=sys.executable))


needs_nvrtc_cli = pytest.mark.skipif(
    subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import tilec; "
                    "sys.exit(0 if tilec._tilec.nvrtc_available() else 1)", str(REPO / "python")],
                   capture_output=True).returncode != 0,
    reason="NVRTC (or the extension) not available")


@needs_nvrtc_cli
def test_compile_a_factory_prints_the_cuda_source():
    out = run_compile(str(REPO / "examples" / "gemm.py") + "::matmul", "--target", "sm_80",
              "--args", "256, 256, 256, relu=True")
    assert out.returncode == 0, out.stderr
    assert "__global__" in out.stdout and "gemm" in out.stdout


@needs_nvrtc_cli
def test_compile_writes_cu_ptx_and_cubin(tmp_path):
    out = run_compile(str(REPO / "examples" / "gemm.py") + "::matmul", "--target", "sm_90a",
              "--args", "256, 256, 256", "-o", str(tmp_path / "out"))
    assert out.returncode == 0, out.stderr
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert files == ["gemm.cu", "gemm.h", "gemm.ptx", "gemm.sm_90a.cubin", "gemm.tkc"]
    assert out.stdout.split() == [str(tmp_path / "out" / f)
                                  for f in ("gemm.cu", "gemm.ptx", "gemm.sm_90a.cubin", "gemm.tkc", "gemm.h")]
    assert (tmp_path / "out" / "gemm.sm_90a.cubin").read_bytes()[:4] == b"\x7fELF"


@needs_nvrtc_cli
def test_compile_writes_the_same_aot_export_as_kernel_export(tmp_path):
    # Issue 14: the CLI writes the C++ export (artifact + typed launch header) that
    # kernel.export(dir) writes for the same kernel.
    out = run_compile(str(REPO / "examples" / "gemm.py") + "::matmul", "--target", "sm_90a",
                      "--args", "256, 256, 256", "-o", str(tmp_path / "cli"))
    assert out.returncode == 0, out.stderr
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(REPO / "examples")!r})
        import tilec, gemm
        tilec.compile(gemm.matmul(256, 256, 256), target="sm_90a").export({str(tmp_path / "py")!r})
    """)
    py = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                        env=dict(os.environ, PYTHONPATH=str(REPO / "python")))
    assert py.returncode == 0, py.stderr
    cli_header = (tmp_path / "cli" / "gemm.h").read_text()
    py_header = (tmp_path / "py" / "gemm.h").read_text()
    assert "namespace tilec_aot" in cli_header and "inline void gemm(" in cli_header
    # The headers differ only in where they look for the artifact by default.
    assert f'#define TILEC_AOT_DIR "{tmp_path / "cli"}"' in cli_header
    assert cli_header.replace(str(tmp_path / "cli"), "DIR") == py_header.replace(str(tmp_path / "py"), "DIR")
    assert (tmp_path / "cli" / "gemm.tkc").read_bytes() == (tmp_path / "py" / "gemm.tkc").read_bytes()


def test_compile_errors_are_usage_or_program_errors(tmp_path):
    out = run_compile("no_such_file.py::k")
    assert out.returncode == 2 and "no such file: no_such_file.py" in out.stderr
    out = run_compile(str(REPO / "examples" / "gemm.py"))
    assert out.returncode == 2 and "expected FILE.py::NAME" in out.stderr
    bad = tmp_path / "bad.py"
    bad.write_text("import tilec.language as T\n\n"
                   "def make():\n"
                   "    @T.prim_func\n"
                   "    def k(A: T.Tensor((64,), \"float32\")):\n"
                   "        with T.Kernel(1, threads=64) as bx:\n"
                   "            A[0] = nope\n"
                   "    return k\n")
    out = run_compile(f"{bad}::make", "--target", "sm_80")
    assert out.returncode == 1
    assert f"{bad}:7:" in out.stderr and "hint" not in out.stdout
