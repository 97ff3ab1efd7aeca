"""The runtime end to end on the GPU with torch tensors: hand-written CUDA C + launch plan
-> NVRTC -> cache -> Kernel -> cuLaunchKernel on torch's current stream.

Also measures (and prints; the loose asserts only catch gross regressions):
  * host overhead of a kernel call from Python (tiny kernel, timed over many calls,
    with and without output allocation, against torch's own tiny op as a peer);
  * a disk-cache hit, in this process (memory cache cleared) and in a fresh process.
The numbers go to stdout (pytest -s) and, when $OUT is set, to $OUT/runtime_gpu.json.
"""
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

torch = pytest.importorskip("torch")
import tilec.kernel as K  # noqa: E402
from tilec import _tilec  # noqa: E402

pytestmark = pytest.mark.gpu

RESULTS = {}


def record(name, value):
    RESULTS[name] = value
    print(f"[runtime_gpu] {name} = {value}")
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "runtime_gpu.json"), "w") as f:
            json.dump(RESULTS, f, indent=2, sort_keys=True)


def device_arch():
    major, minor = torch.cuda.get_device_capability()
    cc = major * 10 + minor
    return f"sm_{cc}" + ("a" if cc in (90, 100) else "")


AXPY = """
extern "C" __global__ void __launch_bounds__(256) axpy(const float* __restrict__ x, const float* __restrict__ y,
                                                      float* __restrict__ z, float a, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) z[i] = a * x[i] + y[i];
}
"""
AXPY_PLAN = """tilec-launch-plan 1
kernel axpy
symbol n int32
tensor X float32 shape=[n] align=16
tensor Y float32 shape=[n] align=16
tensor Z float32 shape=[n] output=1
scalar a float32
param tensor 0
param tensor 1
param scalar 0
param tensor 2
arg tensor 0
arg tensor 1
arg tensor 2
arg scalar 0
arg symbol n int32
grid (// (+ n 255) 256)
block 256 1 1
"""


@pytest.fixture(scope="module")
def axpy(tmp_path_factory):
    return K.compile_cuda(AXPY, AXPY_PLAN, target=device_arch(), cache_dir=str(tmp_path_factory.mktemp("cache")))


@pytest.mark.parametrize("n", [1, 255, 256, 1000003])
def test_axpy_allocates_its_output(axpy, n):
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    z = axpy(x, y, 0.5)
    torch.cuda.synchronize()
    assert isinstance(z, torch.Tensor) and z.shape == (n,) and z.device == x.device and z.dtype == torch.float32
    torch.testing.assert_close(z.double(), 0.5 * x.double() + y.double(), rtol=1e-6, atol=1e-6)


def test_axpy_with_given_output_and_streams(axpy):
    n = 4097
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    z = torch.full((n,), float("nan"), device="cuda")
    assert axpy(x, y, -2.0, z) is z
    torch.cuda.synchronize()
    torch.testing.assert_close(z, -2.0 * x + y)
    # torch's current stream is used, and stream= overrides it.
    s = torch.cuda.Stream()
    z.fill_(float("nan"))
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        axpy(x, y, 3.0, z)
    s.synchronize()
    torch.testing.assert_close(z, 3.0 * x + y)
    z.fill_(float("nan"))
    torch.cuda.synchronize()
    axpy(x, y, 1.0, z, stream=s)
    s.synchronize()
    torch.testing.assert_close(z, x + y)


def test_requires_grad_and_views_are_accepted(axpy):
    x = torch.randn(300, device="cuda", requires_grad=True)
    base = torch.randn(2, 300, device="cuda")
    z = axpy(x, base[1], 1.0)  # a contiguous row view, 16-byte aligned (300 * 4 = 1200)
    torch.cuda.synchronize()
    torch.testing.assert_close(z, x.detach() + base[1])


def test_empty_tensors_launch_nothing(axpy):
    x = torch.empty(0, device="cuda")
    z = axpy(x, x, 1.0)
    assert z.shape == (0,)


class NullData(torch.Tensor):
    """A CUDA tensor whose data pointer reads as null (what a broken extension could hand over)."""
    __torch_function__ = torch._C._disabled_torch_function_impl

    def data_ptr(self):
        return 0


