"""Runs one upstream TileLang program on a machine without a GPU, as the corpus harness's child:

    python tests/upstream/cpu_mode.py RESULT.json PROGRAM.py [args...]

`tilelang` resolves to tilec (as with `python -m tilec.run`), and:
- every kernel is compiled for sm_90a through NVRTC (target "auto"/"cuda" means sm_90a here);
- launches are intercepted: a kernel call checks its arguments' count and ranks and returns
  outputs of the right shape and dtype (zeros), computed nowhere;
- torch's "cuda" device is the CPU (a TorchFunctionMode rewrites device arguments) and
  torch.cuda reports one H200; matrix products and attention above ~1e8 flops return zeros of
  the right shape, so reference programs do not take minutes;
- tensors above HUGE_BYTES (1 GiB) are shapes only: an op that reads or makes one is not
  computed (its result's shape and dtype come from torch's meta device), and the result is a
  zero-filled tensor that owns no memory when it is itself that large (never-written pages,
  or a broadcast zero above VIRTUAL_BYTES or when it needs a gradient) —
  a reference that builds a (batch, heads, 4096, 4096) score matrix would otherwise take more
  host memory than the machine has; in-place ops on such tensors do nothing; an op on inputs
  above MEDIUM_BYTES asks the meta device for its result's size first (a repeat_interleave
  that makes a huge tensor from a small one is shape-only too);
- numerical checks are neutralised (torch.testing.assert_close, torch.allclose, the
  profiler's assert_allclose, tilelang.testing.torch_assert_close), and timing calls run
  their function once and report 1 ms — the outputs are not computed, so nothing can be checked.

RESULT.json gets {"status", "kernels", "functions", "error", "error_kind", "seconds"}; see run_corpus.py for
what the statuses mean.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
import weakref

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

TARGET = "sm_90a"
FLOP_CAP = 1e8
HUGE_BYTES = 1 << 30
MEDIUM_BYTES = 8 << 20  # ops on inputs above this size check their result's size first
VIRTUAL_BYTES = 256 << 30  # shape-only results up to this size are tried as contiguous never-touched memory
_state = {"kernels": 0, "compile_errors": 0, "functions": 0}


# ------------------------------------------------------------------------------ torch on CPU


def _install_fake_cuda(torch):
    from torch.overrides import TorchFunctionMode

    def cpu_device(d):
        if isinstance(d, torch.device):
            return torch.device("cpu") if d.type == "cuda" else d
        if isinstance(d, str) and d.startswith("cuda"):
            return "cpu"
        if isinstance(d, int) and not isinstance(d, bool):
            return "cpu"
        return d

    heavy = {torch.matmul, torch.mm, torch.bmm, torch.einsum, torch.Tensor.__matmul__, torch.Tensor.matmul,
             torch.Tensor.mm, torch.Tensor.bmm, torch.baddbmm, torch.addmm, torch.nn.functional.linear,
             torch.nn.functional.scaled_dot_product_attention, torch.nn.functional.conv2d,
             torch.nn.functional.conv1d, torch.Tensor.__rmatmul__}

    def flops(args):
        sizes = [a.numel() for a in args if isinstance(a, torch.Tensor)]
        if len(sizes) < 2:
            return 0
        sizes.sort()
        return float(sizes[-1]) * float(sizes[-2]) ** 0.5

    class CudaIsCpu(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if "device" in kwargs:
                kwargs["device"] = cpu_device(kwargs["device"])
            name = getattr(func, "__name__", "")
            if name in ("cuda",):
                return args[0]
            if name == "to":
                args = tuple(cpu_device(a) for a in args)
            if name == "Tensor" and False:
                pass
            if func in heavy and flops(args) > FLOP_CAP:
                meta = [a.to("meta") if isinstance(a, torch.Tensor) else a for a in args]
                with torch._C.DisableTorchFunction():
                    out = func(*meta, **kwargs)
                # Keep the autograd graph (reference programs call .backward() on it): zeros that
                # depend on every input that needs a gradient, so the inputs get zero gradients.
                return _zeros_like_meta(torch, out, _grad_sources(torch, args))
            shaped = _shape_only(torch, func, name, args, kwargs)
            if shaped is not _COMPUTE:
                return shaped
            return func(*args, **kwargs)

    mode = CudaIsCpu()
    mode.__enter__()

    class FakeEvent:
        def __init__(self, *a, **k):
            pass

        def record(self, *a, **k):
            pass

        def synchronize(self):
            pass

        def elapsed_time(self, other):
            return 1.0

    class FakeStream:
        cuda_stream = 0

        def __init__(self, *a, **k):
            pass

        def synchronize(self):
            pass

        def wait_stream(self, *a):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

    class Props:
        name = "NVIDIA H200 (intercepted)"
        major, minor = 9, 0
        multi_processor_count = 132
        total_memory = 141 * 2**30
        shared_memory_per_block_optin = 227 * 1024
        L2_cache_size = 60 * 2**20
        warp_size = 32

    cuda = torch.cuda
    cuda.is_available = lambda: True
    cuda.init = lambda: None
    cuda.is_initialized = lambda: True
    cuda.device_count = lambda: 1
    cuda.current_device = lambda: 0
    cuda.set_device = lambda *a: None
    cuda.synchronize = lambda *a, **k: None
    cuda.get_device_capability = lambda *a: (9, 0)
    cuda.get_device_name = lambda *a: Props.name
    cuda.get_device_properties = lambda *a: Props()
    cuda.manual_seed = lambda *a: None
    cuda.manual_seed_all = lambda *a: None
    cuda.empty_cache = lambda: None
    cuda.Event = FakeEvent
    cuda.Stream = FakeStream
    cuda.current_stream = lambda *a: FakeStream()
    cuda.default_stream = lambda *a: FakeStream()
    cuda.stream = lambda s=None: FakeStream()
    cuda.max_memory_allocated = lambda *a: 0
    cuda.reset_peak_memory_stats = lambda *a: None
    cuda.memory_allocated = lambda *a: 0

    class FakeDevice:
        def __init__(self, *a, **k):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

    cuda.device = FakeDevice

    real_generator = torch.Generator

    class CpuGenerator(real_generator):  # torch.Generator(device="cuda") -> a CPU generator
        def __new__(cls, device=None):
            return real_generator(cpu_device(device) if device is not None else "cpu")

    torch.Generator = CpuGenerator
    torch.backends.cudnn.allow_tf32 = True

    # torch.profiler with CUDA activities needs a GPU: profile the CPU only (the table is empty).
    real_profile = torch.profiler.profile

    def cpu_profile(*a, activities=None, **k):
        if activities is not None:
            activities = [x for x in activities if x != torch.profiler.ProfilerActivity.CUDA] or \
                [torch.profiler.ProfilerActivity.CPU]
        return real_profile(*a, activities=activities, **k)

    torch.profiler.profile = cpu_profile


_COMPUTE = object()  # _shape_only's answer: run the op for real
_FACTORIES = ("randn", "rand", "randint", "zeros", "ones", "empty", "full", "normal", "arange", "randperm")


def _huge(torch, t) -> bool:
    return isinstance(t, torch.Tensor) and t.numel() * t.element_size() > HUGE_BYTES


# Shape-only results that need a gradient: id -> (the tensor, the tensors it stands for in the
# autograd graph). Their gradients go to those sources directly, never through a huge tensor.
_GRAD_SOURCES: dict = {}


def _tensors_in(torch, values) -> list:
    """The tensors of nested lists / tuples (no closures: nothing outlives the call)."""
    out, stack = [], [values]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, torch.Tensor):
            out.append(v)
    return out


def _grad_sources(torch, values) -> list:
    """The small tensors needing a gradient that `values` (tensors, nested lists) depend on."""
    out, seen = [], set()
    for v in _tensors_in(torch, values):
        entry = _GRAD_SOURCES.get(id(v))
        if entry is not None and entry[0]() is v:
            sources = entry[1]
        elif v.requires_grad and not _huge(torch, v):
            sources = [v]
        else:
            continue
        for t in sources:
            if id(t) not in seen:
                seen.add(id(t))
                out.append(t)
    return out


def _zeros_like_meta(torch, m, sources=()):
    """Zeros of a meta tensor's shape and dtype; above HUGE_BYTES a broadcast zero (no memory).
    With `sources` (tensors needing a gradient) the zeros depend on them in the autograd graph."""
    nbytes = m.numel() * m.element_size()
    huge = nbytes > HUGE_BYTES
    base = torch.zeros((), dtype=m.dtype) if huge else torch.zeros(m.shape, dtype=m.dtype)
    if sources and torch.is_grad_enabled() and (m.dtype.is_floating_point or m.dtype.is_complex):
        link = sum((t[(0,) * t.ndim] * 0).to(m.dtype) for t in sources if t.numel())
        if isinstance(link, torch.Tensor):
            base = base + link
    out = base
    if huge:
        out = None
        if not base.requires_grad and nbytes <= VIRTUAL_BYTES:
            # Contiguous, as programs assert: fresh pages that are never written read as zeros
            # and take no host memory.
            try:
                out = torch.empty(m.shape, dtype=m.dtype)
            except RuntimeError:
                out = None
        if out is None:
            out = base.expand(m.shape)
    if out.requires_grad:
        key = id(out)  # the entry goes with `out`: it must not keep the sources alive
        _GRAD_SOURCES[key] = (weakref.ref(out, lambda _, k=key: _GRAD_SOURCES.pop(k, None)), list(sources))
    return out


def _shape_only(torch, func, name, args, kwargs):
    """The result of an op on or making a tensor above HUGE_BYTES, computed on shapes only
    (module docstring); _COMPUTE when the op is small or its result is not a tensor."""
    flat = _tensors_in(torch, [args, list(kwargs.values())])
    factory = not flat and name in _FACTORIES and "out" not in kwargs
    huge_input = any(_huge(torch, t) for t in flat)
    inplace = name == "__setitem__" or (name.endswith("_") and not name.endswith("__")) or \
        (name.startswith("__i") and name.endswith("__")) or "out" in kwargs
    # An op on mid-sized inputs may still make a huge result (x.repeat_interleave(128)): its
    # result's size is looked up on the meta device first.
    growing = not factory and not huge_input and not inplace and \
        sum(t.numel() * t.element_size() for t in flat) > MEDIUM_BYTES
    if not factory and not huge_input and not growing:
        return _COMPUTE
    if inplace and not factory:
        return None if name == "__setitem__" else (args[0] if args else None)

    def to_meta(v):
        if isinstance(v, (list, tuple)):
            return type(v)(to_meta(x) for x in v)
        return v.to("meta") if isinstance(v, torch.Tensor) else v

    meta_kwargs = {k: to_meta(v) for k, v in kwargs.items()}
    if factory:
        meta_kwargs["device"] = "meta"
        meta_kwargs.pop("generator", None)
    try:
        with torch._C.DisableTorchFunction():
            out = func(*to_meta(args), **meta_kwargs)
    except Exception:  # noqa: BLE001 - ops without a meta kernel run for real
        return _COMPUTE

    sources = _grad_sources(torch, [args, list(kwargs.values())])

    def materialise(v):
        if isinstance(v, torch.Tensor):
            return _zeros_like_meta(torch, v, sources)
        if isinstance(v, (list, tuple)) and v and all(isinstance(x, torch.Tensor) for x in v):
            items = [_zeros_like_meta(torch, x, sources) for x in v]
            if type(v) in (list, tuple):
                return type(v)(items)
            try:  # torch.return_types (values, indices)
                return type(v)(items)
            except TypeError:
                return tuple(items)
        raise TypeError

    if (factory or growing) and not (isinstance(out, torch.Tensor) and _huge(torch, out)):
        return _COMPUTE
    try:
        return materialise(out)
    except TypeError:
        return _COMPUTE


def _neutralise_checks(torch):
    torch.testing.assert_close = lambda *a, **k: None
    torch.allclose = lambda *a, **k: True


# ------------------------------------------------------------------------------ tilec side


class InterceptedKernel:
    """A compiled kernel whose calls return zero outputs instead of launching."""

    def __init__(self, kernel):
        self._kernel = kernel
        self._params = kernel.params()

    def __getattr__(self, name):
        return getattr(self._kernel, name)

    def get_profiler(self, *args, **kwargs):
        from tilec.profiler import Profiler

        return Profiler(self, *args, **kwargs)

    def __call__(self, *args, **kwargs):
        import torch

        from tilec.kernel import bind_dim, dim_value, split_dim

        kwargs.pop("stream", None)
        inputs = [p for p in self._params if not p["is_output"]]
        outputs = [p for p in self._params if p["is_output"]]
        if len(args) not in (len(inputs), len(self._params)):
            from tilec.kernel import KernelArgumentError

            raise KernelArgumentError(f"kernel {self._kernel.signature} takes {len(inputs)} inputs "
                                      f"(or all {len(self._params)} arguments), got {len(args)}")
        symbols = {}
        given = self._params if len(args) == len(self._params) else inputs
        for p, a in zip(given, args):
            if p["kind"] == "tensor" and hasattr(a, "shape"):
                if len(a.shape) != len(p["shape"]):
                    from tilec.kernel import KernelArgumentError

                    raise KernelArgumentError(f"argument '{p['name']}' of {self._kernel.signature} has rank "
                                              f"{len(a.shape)}, expected {len(p['shape'])}")
                dims = list(a.shape)
                if dims and getattr(torch, "float4_e2m1fn_x2", None) is not None and \
                        a.dtype == torch.float4_e2m1fn_x2:
                    dims[-1] *= 2  # two float4_e2m1 elements a byte
                for d, n in zip(p["shape"], dims):
                    bind_dim(symbols, d, n)
        if len(args) == len(self._params):
            return None
        from tilec.profiler import _torch_dtype

        made = []
        for p in outputs:
            shape = [dim_value(d, symbols) if not isinstance(d, str) or split_dim(d)[1] in symbols else 1
                     for d in p["shape"]]
            if p["dtype"] == "float4_e2m1":  # torch's packed float4_e2m1fn_x2: last dim halved
                packed = torch.zeros(shape[:-1] + [shape[-1] // 2], dtype=torch.uint8)
                made.append(packed.view(torch.float4_e2m1fn_x2))
                continue
            made.append(torch.zeros(shape, dtype=_torch_dtype(p["dtype"])))
        if not made:
            return None
        return made[0] if len(made) == 1 else made


def _install_tilec_hooks():
    import tilec.kernel
    import tilec.profiler

    jit_module = sys.modules["tilec.jit"]  # `tilec.jit` the attribute is the decorator
    real_normalize = jit_module.normalize_target

    def normalize_target(target):
        t = real_normalize(target)
        return TARGET if t in ("auto", "cuda") else t

    jit_module.normalize_target = normalize_target
    real_compile = tilec.kernel.compile_prim_func

    def compile_prim_func(*args, **kwargs):
        try:
            kernel = real_compile(*args, **kwargs)
        except Exception:
            _state["compile_errors"] += 1
            raise
        _state["kernels"] += 1
        return InterceptedKernel(kernel)

    tilec.kernel.compile_prim_func = compile_prim_func
    import tilec.frontend.eager
    import tilec.frontend.function

    real_finish = tilec.frontend.function.finish_outputs

    def finish_outputs(*args, **kwargs):  # one tile function built (T.prim_func or eager)
        _state["functions"] += 1
        return real_finish(*args, **kwargs)

    tilec.frontend.function.finish_outputs = finish_outputs
    tilec.frontend.eager.finish_outputs = finish_outputs
    # A function tilec refused counts as built when the program goes on (it catches the error,
    # e.g. upstream's autodd example prints it).
    import tilec.errors

    real_error_init = tilec.errors.CompileError.__init__

    def compile_error_init(self, *args, **kwargs):
        _state["functions"] += 1
        real_error_init(self, *args, **kwargs)

    tilec.errors.CompileError.__init__ = compile_error_init

    def do_bench(fn, *args, **kwargs):
        fn()
        return 1.0

    tilec.profiler.do_bench = do_bench
    tilec.profiler.Profiler.assert_allclose = lambda self, *a, **k: self.run_once()
    import tilec.testing

    tilec.testing.torch_assert_close = lambda *a, **k: None
    tilec.testing.assert_allclose = lambda *a, **k: None
    import tilec.autotuner

    tilec.autotuner.gpu_available = lambda: False


# ------------------------------------------------------------------------------ running


def _classify(exc: BaseException, tb) -> str:
    from tilec.errors import CompileError, InternalError

    if isinstance(exc, (CompileError, InternalError)):
        return "tilec"
    if isinstance(exc, ModuleNotFoundError):
        name = (exc.name or "").split(".")[0]
        return "tilec" if name in ("tilelang", "tilec", "tvm") else "package"
    frames = traceback.extract_tb(tb)
    tilec_dir = os.path.join(ROOT, "python", "tilec")
    if frames and frames[-1].filename.startswith(tilec_dir) and not isinstance(exc, AssertionError):
        return "tilec"
    text = str(exc)
    if isinstance(exc, (AttributeError, ImportError)) and ("tilelang" in text or "tilec" in text or "tvm" in text):
        return "tilec"
    if isinstance(exc, (NotImplementedError,)):
        return "tilec"
    if type(exc).__name__ == "KernelArgumentError":
        return "tilec"
    return "program"


def _first_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    head = lines[0] if lines else type(exc).__name__
    for ln in lines[1:]:
        if ln.lstrip().startswith("hint:"):
            break
    return head[:300]


def main() -> int:
    result_path, program, *argv = sys.argv[1:]
    start = time.time()
    result = {"status": "pass", "kernels": 0, "error": "", "error_kind": ""}
    import logging

    logging.disable(logging.WARNING)
    try:
        import torch

        _install_fake_cuda(torch)
        _neutralise_checks(torch)
        _install_tilec_hooks()
        from tilec.run import run_program

        run_program(program, argv)
    except SystemExit as e:
        if e.code not in (0, None):
            result.update(status="fail", error=f"SystemExit({e.code})", error_kind="program")
    except BaseException as e:  # noqa: BLE001 - every failure is reported
        kind = _classify(e, e.__traceback__)
        result.update(status="fail", error=_first_line(e), error_kind=kind)
        result["traceback"] = "".join(traceback.format_exception(type(e), e, e.__traceback__))[-4000:]
    result["kernels"] = _state["kernels"]
    result["functions"] = _state["functions"]
    result["seconds"] = round(time.time() - start, 1)
    with open(result_path, "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
