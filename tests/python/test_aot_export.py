"""kernel.export(dir): the artifact and a C++ header that a C++ program compiles against and
loads without NVRTC or Python (tilec/runtime/aot.h). The launch itself is in
tests/gpu/test_aot_gpu.py; here the program binds and checks arguments (no GPU needed)."""
import os
import shutil
import subprocess
import textwrap

import pytest

import tilec
import tilec.language as T

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# The runtime library alone: an exported kernel needs no compiler.
LIB = os.path.join(ROOT, "build", "libtilec_runtime.a")
N = T.dynamic("n")


@T.prim_func
def axpy(A: T.Tensor((N, 64), "float16"), B: T.Tensor((N, 64), "float16"), alpha: T.float32,
         C: T.Tensor((N, 64), "float16")):
    with T.Kernel(T.ceildiv(N, 16), threads=128) as bx:
        for i, j in T.Parallel(16, 64):
            C[bx * 16 + i, j] = A[bx * 16 + i, j] + B[bx * 16 + i, j] * alpha


MAIN = textwrap.dedent('''
    #include <cstdio>
    #include "axpy.h"
    using tilec::runtime::AotKernel;
    int main() {
      const int64_t shape[] = {100, 64}, bad[] = {100, 32};
      void* p = reinterpret_cast<void*>(0x10000);  // fake device pointers: check() needs no GPU
      const auto& k = tilec_aot::axpy_kernel();
      std::printf("%s\\n", k.kernel().signature().c_str());
      k.check({AotKernel::tensor(p, "float16", shape, 2), AotKernel::tensor(p, "float16", shape, 2),
               AotKernel::floating(2.0), AotKernel::tensor(p, "float16", shape, 2)});
      std::printf("checked\\n");
      try {
        k.check({AotKernel::tensor(p, "float16", shape, 2), AotKernel::tensor(p, "float16", bad, 2),
                 AotKernel::floating(2.0), AotKernel::tensor(p, "float16", shape, 2)});
      } catch (const std::exception& e) {
        std::printf("%s\\n", e.what());
      }
    }
''')


@pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")
def test_export_writes_the_artifact_and_a_typed_header(tmp_path):
    files = tilec.compile(axpy, out_idx=[-1], target="sm_90a").export(str(tmp_path / "aot"))
    assert [os.path.basename(f) for f in files] == ["axpy.tkc", "axpy.h"]
    header = open(files[1]).read()
    assert "inline void axpy(const void* A, const void* B, double alpha, void* C, int64_t n, void* stream = nullptr, " \
           "int device = 0)" in header
    assert "const int64_t C_shape[] = {n, 64};" in header and "C: float16[n, 64] (output" in header
    assert f'#define TILEC_AOT_DIR "{tmp_path / "aot"}"' in header


@pytest.mark.skipif(not (tilec._tilec.nvrtc_available()[0] and os.path.exists(LIB) and shutil.which("g++")),
                    reason="needs NVRTC, build/libtilec_runtime.a and g++")
def test_a_cpp_program_loads_the_export_and_checks_arguments(tmp_path):
    out = tmp_path / "aot"
    tilec.compile(axpy, out_idx=[-1], target="sm_90a").export(str(out))
    (tmp_path / "main.cc").write_text(MAIN)
    exe = tmp_path / "main"
    subprocess.run(["g++", "-std=c++20", "-I", os.path.join(ROOT, "include"), "-I", str(out), str(tmp_path / "main.cc"),
                    LIB, "-ldl", "-lpthread", "-o", str(exe)], check=True, capture_output=True, timeout=300)
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "axpy(A: float16[n, 64], B: float16[n, 64], alpha: float32) -> C: float16[n, 64]"
    assert lines[1] == "checked"
    assert "argument 'B' of kernel axpy" in lines[2] and "dimension 1: expected 64, got 32" in lines[2]


MISSING = textwrap.dedent('''
    #include <cstdio>
    #include "tilec/runtime/aot.h"
    int main(int argc, char** argv) {
      try {
        tilec::runtime::AotKernel k(argv[1]);
      } catch (const std::exception& e) {
        std::printf("%s\\n", e.what());
      }
    }
''')


@pytest.mark.skipif(not (os.path.exists(LIB) and shutil.which("g++")), reason="needs build/libtilec_runtime.a and g++")
def test_loading_a_missing_or_broken_export_says_what_to_do(tmp_path):
    (tmp_path / "load.cc").write_text(MISSING)
    exe = tmp_path / "load"
    subprocess.run(["g++", "-std=c++20", "-I", os.path.join(ROOT, "include"), str(tmp_path / "load.cc"), LIB, "-ldl",
                    "-lpthread", "-o", str(exe)], check=True, capture_output=True, timeout=300)
    missing = subprocess.run([str(exe), str(tmp_path / "nope.tkc")], capture_output=True, text=True).stdout
    assert "cannot read the exported kernel" in missing and "kernel.export(dir)" in missing
    (tmp_path / "broken.tkc").write_text("not a kernel")
    broken = subprocess.run([str(exe), str(tmp_path / "broken.tkc")], capture_output=True, text=True).stdout
    assert "is not a usable tilec kernel" in broken and "export it again" in broken
