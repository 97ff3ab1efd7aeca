"""The Python knob mirror (python/tilec/knobs.py) agrees with the C++ table, and its
accessors follow the same rules."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _load_knobs_module():
    # Loaded by path so this test needs neither the compiled extension nor an install.
    spec = importlib.util.spec_from_file_location("tilec_knobs_mirror", REPO / "python" / "tilec" / "knobs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


knobs = _load_knobs_module()


def _cli() -> str:
    candidates = [os.environ.get("TILEC_CLI"), str(REPO / "build" / "tilec"), shutil.which("tilec")]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    message = "the tilec CLI is not built: run scripts/setup.sh (or set TILEC_CLI)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def test_mirror_matches_the_cpp_table():
    out = subprocess.run([_cli(), "--list-knobs", "--json"], check=True, capture_output=True, text=True).stdout
    cpp = [(k["name"], k["type"], k["default"], k["choices"], k["help"]) for k in json.loads(out)]
    py = [(k.name, k.type, k.default, k.choices, k.help) for k in knobs.KNOBS]
    assert py == cpp


def test_booleans(monkeypatch):
    for value, expected in [("1", True), ("TRUE", True), ("on", True), ("0", False), ("off", False), ("", False)]:
        monkeypatch.setenv("TILEC_TIME_PASSES", value)
        assert knobs.time_passes() is expected, value
    monkeypatch.delenv("TILEC_TIME_PASSES")
    assert knobs.time_passes() is False
    monkeypatch.setenv("TILEC_DISABLE_CACHE", "maybe")
    with pytest.raises(ValueError, match=r"TILEC_DISABLE_CACHE='maybe' is not a boolean"):
        knobs.disable_cache()


def test_compiler(monkeypatch):
    monkeypatch.delenv("TILEC_COMPILER", raising=False)
    assert knobs.compiler() == "nvrtc"
    monkeypatch.setenv("TILEC_COMPILER", "NVCC")
    assert knobs.compiler() == "nvcc"
    monkeypatch.setenv("TILEC_COMPILER", "gcc")
    with pytest.raises(ValueError, match=r"TILEC_COMPILER='gcc' is not a known compiler"):
        knobs.compiler()


def test_paths(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("TILEC_CACHE_DIR", raising=False)
    assert knobs.cache_dir() == str(tmp_path / ".cache" / "tilec")
    monkeypatch.setenv("TILEC_CACHE_DIR", "~/c")
    assert knobs.cache_dir() == str(tmp_path / "c")
    monkeypatch.setenv("TILEC_CUDA_HOME", "/opt/cuda-x")
    assert knobs.cuda_home() == "/opt/cuda-x"
    monkeypatch.delenv("TILEC_CUDA_HOME")
    monkeypatch.setenv("CUDA_HOME", "/opt/cuda-y")
    assert knobs.cuda_home() == "/opt/cuda-y"


def test_dump_ir_filter(monkeypatch):
    monkeypatch.delenv("TILEC_DUMP_IR", raising=False)
    assert not knobs.dump_ir_matches("gemm", "simplify")
    monkeypatch.setenv("TILEC_DUMP_IR", "off")
    assert not knobs.dump_ir_matches("off", "off")
    monkeypatch.setenv("TILEC_DUMP_IR", "1")
    assert knobs.dump_ir_matches("gemm", "simplify")
    monkeypatch.setenv("TILEC_DUMP_IR", "lower_*,softmax")
    assert knobs.dump_ir_matches("gemm", "lower_tile_ops")
    assert knobs.dump_ir_matches("softmax", "verify")
    assert not knobs.dump_ir_matches("gemm", "verify")


def test_undeclared_knob_is_rejected():
    with pytest.raises(KeyError, match="TILEC_NOT_A_KNOB"):
        knobs.raw("TILEC_NOT_A_KNOB")


def test_no_other_module_reads_the_environment():
    # DESIGN.md section 4: knobs are the only readers of TILEC_* variables.
    offenders = []
    for root in ("python/tilec", "src", "tools", "include"):
        for path in (REPO / root).rglob("*"):
            if path.suffix not in (".py", ".cc", ".h") or path.name in ("knobs.py", "knobs.cc"):
                continue
            text = path.read_text(errors="replace")
            if any(p in text for p in ("getenv(", "os.environ", "os.getenv")):
                offenders.append(str(path.relative_to(REPO)))
    assert offenders == [], "read environment variables through tilec/knobs (C++: support/knobs.h)"
