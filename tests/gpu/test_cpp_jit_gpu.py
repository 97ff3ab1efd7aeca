"""The C++ JIT example on the GPU: examples/cpp/gemm_jit.cc builds, compiles and launches the
GEMM + ReLU from C++ and checks it against a double-precision reference."""
import os
import subprocess

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EXE = next((p for p in (os.path.join(ROOT, d, "gemm_jit") for d in ("build-gpu", "build")) if os.path.exists(p)), None)

pytestmark = pytest.mark.gpu


@pytest.mark.skipif(EXE is None, reason="needs build-gpu/gemm_jit (TILEC_BUILD_TOOLS)")
@pytest.mark.parametrize("mnk", [("512", "512", "256"), ("256", "384", "96")])
def test_cpp_jit_gemm_matches_the_reference(mnk):
    r = subprocess.run([EXE, *mnk], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
