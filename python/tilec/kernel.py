"""The kernel object and its Python-side helpers.

``tilec.compile`` / ``@tilec.jit`` return a :class:`Kernel` (implemented in C++, see
python/src/bind_runtime.cc), with TileLang's object API::

    kernel = tilec.compile(func, out_idx=[-1], target="auto")
    c = kernel(a, b)                 # torch tensors in, outputs (per out_idx) out
    kernel.get_kernel_source()       # the CUDA C
    kernel.ptxas_info                # registers, spills, shared memory, raw report
    kernel.launch_plan_summary()     # grid / block / shared memory / signature
    kernel.get_profiler().assert_allclose(ref_fn); kernel.get_profiler().do_bench()

A call is C++ all the way to cuLaunchKernel: arguments are validated (count, dtype, rank,
shape with symbolic dimensions, strides, device, alignment; errors raise
:class:`KernelArgumentError`), outputs are allocated on the inputs' device (``at::empty`` through the
optional torch shim, else ``input.new_empty`` from an input of the output's dtype, else ``torch.empty``; an allocation that fails raises the allocator's error class, e.g.
``torch.OutOfMemoryError``, naming the kernel, the output and its size), and the kernel runs on
``torch.cuda.current_stream()`` of that device unless ``stream=`` is given. CUDA refusing the
launch raises :class:`KernelLaunchError` (a RuntimeError): no driver or GPU, or a fault, after
which the device's CUDA context is unusable (the message names the kernel launched last there). This module tells the C++ side about torch (lazily: torch is never
imported here unless the user imported it) and about CUDA libraries installed as pip
wheels. It does not need torch itself.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import threading
from typing import Any, Optional, Sequence

from . import _tilec, knobs
from .errors import emit_diagnostics, user_stacklevel

Kernel = _tilec.Kernel
KernelArgumentError = _tilec.KernelArgumentError
KernelLaunchError = _tilec.KernelLaunchError

__all__ = ["Kernel", "KernelArgumentError", "KernelLaunchError", "compile_cuda", "param_shapes", "compile_prim_func"]

# torch dtype attribute -> tilec dtype name. Missing attributes (older torch) are skipped.
_TORCH_DTYPES = (
    ("float16", "float16"), ("bfloat16", "bfloat16"), ("float32", "float32"), ("float64", "float64"),
    ("int8", "int8"), ("int16", "int16"), ("int32", "int32"), ("int64", "int64"),
    ("uint8", "uint8"), ("uint16", "uint16"), ("uint32", "uint32"), ("uint64", "uint64"),
    ("bool", "bool"), ("float8_e4m3fn", "float8_e4m3"), ("float8_e5m2", "float8_e5m2"),
    # Two float4_e2m1 a byte: a float4_e2m1 parameter of last dim 2n takes (and an output is
    # allocated as) float4_e2m1fn_x2 with last dim n (python/src/bind_runtime.cc).
    ("float4_e2m1fn_x2", "float4_e2m1x2"),
)


def _install_torch_hooks() -> None:
    """Registers torch.Tensor, its dtypes, torch.empty and the current-stream function
    with the C++ call path. Called by the extension on the first kernel call after torch
    has been imported."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    pairs = [(getattr(torch, t), name) for t, name in _TORCH_DTYPES if hasattr(torch, t)]
    raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw_stream is None:  # pragma: no cover - very old torch
        def raw_stream(device: int) -> int:
            return torch.cuda.current_stream(device).cuda_stream
    _tilec._set_torch_hooks(torch.Tensor, pairs, torch.empty, raw_stream)
    _load_torch_shim(torch)


# Why the torch shim is not in use ("" when it is; None before torch was seen).
TORCH_SHIM_STATUS: Optional[str] = None


