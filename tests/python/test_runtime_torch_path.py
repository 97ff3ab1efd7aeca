"""The C++ fast path for torch tensors, exercised without torch: a stand-in Tensor class
with torch's attributes (data_ptr, shape, stride, dtype, is_cuda, get_device, device) is
registered through _set_torch_hooks, together with a recording `empty` and stream
function. On this GPU-less machine a call that passes validation stops at the driver
("no CUDA driver"), which proves validation, output allocation and the stream lookup ran.
Runs in a subprocess so the stand-in hooks do not leak into other tests.
"""
import os
import subprocess
import sys
import textwrap

import pytest

_tilec = pytest.importorskip("tilec._tilec")

SCRIPT = textwrap.dedent(r'''
    import tilec.kernel as K
    from launch_plans import ADD_PLAN, ADD_SOURCE, FILL_PLAN
    from tilec import _tilec

    class DType:
        def __init__(self, name): self.name = name
        def __repr__(self): return "fake." + self.name

    float32, float16, int64 = DType("float32"), DType("float16"), DType("int64")

    class Tensor:
        def __init__(self, shape, dtype=float32, ptr=0x10000, cuda=True, device=0, strides=None):
            self.shape = tuple(shape)
            self.dtype = dtype
            self._ptr = ptr
            self.is_cuda = cuda
            self._device = device
            self.device = f"cuda:{device}" if cuda else "cpu"
            if strides is None:
                strides, acc = [], 1
                for d in reversed(self.shape):
                    strides.insert(0, acc)
                    acc *= d
            self._strides = tuple(strides)
        def data_ptr(self): return self._ptr
        def stride(self): return self._strides
        def get_device(self): return self._device if self.is_cuda else -1
        def new_empty(self, shape):  # torch: same dtype and device as self
            calls.append(("new_empty", shape, self.dtype, self._device))
            return Tensor(shape, self.dtype, ptr=0x20000, device=self._device)

    calls = []
    def empty(shape, dtype=None, device=None):
        calls.append(("empty", shape, dtype, device))
        return Tensor(shape, dtype, ptr=0x20000, device=device)
    def stream(device):
        calls.append(("stream", device))
        return 0

    _tilec._set_torch_hooks(Tensor, [(float32, "float32"), (float16, "float16"), (int64, "int64")], empty, stream)

    k = K.compile_cuda(ADD_SOURCE, ADD_PLAN, target="sm_80", use_cache=False)

    def error_of(*args, **kwargs):
        try:
            k(*args, **kwargs)
        except Exception as e:
            return type(e).__name__ + ": " + str(e)
        return "no error"

    print("SHAPE", error_of(Tensor((3, 4)), Tensor((5, 4))))
    print("DTYPE", error_of(Tensor((3, 4), float16), Tensor((3, 4))))
    print("UNKNOWN", error_of(Tensor((3, 4), DType("complex64")), Tensor((3, 4))))
    print("HOST", error_of(Tensor((3, 4), cuda=False), Tensor((3, 4))))
    print("STRIDES", error_of(Tensor((3, 4), strides=(1, 3)), Tensor((3, 4))))
    print("ALIGN", error_of(Tensor((3, 4), ptr=0x10004), Tensor((3, 4))))
    print("DEVICES", error_of(Tensor((3, 4)), Tensor((3, 4), device=1)))
    print("CALLS_BEFORE", calls)
    print("LAUNCH", error_of(Tensor((3, 4), device=1), Tensor((3, 4), device=1)))
    print("CALLS_AFTER", calls)
    calls.clear()
    out = Tensor((3, 4), device=1)
    print("GIVEN", error_of(Tensor((3, 4), device=1), Tensor((3, 4), device=1), out, stream=7))
    print("CALLS_GIVEN", calls)
    calls.clear()
    r = k._dry_run(Tensor((3, 4)), Tensor((3, 4)))
    print("DRY", type(r).__name__, r.shape, r._device, calls)
    print("NULL", error_of(Tensor((3, 4), ptr=0), Tensor((3, 4))))
    # An output of another dtype than every input: torch.empty(shape, dtype=, device=).
    cast = K.compile_cuda('extern "C" __global__ void cast(const void* a, float* c, int n) {}', """tilec-launch-plan 1
    kernel cast
    symbol n int32
    tensor A float16 shape=[n]
    tensor C float32 shape=[n] output=1
    arg tensor 0
    arg tensor 1
    arg symbol n int32
    grid n
    block 32 1 1
    """, target="sm_80", use_cache=False)
    calls.clear()
    cast._dry_run(Tensor((6,), float16, device=1))
    print("CAST_ALLOC", calls)
    r = k._dry_run(Tensor((0, 4), ptr=0), Tensor((0, 4), ptr=0), Tensor((0, 4), ptr=0))
    print("NULL_EMPTY", r.shape)

    # An output the allocator cannot make: its error class, a message naming the kernel,
    # the output and its size, the allocator's error as the cause.
    class OutOfMemoryError(RuntimeError):
        pass
    def empty_oom(shape, dtype=None, device=None):
        raise OutOfMemoryError("CUDA out of memory. Tried to allocate 256.00 GiB.\nmore details")
    _tilec._set_torch_hooks(Tensor, [(float32, "float32")], empty_oom, stream)
    fill = K.compile_cuda('extern "C" __global__ void fill(float* z, float v, long long n) {}', FILL_PLAN,
                          target="sm_80", use_cache=False)
    try:
        fill(1.0, 2 ** 36)
    except Exception as e:
        print("OOM", type(e).__name__, "|", e, "|", type(e.__cause__).__name__, "|", str(e.__cause__).splitlines()[0])
    class NoMessage(Exception):
        def __init__(self):  # takes no message: the runtime falls back to RuntimeError
            super().__init__("no room")
    def empty_no_message(shape, dtype=None, device=None):
        raise NoMessage()
    _tilec._set_torch_hooks(Tensor, [(float32, "float32")], empty_no_message, stream)
    try:
        fill(1.0, 10)
    except Exception as e:
        print("OOM_FALLBACK", type(e).__name__, "|", e, "|", type(e.__cause__).__name__)
''')


