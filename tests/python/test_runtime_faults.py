"""Faults and bad input around a kernel call, on a machine without a GPU (issue 12): a cache
directory that cannot be written, no CUDA driver, and the texts a fault on the GPU raises. The
GPU halves (the same on an H200, out of memory, a kernel that faults) are tests/gpu/test_faults_gpu.py;
bad arguments, null pointers and allocator failures through stand-in tensors are in
test_runtime_torch_path.py."""
import os
import subprocess
import sys
import textwrap

import pytest

import tilec
import tilec.kernel as K
import tilec.language as T
from tilec import _tilec

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
needs_nvrtc = pytest.mark.skipif(not _tilec.nvrtc_available()[0], reason="NVRTC not found")
without_driver = pytest.mark.skipif(_tilec.driver_available()[0], reason="expects a machine without a CUDA driver")

# Compiles one kernel twice in a fresh process (the warning is once per process, the memory
# cache per process) and reports the NVRTC builds each compile ran; with "run", checks results.
TWICE = textwrap.dedent('''
    import sys
    import tilec, tilec.language as T
    from tilec import _tilec

    @T.prim_func
    def double_it(A: T.Tensor((1024,), "float32"), B: T.Tensor((1024,), "float32")):
        with T.Kernel(8, threads=128) as bx:
            for i in T.Parallel(128):
                B[bx * 128 + i] = A[bx * 128 + i] * 2.0

    target = sys.argv[1]
    before = _tilec._cuda_compile_count()
    first = tilec.compile(double_it, out_idx=[-1], target=target)
    middle = _tilec._cuda_compile_count()
    second = tilec.compile(double_it, out_idx=[-1], target=target)
    print("BUILDS", middle - before, _tilec._cuda_compile_count() - middle)
    print("FROM_CACHE", first.from_cache, second.from_cache)
    print("SAME_CUBIN", first.get_cubin() == second.get_cubin())
    if len(sys.argv) > 2 and sys.argv[2] == "run":
        import torch
        a = torch.randn(1024, device="cuda")
        for k in (first, second):
            torch.testing.assert_close(k(a), a * 2.0)
        print("RESULTS ok")
''')


def run_twice(tmp_path, target, *extra):
    """(stdout lines as a dict, stderr) of TWICE with a cache directory below a regular file:
    nothing can create it, not even root (chmod would not stop root)."""
    script = tmp_path / "twice.py"  # the front end reads the kernel's source from its file
    script.write_text(TWICE)
    blocker = tmp_path / "not_a_directory"
    blocker.write_text("x")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), TILEC_CACHE_DIR=str(blocker / "cache"))
    env.pop("TILEC_DISABLE_CACHE", None)
    r = subprocess.run([sys.executable, str(script), target, *extra], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return dict(line.split(" ", 1) for line in r.stdout.splitlines()), r.stderr


@needs_nvrtc
def test_unwritable_cache_dir_warns_once_and_the_memory_cache_serves(tmp_path):
    out, err = run_twice(tmp_path, "sm_90a")
    warnings = [ln for ln in err.splitlines() if "kernel disk cache not written" in ln]
    assert len(warnings) == 1, err
    assert "set TILEC_CACHE_DIR to a writable directory" in warnings[0] and "cannot create" in warnings[0]
    assert out["BUILDS"] == "1 0"  # the second compile ran no NVRTC build
    assert out["FROM_CACHE"] == "False True"
    assert out["SAME_CUBIN"] == "True"
    assert not (tmp_path / "not_a_directory").is_dir()


@needs_nvrtc
@without_driver
def test_without_a_driver_compiling_works_and_a_call_says_what_is_missing():
    torch = pytest.importorskip("torch")

    @T.prim_func
    def halve(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
        with T.Kernel(2, threads=128) as bx:
            for i in T.Parallel(128):
                B[bx * 128 + i] = A[bx * 128 + i] * 0.5

    kernel = tilec.compile(halve, out_idx=[-1], target="sm_90a")  # NVRTC needs no GPU
    assert kernel.get_cubin()
    a = torch.randn(256)
    with pytest.raises(K.KernelArgumentError) as info:
        kernel(a)  # the only tensors this machine can make are on the host
    message = str(info.value)
    assert "argument 'A' of kernel halve(A: float32[256]) -> B: float32[256]: expected a CUDA tensor, got a tensor " \
           "on cpu" in message
    assert "hint: move it to the GPU, e.g. tensor.cuda(); but this machine has no usable CUDA driver (no CUDA " \
           "driver: dlopen(\"libcuda.so.1\") failed" in message
    assert 'so no kernel can run here: tilec.compile(..., target="cpu") runs the program on the host' in message
    assert info.traceback[-1].path.name == "test_runtime_faults.py"  # raised at the call, not deep inside
    # What the hint offers does run here.
    on_host = tilec.compile(halve, out_idx=[-1], target="cpu")
    torch.testing.assert_close(on_host(a), a * 0.5)


def test_a_fault_says_the_context_is_unusable_and_names_the_kernel_that_ran_last():
    error = "cuLaunchKernel failed: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)"
    message, hint = _tilec._launch_failure_message("scale2", 0, error, 700, "oob_write")
    assert message == (
        "kernel 'scale2' on cuda:0: CUDA reports a fault on this device (" + error + "), and after such an error the "
        "CUDA context of cuda:0 is unusable: no kernel or memory operation can run on it in this process any more. "
        "The last kernel tilec launched on cuda:0 was 'oob_write': the fault is most likely there (kernels run "
        "asynchronously, so a fault shows at a later call)")
    assert hint.startswith("restart the process; to find the faulting access, run it with TILEC_LAUNCH_BLOCKING=1")
    same, _ = _tilec._launch_failure_message("oob_write", 1, error, 700, "oob_write")
    assert same.endswith("The fault is in 'oob_write' (the last kernel tilec launched on cuda:1) or in other work "
                         "queued on the device since (kernels run asynchronously)")
    first, _ = _tilec._launch_failure_message("k", 0, error, 700, "")
    assert first.endswith("in this process any more")
    # Every sticky error says so: traps and device asserts, misaligned addresses, launch failures.
    for code in (700, 702, 710, 714, 715, 716, 717, 718, 719):
        assert "unusable" in _tilec._launch_failure_message("k", 0, "x", code, "")[0], code
    # Other failures leave the context usable and say only what failed.
    other, other_hint = _tilec._launch_failure_message("k", 0, "cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE "
                                                       "(invalid argument)", 1, "j")
    assert other == "kernel 'k' could not be launched on cuda:0: cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE " \
                    "(invalid argument)"
    assert other_hint == ""
    assert issubclass(K.KernelLaunchError, RuntimeError)
