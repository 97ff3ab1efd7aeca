"""An exported kernel launched from C++ on the GPU (kernel.export + tilec/runtime/aot.h): a C++
program allocates with the driver API, launches through the generated header and checks the
result against its own host computation. Also the AOT example (examples/cpp/aot/gemm_aot.cc:
a GEMM + ReLU with M symbolic, against a double-precision reference)."""
import importlib.util
import os
import shutil
import subprocess
import textwrap

import pytest

torch = pytest.importorskip("torch")
import tilec  # noqa: E402
import tilec.language as T  # noqa: E402

pytestmark = pytest.mark.gpu
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
LIB = os.path.join(ROOT, "build-gpu", "libtilec_runtime.a")
N = T.dynamic("n")


@T.prim_func
def axpy(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), alpha: T.float32, C: T.Tensor((N,), "float32")):
    with T.Kernel(T.ceildiv(N, 256), threads=256) as bx:
        for i in T.Parallel(256):
            C[bx * 256 + i] = A[bx * 256 + i] + B[bx * 256 + i] * alpha


MAIN = textwrap.dedent('''
    #include <cuda.h>
    #include <cmath>
    #include <cstdio>
    #include <vector>
    #include "axpy.h"
    int main() {
      cuInit(0);
      CUdevice dev; cuDeviceGet(&dev, 0);
      CUcontext ctx; cuDevicePrimaryCtxRetain(&ctx, dev); cuCtxSetCurrent(ctx);
      const int64_t n = 1000003;
      std::vector<float> a(n), b(n), c(n, NAN);
      for (int64_t i = 0; i < n; ++i) a[i] = 0.5f * (i % 97), b[i] = 0.25f * (i % 13);
      CUdeviceptr da, db, dc;
      cuMemAlloc(&da, n * 4); cuMemAlloc(&db, n * 4); cuMemAlloc(&dc, n * 4);
      cuMemcpyHtoD(da, a.data(), n * 4); cuMemcpyHtoD(db, b.data(), n * 4); cuMemcpyHtoD(dc, c.data(), n * 4);
      tilec_aot::axpy(reinterpret_cast<void*>(da), reinterpret_cast<void*>(db), 3.0, reinterpret_cast<void*>(dc), n);
      cuCtxSynchronize();
      cuMemcpyDtoH(c.data(), dc, n * 4);
      for (int64_t i = 0; i < n; ++i)
        if (std::fabs(c[i] - (a[i] + 3.0f * b[i])) > 1e-5f) { std::printf("mismatch at %lld\\n", (long long)i); return 1; }
      std::printf("ok\\n");
      return 0;
    }
''')


@pytest.mark.skipif(not (os.path.exists(LIB) and shutil.which("g++")), reason="needs build-gpu/libtilec_runtime.a and g++")
def test_exported_kernel_runs_from_cpp(tmp_path):
    out = tmp_path / "aot"
    tilec.compile(axpy, out_idx=[-1], target="auto").export(str(out))
    (tmp_path / "main.cc").write_text(MAIN)
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    exe = tmp_path / "main"
    subprocess.run(["g++", "-std=c++20", "-I", os.path.join(ROOT, "include"), "-I", str(out), "-I",
                    os.path.join(cuda, "include"), str(tmp_path / "main.cc"), LIB, "-L", os.path.join(cuda, "lib64", "stubs"),
                    "-lcuda", "-ldl", "-lpthread", "-o", str(exe)], check=True, capture_output=True, timeout=300)
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


EXAMPLE = os.path.join(ROOT, "examples", "cpp", "aot")


@pytest.mark.skipif(not (os.path.exists(LIB) and shutil.which("g++")), reason="needs build-gpu/libtilec_runtime.a and g++")
def test_the_aot_example_matches_its_reference(tmp_path):
    spec = importlib.util.spec_from_file_location("gemm_relu_example", os.path.join(EXAMPLE, "gemm_relu.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tilec.compile(module.gemm_relu.get_tir(256, 128), out_idx=[-1], target="auto").export(str(tmp_path / "kernels"))
    exe = tmp_path / "gemm_aot"
    # The runtime opens the driver with dlopen: no -lcuda.
    subprocess.run(["g++", "-std=c++20", "-O2", "-I", os.path.join(ROOT, "include"), "-I", str(tmp_path / "kernels"),
                    os.path.join(EXAMPLE, "gemm_aot.cc"), LIB, "-ldl", "-lpthread", "-o", str(exe)], check=True,
                   capture_output=True, timeout=300)
    for m in ("512", "384"):
        r = subprocess.run([str(exe), m], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
