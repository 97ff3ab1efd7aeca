"""examples/cpp/aot (the AOT path: a kernel exported from Python and launched from C++ through
its generated header and tilec::runtime, without NVRTC or Python): CI builds it without a GPU,
with g++ against build/libtilec_runtime.a and as the CMake project it is (the installed
package, the kernel exported by the CLI at build time), and runs its argument checks.
tests/gpu/test_aot_gpu.py runs it on the GPU against its reference."""
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

import tilec

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BUILD = os.path.join(ROOT, "build")
EXAMPLE = os.path.join(ROOT, "examples", "cpp", "aot")
LIB = os.path.join(BUILD, "libtilec_runtime.a")
CLI = os.path.join(BUILD, "tilec")

needs_nvrtc = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")


def export_gemm_relu(directory):
    spec = importlib.util.spec_from_file_location("gemm_relu_example", os.path.join(EXAMPLE, "gemm_relu.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = tilec.compile(module.gemm_relu.get_tir(256, 128), out_idx=[-1], target="sm_90a")
    return kernel.export(str(directory))


def check_output(exe):
    r = subprocess.run([str(exe), "--check-only", "300"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "gemm_relu(A: float16[m, 128], B: float16[128, 256]) -> C: float16[m, 256]"
    assert lines[1] == "checked m=300"
    assert lines[2].startswith("refused: ") and "argument 'B' of kernel gemm_relu" in lines[2]
    assert "dimension 0: expected 128, got 129" in lines[2]


@needs_nvrtc
def test_the_export_gives_a_typed_launch_function_with_m_as_a_parameter(tmp_path):
    files = export_gemm_relu(tmp_path / "kernels")
    header = open(files[1]).read()
    assert "inline void gemm_relu(const void* A, const void* B, void* C, int64_t m, void* stream = nullptr, " \
           "int device = 0)" in header


@pytest.mark.skipif(not (tilec._tilec.nvrtc_available()[0] and os.path.exists(LIB) and shutil.which("g++")),
                    reason="needs NVRTC, build/libtilec_runtime.a and g++")
def test_the_aot_example_compiles_against_the_export_and_checks_arguments(tmp_path):
    export_gemm_relu(tmp_path / "kernels")
    exe = tmp_path / "gemm_aot"
    subprocess.run(["g++", "-std=c++20", "-O1", "-I", os.path.join(ROOT, "include"), "-I", str(tmp_path / "kernels"),
                    os.path.join(EXAMPLE, "gemm_aot.cc"), LIB, "-ldl", "-lpthread", "-o", str(exe)],
                   check=True, capture_output=True, timeout=300)
    check_output(exe)


@pytest.mark.skipif(not (tilec._tilec.nvrtc_available()[0] and shutil.which("cmake") and shutil.which("ninja")
                         and os.path.exists(LIB) and os.path.exists(CLI)),
                    reason="needs NVRTC, cmake, ninja, build/libtilec_runtime.a and build/tilec")
def test_the_aot_example_builds_as_a_cmake_project(tmp_path):
    # What a C++ user does: install tilec, then a project that exports its kernel with the CLI
    # and links tilec::runtime (examples/cpp/aot/CMakeLists.txt).
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", BUILD, "--prefix", str(prefix)], check=True, capture_output=True, timeout=300)
    build = tmp_path / "aot"
    env = dict(os.environ, TILEC_PYTHON=sys.executable)
    subprocess.run(["cmake", "-S", EXAMPLE, "-B", str(build), "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={prefix}",
                    f"-DTILEC_CLI={CLI}", "-DCMAKE_BUILD_TYPE=Release"], check=True, capture_output=True, timeout=300,
                   env=env)
    r = subprocess.run(["ninja", "-C", str(build)], capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (build / "kernels" / "gemm_relu.tkc").exists() and (build / "kernels" / "gemm_relu.h").exists()
    check_output(build / "gemm_aot")
