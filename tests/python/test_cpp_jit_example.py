"""examples/cpp/gemm_jit.cc (the C++ JIT path: builder -> compile -> launch): compiles for sm_90a
and sm_80 without a GPU; tests/gpu/test_cpp_jit_gpu.py runs it against its reference."""
import os
import subprocess

import pytest

import tilec

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EXE = os.path.join(ROOT, "build", "gemm_jit")


@pytest.mark.skipif(not (os.path.exists(EXE) and tilec._tilec.nvrtc_available()[0]), reason="needs build/gemm_jit and NVRTC")
def test_cpp_jit_example_compiles_for_both_targets():
    r = subprocess.run([EXE, "--compile-only", "256", "256", "64"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("sm_90a: gemm_relu(A: float16[256, 64], B: float16[64, 256], C: float16[256, 256])")
    assert lines[1].startswith("sm_80: ") and "bytes of cubin" in lines[1]