@pytest.mark.parametrize("make_args,message", [
    (lambda: (torch.randn(8, device="cuda"), torch.randn(9, device="cuda"), 1.0),
     "dimension 0 is the symbol 'n' = 8 (set by argument 'X' dimension 0), got 9"),
    (lambda: (torch.randn(8, device="cuda", dtype=torch.float16), torch.randn(8, device="cuda"), 1.0),
     "expected dtype float32, got float16"),
    (lambda: (torch.randn(8), torch.randn(8, device="cuda"), 1.0), "expected a CUDA tensor, got a tensor on cpu"),
    (lambda: (torch.randn(16, device="cuda")[::2], torch.randn(8, device="cuda"), 1.0),
     "expected a contiguous (row-major) tensor"),
    (lambda: (torch.randn(9, device="cuda")[1:], torch.randn(8, device="cuda"), 1.0), "is not aligned to 16 bytes"),
    (lambda: (torch.randn(2, 4, device="cuda"), torch.randn(8, device="cuda"), 1.0), "expected a 1-d tensor"),
    (lambda: (torch.randn(8, device="cuda"),), "takes 3 arguments (or 4 with the outputs), got 1"),
    (lambda: (torch.randn(8, device="cuda").as_subclass(NullData), torch.randn(8, device="cuda"), 1.0),
     "argument 'X' of kernel axpy(X: float32[n], Y: float32[n], a: float32) -> Z: float32[n]: the data pointer is "
     "null, but the tensor has 8 elements"),
])
def test_wrong_arguments_raise_before_launch(axpy, make_args, message):
    with pytest.raises(K.KernelArgumentError) as info:
        axpy(*make_args())
    assert message in str(info.value)
    torch.cuda.synchronize()  # nothing bad reached the GPU


def test_dynamic_shared_memory_above_48k():
    src = """
extern "C" __global__ void reverse(const float* in, float* out, int n) {
  extern __shared__ float buf[];
  int base = blockIdx.x * 25600;
  for (int i = threadIdx.x; i < 25600; i += blockDim.x) buf[i] = base + i < n ? in[base + i] : 0.0f;
  __syncthreads();
  for (int i = threadIdx.x; i < 25600; i += blockDim.x) if (base + i < n) out[base + i] = buf[i] * 2.0f;
}
"""
    plan = """tilec-launch-plan 1
kernel reverse
symbol n int32
tensor In float32 shape=[n]
tensor Out float32 shape=[n] output=1
arg tensor 0
arg tensor 1
arg symbol n int32
grid (// (+ n 25599) 25600)
block 512 1 1
smem 102400
"""
    k = K.compile_cuda(src, plan, target=device_arch(), use_cache=False)
    x = torch.randn(60000, device="cuda")
    out = k(x)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, 2 * x)


def test_profiler_checks_and_times(axpy):
    prof = axpy.get_profiler(symbols={"n": 1 << 20}, scalars={"a": 0.5})
    prof.assert_allclose(lambda x, y, a: a * x.double() + y.double(), rtol=1e-5, atol=1e-5)
    ms = prof.do_bench(warmup=5, rep=20)
    peer = prof.do_bench(lambda x, y, a: torch.add(y, x, alpha=a), warmup=5, rep=20)
    record("axpy_1M_kernel_ms", round(ms, 5))
    record("axpy_1M_torch_ms", round(peer, 5))
    assert 0 < ms < 10


def test_profiler_catches_wrong_and_unwritten_outputs(tmp_path):
    wrong = AXPY.replace("a * x[i] + y[i]", "a * x[i] - y[i]")
    k = K.compile_cuda(wrong, AXPY_PLAN, target=device_arch(), cache_dir=str(tmp_path))
    with pytest.raises(AssertionError, match="does not match the reference"):
        k.get_profiler(symbols={"n": 5000}, scalars={"a": 1.0}).assert_allclose(lambda x, y, a: a * x + y)
    half = AXPY.replace("if (i < n)", "if (i < n / 2)")
    k = K.compile_cuda(half, AXPY_PLAN, target=device_arch(), cache_dir=str(tmp_path))
    with pytest.raises(AssertionError, match="left unwritten"):
        k.get_profiler(symbols={"n": 5000}, scalars={"a": 1.0}).assert_allclose(
            lambda x, y, a: a * x + y, max_mismatched_ratio=0.9)


