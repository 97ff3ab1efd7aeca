"""Faults on the GPU (issue 12): a cache directory nothing can write, an output too large for
the device, a kernel that faults. The CPU halves (message texts, stand-in allocators, no driver)
are tests/python/test_runtime_faults.py and test_runtime_torch_path.py."""
import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
import tilec.kernel as K  # noqa: E402

pytestmark = pytest.mark.gpu
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
from launch_plans import FILL_PLAN  # noqa: E402


def _cpu_half():
    spec = importlib.util.spec_from_file_location("runtime_faults_cpu", os.path.join(ROOT, "tests", "python",
                                                                                    "test_runtime_faults.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_unwritable_cache_dir_one_warning_one_build_right_results(tmp_path):
    out, err = _cpu_half().run_twice(tmp_path, "auto", "run")
    assert len([ln for ln in err.splitlines() if "kernel disk cache not written" in ln]) == 1, err
    assert out["BUILDS"] == "1 0" and out["FROM_CACHE"] == "False True"
    assert out["RESULTS"] == "ok"


FILL = r"""
extern "C" __global__ void __launch_bounds__(256) fill(float* __restrict__ z, float v, long long n) {
  long long i = (long long)blockIdx.x * 256 + threadIdx.x;
  if (i < n) z[i] = v;
}
"""


def test_output_larger_than_the_device_is_a_clear_error_and_leaks_nothing(tmp_path):
    fill = K.compile_cuda(FILL, FILL_PLAN, target="auto", cache_dir=str(tmp_path))
    torch.testing.assert_close(fill(3.0, 1000), torch.full((1000,), 3.0, device="cuda"))  # module loaded
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    allocated, reserved = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
    total = torch.cuda.mem_get_info()[1]
    n = 2 ** 36  # float32: 256 GiB, more than the H200's 141 GB
    assert n * 4 > total
    with pytest.raises(torch.OutOfMemoryError) as info:  # torch's class, so existing handlers still work
        fill(1.0, n)
    message = str(info.value)
    assert message.startswith("kernel 'fill': cannot allocate its output 'Z' (float32[68719476736], 274877906944 "
                              "bytes (256.0 GiB)) on cuda:0: "), message
    assert "out of memory" in message
    assert isinstance(info.value.__cause__, torch.OutOfMemoryError)
    del info
    # The process goes on: the same kernel at a normal size, and nothing was left allocated.
    out = fill(2.0, 1 << 20)
    torch.cuda.synchronize()
    assert bool((out == 2.0).all())
    del out
    torch.cuda.empty_cache()
    assert torch.cuda.memory_allocated() == allocated
    # This process's reserve too. Not the driver's free memory (mem_get_info): it is the whole
    # device's, and other processes on the GPU move it (96 MB in the first run, beside the corpus).
    assert torch.cuda.memory_reserved() == reserved


FAULT = textwrap.dedent(r'''
    import time, torch
    import tilec.kernel as K

    OOB = """extern "C" __global__ void oob_write(float* z, int n) {
      z[(long long)threadIdx.x + (1LL << 40)] = 1.0f;  // 4 TiB past the tensor: no allocation is there
    }"""
    TWICE = """extern "C" __global__ void twice(const float* a, float* b, int n) {
      int i = blockIdx.x * 256 + threadIdx.x;
      if (i < n) b[i] = 2.0f * a[i];
    }"""
    PLAN = """tilec-launch-plan 1
    kernel {name}
    symbol n int32
    tensor {first} float32 shape=[n]
    {second}arg tensor 0
    {arg}arg symbol n int32
    grid (// (+ n 255) 256)
    block 256 1 1
    """
    oob = K.compile_cuda(OOB, PLAN.format(name="oob_write", first="Z", second="", arg=""), target="auto",
                         use_cache=False)
    twice = K.compile_cuda(TWICE, PLAN.format(name="twice", first="A", second="tensor B float32 shape=[n]\n",
                                             arg="arg tensor 1\n"), target="auto", use_cache=False)
    a = torch.ones(1024, device="cuda")
    b = torch.empty(1024, device="cuda")
    twice(a, b)  # loaded and run before the fault
    torch.cuda.synchronize()
    assert bool((b == 2.0).all())

    def report(tag, call):
        try:
            call()
        except Exception as e:
            print(tag, type(e).__name__, "|", str(e).replace("\n", " // "), flush=True)
            return
        print(tag, "no error", flush=True)

    report("FAULT", lambda: oob(a))
    time.sleep(2.0)  # the fault has happened by now
    report("NEXT", lambda: twice(a, b))  # outputs given: no allocation in the broken context
    report("SYNC", torch.cuda.synchronize)
''')


def _run_fault(tmp_path, **env):
    script = tmp_path / "fault.py"
    script.write_text(FAULT)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), **env)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines() if line.split(" ", 1)[0] in
                 ("FAULT", "NEXT", "SYNC"))
    assert set(lines) == {"FAULT", "NEXT", "SYNC"}, r.stdout + r.stderr
    return lines


UNUSABLE = "and after such an error the CUDA context of cuda:0 is unusable"


def test_fault_is_reported_by_the_next_call_naming_the_kernel_that_faulted(tmp_path):
    # A launch is asynchronous: the fault shows at the next call, whose error names the kernel
    # tilec launched last on the device and says the context can run nothing more.
    lines = _run_fault(tmp_path)
    assert lines["FAULT"] == "no error", lines
    assert lines["NEXT"].startswith("KernelLaunchError | kernel 'twice' on cuda:0: CUDA reports a fault on this "
                                    "device ("), lines
    assert UNUSABLE in lines["NEXT"]
    assert "The last kernel tilec launched on cuda:0 was 'oob_write': the fault is most likely there" in lines["NEXT"]
    assert "TILEC_LAUNCH_BLOCKING=1" in lines["NEXT"]  # the hint
    assert lines["SYNC"] != "no error"  # CUDA's rule: nothing runs in this context any more


def test_fault_with_launch_blocking_is_raised_by_the_faulting_call(tmp_path):
    lines = _run_fault(tmp_path, TILEC_LAUNCH_BLOCKING="1")
    assert lines["FAULT"].startswith("KernelLaunchError | kernel 'oob_write' on cuda:0: CUDA reports a fault on this "
                                     "device (cuStreamSynchronize failed: CUDA_ERROR_"), lines
    assert UNUSABLE in lines["FAULT"]
    assert "The fault is in 'oob_write' (the last kernel tilec launched on cuda:0)" in lines["FAULT"]
    assert lines["NEXT"].startswith("KernelLaunchError | kernel 'twice' on cuda:0: CUDA reports a fault"), lines
    assert "was 'oob_write'" in lines["NEXT"]
