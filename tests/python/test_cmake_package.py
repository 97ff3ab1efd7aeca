"""The installed CMake package: `cmake --install build` into a prefix, then a project outside
the tree (tests/cmake_consumer) finds it with find_package(tilec) and links tilec::runtime (an
AOT loader) and tilec::compiler (builds and lowers a GEMM)."""
import os
import shutil
import subprocess

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BUILD = os.path.join(ROOT, "build")

pytestmark = pytest.mark.skipif(
    not (shutil.which("cmake") and shutil.which("ninja") and os.path.exists(os.path.join(BUILD, "libtilec_runtime.a"))),
    reason="needs cmake, ninja and the build in build/")


def test_find_package_gives_runtime_and_compiler(tmp_path):
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", BUILD, "--prefix", str(prefix)], check=True, capture_output=True, timeout=300)
    cfg = prefix / "lib" / "cmake" / "tilec"
    if not cfg.exists():  # lib64 on some distributions
        cfg = prefix / "lib64" / "cmake" / "tilec"
    assert (cfg / "tilecConfig.cmake").exists() and (cfg / "tilecTargets.cmake").exists()
    assert (prefix / "include" / "tilec" / "runtime" / "aot.h").exists()
    build = tmp_path / "consumer"
    subprocess.run(["cmake", "-S", os.path.join(ROOT, "tests", "cmake_consumer"), "-B", str(build), "-G", "Ninja",
                    f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=Release"], check=True, capture_output=True,
                   timeout=300)
    r = subprocess.run(["ninja", "-C", str(build)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    missing = subprocess.run([str(build / "load_export"), str(tmp_path / "nope.tkc")], capture_output=True, text=True,
                             timeout=60).stdout
    assert "cannot read the exported kernel" in missing
    lowered = subprocess.run([str(build / "lower_gemm")], capture_output=True, text=True, timeout=120)
    assert lowered.returncode == 0 and lowered.stdout.strip() == "wgmma", lowered.stderr


def test_the_runtime_library_has_no_compiler_in_it():
    # What an application running exported kernels links holds no NVRTC and no passes.
    nm = shutil.which("nm")
    if not nm:
        pytest.skip("needs nm")
    syms = subprocess.run([nm, "-C", "--defined-only", os.path.join(BUILD, "libtilec_runtime.a")], capture_output=True,
                          text=True, check=True).stdout
    assert "tilec::runtime::AotKernel::AotKernel" in syms
    for absent in ("nvrtc", "tilec::passes::", "tilec::cuda::lower_to_cuda"):
        assert absent not in syms, absent