@pytest.fixture(scope="module")
def lines():
    ok, why = _tilec.nvrtc_available()
    if not ok:
        pytest.skip(f"NVRTC not found: {why}")
    ok, _ = _tilec.driver_available()
    if ok:
        pytest.skip("this test expects a machine without a CUDA driver")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.abspath(__file__)),
                                                     os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    return dict(line.split(" ", 1) for line in out.stdout.splitlines())


SIG = "add(A: float32[n, 4], B: float32[n, 4]) -> C: float32[n, 4]"


def test_shape_mismatch(lines):
    assert lines["SHAPE"] == (f"KernelArgumentError: argument 'B' of kernel {SIG}: dimension 0 is the symbol 'n' = 3 "
                              "(set by argument 'A' dimension 0), got 5 (shape [5, 4])")


def test_dtype_mismatch(lines):
    assert lines["DTYPE"] == f"KernelArgumentError: argument 'A' of kernel {SIG}: expected dtype float32, got float16"


def test_unknown_torch_dtype(lines):
    assert lines["UNKNOWN"] == "KernelArgumentError: tensors of dtype fake.complex64 are not supported by tilec"


def test_host_tensor(lines):
    assert lines["HOST"].startswith(f"KernelArgumentError: argument 'A' of kernel {SIG}: expected a CUDA tensor, "
                                    "got a tensor on cpu")


def test_strides(lines):
    assert "expected a contiguous (row-major) tensor, got strides [1, 3] for shape [3, 4]" in lines["STRIDES"]


def test_alignment(lines):
    assert "the data pointer 0x10004 is not aligned to 16 bytes" in lines["ALIGN"]


def test_devices(lines):
    assert "all tensors must be on one device: 'A' is on cuda:0, this one on cuda:1" in lines["DEVICES"]


def test_nothing_allocated_on_errors(lines):
    assert lines["CALLS_BEFORE"] == "[]"


def test_output_allocated_on_the_inputs_device_then_driver_reached(lines):
    # The missing driver is found before torch's stream lookup (which would fail deep inside torch).
    assert lines["LAUNCH"].startswith("KernelLaunchError: kernel 'add' cannot run: no CUDA driver: "
                                      "dlopen(\"libcuda.so.1\") failed"), lines["LAUNCH"]
    # an input of the output's dtype: input.new_empty(shape), which keeps its dtype and device
    assert lines["CALLS_AFTER"] == "[('new_empty', (3, 4), fake.float32, 1)]"
    # none: torch.empty(shape, dtype=, device=)
    assert lines["CAST_ALLOC"] == "[('empty', (6,), fake.float32, 1), ('stream', 1)]"


def test_given_outputs_and_stream_skip_allocation_and_lookup(lines):
    assert "KernelLaunchError: kernel 'add' cannot run: no CUDA driver" in lines["GIVEN"]
    assert lines["CALLS_GIVEN"] == "[]"


def test_null_data_pointer_with_elements_is_refused(lines):
    assert lines["NULL"] == (f"KernelArgumentError: argument 'A' of kernel {SIG}: the data pointer is null, but the "
                             "tensor has 12 elements")  # (the hint is on the next line)
    assert lines["NULL_EMPTY"] == "(0, 4)"  # an empty tensor may have no storage


def test_output_the_allocator_cannot_make_names_kernel_output_and_size(lines):
    kind, message, cause_kind, cause = lines["OOM"].split(" | ")
    assert kind == "OutOfMemoryError"  # the allocator's class: `except torch.OutOfMemoryError` still works
    assert message == ("kernel 'fill': cannot allocate its output 'Z' (float32[68719476736], 274877906944 bytes "
                       "(256.0 GiB)) on cuda:0: OutOfMemoryError: CUDA out of memory. Tried to allocate 256.00 GiB.")
    assert (cause_kind, cause) == ("OutOfMemoryError", "CUDA out of memory. Tried to allocate 256.00 GiB.")
    assert lines["OOM_FALLBACK"].startswith("RuntimeError | kernel 'fill': cannot allocate its output 'Z' (float32[10], "
                                            "40 bytes) on cuda:0: NoMessage: no room | NoMessage")


def test_dry_run_allocates_and_returns_the_output(lines):
    assert lines["DRY"] == "Tensor (3, 4) 0 [('new_empty', (3, 4), fake.float32, 0), ('stream', 0)]"