def _per_call_us(fn, calls=20000):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / calls * 1e6


def test_launch_overhead(axpy):
    """Host time per call of a cached tiny kernel (n = 1), measured as the wall time of
    20000 back-to-back calls divided by 20000 (the GPU runs them asynchronously; a tiny
    kernel takes ~2 us on the device, so the host side is what is measured)."""
    x, y = torch.randn(1, device="cuda"), torch.randn(1, device="cuda")
    z = torch.empty(1, device="cuda")
    with_output = _per_call_us(lambda: axpy(x, y, 1.0, z))
    allocating = _per_call_us(lambda: axpy(x, y, 1.0))
    torch_peer = _per_call_us(lambda: torch.add(y, x, out=z))
    record("launch_overhead_us_outputs_given", round(with_output, 2))
    record("launch_overhead_us_output_allocated", round(allocating, 2))
    record("torch_add_out_us_peer", round(torch_peer, 2))
    assert with_output < 50, f"{with_output:.1f} us per call"  # target < 10 us; this only catches regressions


def test_disk_cache_hit_time(tmp_path):
    arch = device_arch()
    _tilec.clear_memory_cache()  # an earlier test compiled the same kernel in this process
    t0 = time.perf_counter()
    cold = K.compile_cuda(AXPY, AXPY_PLAN, target=arch, cache_dir=str(tmp_path))
    cold_ms = (time.perf_counter() - t0) * 1e3
    assert not cold.from_cache
    _tilec.clear_memory_cache()
    t0 = time.perf_counter()
    hit = K.compile_cuda(AXPY, AXPY_PLAN, target=arch, cache_dir=str(tmp_path))
    hit_ms = (time.perf_counter() - t0) * 1e3
    assert hit.from_cache
    record("nvrtc_cold_compile_ms_tiny", round(cold_ms, 2))
    record("disk_cache_hit_ms_in_process", round(hit_ms, 3))
    # A fresh process, as when a script is rerun: torch has initialised CUDA (as it would
    # before any kernel runs); the time is that of the compile call alone.
    code = textwrap.dedent(f"""
        import time, torch, tilec.kernel as K
        torch.zeros(1, device="cuda")
        t0 = time.perf_counter()
        k = K.compile_cuda({AXPY!r}, {AXPY_PLAN!r}, target={arch!r}, cache_dir={str(tmp_path)!r})
        print(k.from_cache, (time.perf_counter() - t0) * 1e3, k.cache_key)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    from_cache, fresh_ms, fresh_key = out.stdout.split()
    # A miss says which: another key (something in the key differs between the processes) or
    # the same key not loaded (the entry was refused: the fresh process's warning is in stderr).
    assert from_cache == "True", (f"fresh process missed the disk cache; keys {'equal' if fresh_key == hit.cache_key else 'differ'}: "
                                  f"{hit.cache_key} vs {fresh_key}; stderr: {out.stderr[-1500:]}")
    record("disk_cache_hit_ms_fresh_process", round(float(fresh_ms), 3))
    assert hit_ms < 20, f"disk-cache hit took {hit_ms:.1f} ms"


def test_multiple_outputs_return_a_list():
    src = """
extern "C" __global__ void split(const float* x, float* pos, float* neg, int n) {
  int i = blockIdx.x * 128 + threadIdx.x;
  if (i < n) { pos[i] = fmaxf(x[i], 0.0f); neg[i] = fminf(x[i], 0.0f); }
}
"""
    plan = """tilec-launch-plan 1
kernel split
symbol n int32
tensor X float32 shape=[n]
tensor P float32 shape=[n] output=1
tensor N float32 shape=[n] output=1
arg tensor 0
arg tensor 1
arg tensor 2
arg symbol n int32
grid (// (+ n 127) 128)
block 128 1 1
"""
    k = K.compile_cuda(src, plan, target=device_arch(), use_cache=False)
    x = torch.randn(1000, device="cuda")
    p, n = k(x)
    torch.cuda.synchronize()
    torch.testing.assert_close(p, x.clamp(min=0))
    torch.testing.assert_close(n, x.clamp(max=0))