def _load_torch_shim(torch: Any) -> None:
    """Loads libtilec_torch_shim (built beside the extension where torch was installed at build
    time: outputs allocated and the current stream read through libtorch, ~4 us less per call
    that allocates). Optional: without it, or when it was built against another torch, kernel
    calls use torch's Python API (TORCH_SHIM_STATUS says why). TILEC_TORCH_SHIM=0 turns it off."""
    global TORCH_SHIM_STATUS
    if not knobs.torch_shim_enabled():
        TORCH_SHIM_STATUS = "turned off by TILEC_TORCH_SHIM=0"
        return
    here = os.path.dirname(_tilec.__file__)
    for d in dict.fromkeys((here, os.path.dirname(os.path.realpath(_tilec.__file__)))):
        path = os.path.join(d, "libtilec_torch_shim.so")
        if os.path.exists(path):
            TORCH_SHIM_STATUS = _tilec._load_torch_shim(path, str(torch.__version__))
            return
    TORCH_SHIM_STATUS = "not built (tilec was built where torch did not import)"


def _register_pip_cuda_dirs() -> None:
    """Lets NVRTC be found in the pip wheels (nvidia-cuda-nvrtc, nvidia-cuda-runtime, or the
    combined CUDA 13 layout nvidia/cu13) when no toolkit is installed."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return
    if spec is None or not spec.submodule_search_locations:
        return
    lib_dirs, include_dirs = [], []
    for root in spec.submodule_search_locations:
        for sub in ("cu13", "cu12", "cuda_nvrtc", "cuda_runtime"):
            lib = os.path.join(root, sub, "lib")
            inc = os.path.join(root, sub, "include")
            if os.path.isdir(lib):
                lib_dirs.append(lib)
            if os.path.isdir(inc):
                include_dirs.append(inc)
    if lib_dirs or include_dirs:
        _tilec.add_cuda_search_dirs(lib_dirs, include_dirs)


_register_pip_cuda_dirs()
if "torch" in sys.modules:
    _install_torch_hooks()


def compile_prim_func(func: Any, out_idx: Optional[Sequence[int]] = None, target: str = "auto",
                      pass_configs: Optional[dict] = None, compiler: Optional[str] = None,
                      compile_flags: Any = None) -> Kernel:
    """Compiles a PrimFunc (cached in memory and on disk). `compiler`: "nvrtc" (default,
    or TILEC_COMPILER) or "nvcc"."""
    kernel = _tilec.compile(func, target=target, out_idx=out_idx, pass_configs=pass_configs,
                            compiler=compiler, compile_flags=compile_flags)
    emit_diagnostics(kernel._diagnostics)
    _warn_on_spills(kernel)
    return kernel


class PerformanceWarning(UserWarning):
    """A kernel compiled, but ptxas reports something that usually costs a lot of speed."""


class _SpillWarnings(threading.local):
    silenced = False


_spill_warnings = _SpillWarnings()


@contextlib.contextmanager
def spill_warnings_silenced():
    """In this thread, compiles do not warn about spills (the autotuner logs and skips spilling
    configurations itself; a warning per configuration would bury its output)."""
    before, _spill_warnings.silenced = _spill_warnings.silenced, True
    try:
        yield
    finally:
        _spill_warnings.silenced = before


def _warn_on_spills(kernel: Kernel) -> None:
    # Register spills turn a fast kernel into a slow one silently (e.g. a 128x256 GEMM tile
    # on 128 threads needs 256 accumulator registers per thread); say so once per compile.
    if _spill_warnings.silenced:
        return
    info = kernel.ptxas_info
    spilled = info.get("spill_stores_bytes", 0) + info.get("spill_loads_bytes", 0)
    if spilled > 0:
        import warnings

        warnings.warn(
            f"kernel '{kernel.kernel_name}' spills registers on {kernel.target} "
            f"({info.get('spill_stores_bytes', 0)} bytes stored, {info.get('spill_loads_bytes', 0)} bytes loaded, "
            f"{info.get('registers', '?')} registers): expect it to be slow; use more threads or smaller "
            "tiles per thread (e.g. for T.gemm, fewer accumulator elements per warp)",
            PerformanceWarning, stacklevel=user_stacklevel())


def compile_cuda(source: str, plan: str, target: str = "auto", out_idx: Optional[Sequence[int]] = None,
                 compiler: Optional[str] = None, compile_flags: Any = None, use_cache: bool = True,
                 cache_dir: Optional[str] = None) -> Kernel:
    """Compiles hand-written CUDA C with a launch plan in text form (the format is described
    in include/tilec/runtime/plan_text.h) to a Kernel, through the same caches."""
    return _tilec.compile_source(source, plan, target=target, out_idx=out_idx, compiler=compiler,
                                 compile_flags=compile_flags, use_cache=use_cache, cache_dir=cache_dir)


def split_dim(d: str) -> tuple:
    """(scale, symbol) of a symbolic dimension as Kernel.params() spells it: "n" or "32*n"
    (a tensor dimension declared as a constant times a T.dynamic variable)."""
    scale, _, name = d.rpartition("*")
    return (int(scale) if scale else 1), name


def bind_dim(symbols: dict, d: Any, size: int) -> None:
    """Records the symbol of dimension `d` from a tensor's `size` (first binding wins)."""
    if isinstance(d, str):
        scale, name = split_dim(d)
        symbols.setdefault(name, int(size) // scale)


def dim_value(d: Any, symbols: dict) -> int:
    """The size of dimension `d` given the symbols' values (KeyError: an unbound symbol)."""
    if not isinstance(d, str):
        return int(d)
    scale, name = split_dim(d)
    return scale * int(symbols[name])


def param_shapes(kernel: Kernel, symbols: Optional[dict] = None) -> list:
    """The shape of every tensor parameter (None for scalars), with symbolic dimensions
    taken from `symbols`. Raises KernelArgumentError naming a symbol without a value."""
    symbols = dict(symbols or {})
    shapes = []
    for p in kernel.params():
        if p["kind"] != "tensor":
            shapes.append(None)
            continue
        shape = []
        for d in p["shape"]:
            if isinstance(d, str):
                name = split_dim(d)[1]
                if name not in symbols:
                    raise KernelArgumentError(
                        f"parameter '{p['name']}' of kernel {kernel.signature} has the symbolic dimension '{d}'; "
                        f"give its value, e.g. symbols={{'{name}': 1024}}")
                shape.append(dim_value(d, symbols))
            else:
                shape.append(int(d))
        shapes.append(tuple(shape))
    return shapes


def _as_torch_op(self: Kernel, name: str, *, mutates: Sequence[str] = ()):
    """Registers this kernel as the torch custom operator `name` ("ns::op"): see tilec.torch_op."""
    from .torch_op import as_torch_op

    return as_torch_op(self, name, mutates=mutates)


Kernel.as_torch_op = _as_torch_op


def _explain(self: Kernel, show: bool = True) -> str:
    """What the compiler chose for each copy and gemm, and for each faster choice not made, the
    rule that ruled it out; then the launch, shared memory, registers and spills. Printed unless
    show=False; returned either way."""
    text = f"explain {self.signature} ({self.target}):\n" + self._explain() + self.launch_plan_summary()
    if show:
        print(text)
    return text


Kernel.explain = _explain


def _layouts(self: Kernel) -> list:
    """The layout of every fragment and shared buffer, as layout inference chose it for this
    kernel's target: one dict per buffer (name, scope, dtype, shape, the Layout, and per-element
    maps: thread / local for fragments, offset for shared buffers); see tilec.layout_plot."""
    from .layout_plot import kernel_layouts

    return kernel_layouts(self)


def _plot_layouts(self: Kernel, directory: str, buffers: Optional[Sequence[str]] = None) -> list:
    """Writes <directory>/<kernel>.<buffer>.png for every fragment (thread / register of each
    element) and shared buffer (offset and 4-byte bank of each element) and returns a
    description of each figure (path, title, panels, pixel size). Needs matplotlib."""
    from .layout_plot import plot_kernel_layouts

    return plot_kernel_layouts(self, directory, buffers)


Kernel.layouts = _layouts
Kernel.plot_layouts = _plot_layouts


def _export(self: Kernel, directory: str) -> list:
    """Ahead-of-time export for C++ (tilec/runtime/aot.h): writes <kernel>.tkc (the compiled
    artifact: cubin, launch plan) and <kernel>.h (a typed launch function in namespace
    tilec_aot) into `directory` (created if needed); returns their paths. A C++ program
    includes the header, links libtilec and launches without NVRTC or Python."""
    directory = os.path.abspath(directory)
    os.makedirs(directory, exist_ok=True)
    return list(self._export(directory))


Kernel.export = _export
