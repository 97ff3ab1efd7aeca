"""Checking and timing a kernel: ``kernel.get_profiler()``.

    profiler = kernel.get_profiler(symbols={"m": 4096})   # values for symbolic dimensions
    profiler.assert_allclose(ref_fn, rtol=1e-2, atol=1e-2)
    ms = profiler.do_bench()                               # median, CUDA events

``assert_allclose`` runs the kernel on fresh random inputs (never all zeros) with its
outputs poisoned (NaN for floating types, an unlikely sentinel for integers) and compares
them with ``ref_fn(*inputs)`` in float64. Elements left unwritten or non-finite where the
reference is finite always fail; other mismatches may be tolerated up to
``max_mismatched_ratio`` (TileLang's default, 1%).

``do_bench`` times with CUDA events around each call (L2 flushed in between by default,
as Triton does) and returns the median in milliseconds. ``warmup`` and ``rep`` are in
milliseconds, like TileLang's and Triton's.

torch is imported on first use, so importing this module needs no torch.
"""

from __future__ import annotations

import enum
from typing import Any, Callable, Optional, Sequence

from .kernel import KernelArgumentError, param_shapes

__all__ = ["Profiler", "TensorSupplyType", "do_bench"]


class TensorSupplyType(enum.Enum):
    """The distributions of TileLang's TensorSupplyType for floating types (an upstream
    example's tolerances were chosen for them): see ``_random_tensor``."""
    Auto = "auto"        # floats uniform in [-1, 1); float8 from the integers -128..127; small integers
    Normal = "normal"    # floats from N(mean=-1, std=1) (TileLang's normal_(-1.0, 1.0))
    Randn = "randn"      # floats from N(0, 1)
    Uniform = "uniform"  # floats in [-1, 1)
    Integer = "integer"  # small integers in [-2, 2] (exact in every float type)
    One = "one"
    Zero = "zero"        # only when asked for explicitly


def _torch():
    import torch  # noqa: PLC0415 - lazily, so CPU-only users need no torch
    return torch


def _torch_dtype(name: str):
    from .language.dtypes import as_torch  # noqa: PLC0415 - the one tilec -> torch name table

    return as_torch(name)


def _random_tensor(shape, dtype_name: str, supply: TensorSupplyType, device):
    """A tensor drawn as TileLang's tensor supply draws it: unsigned integers in [0, 2], booleans
    0/1, float8 from the int8 range, other integers in [-2, 2] (int8 under Normal / Uniform: ones),
    floats per ``supply`` (Auto: uniform in [-1, 1) for half, bfloat16 and float32)."""
    torch = _torch()
    S = TensorSupplyType
    dtype = _torch_dtype(dtype_name)
    if dtype_name == "float4_e2m1":  # packed two a byte: random codes, last dimension halved
        packed = list(shape[:-1]) + [shape[-1] // 2]
        if supply == S.Zero:
            return torch.zeros(packed, dtype=torch.uint8, device=device).view(dtype)
        return torch.randint(0, 256, packed, dtype=torch.uint8, device=device).view(dtype)
    if supply == S.Zero:
        return torch.zeros(shape, dtype=dtype, device=device)
    if supply == S.One:
        return torch.ones(shape, dtype=dtype, device=device)
    if dtype == torch.int8 and supply in (S.Normal, S.Uniform):
        return torch.ones(shape, dtype=dtype, device=device)
    is_float8 = dtype.is_floating_point and dtype.itemsize == 1
    picks_integers = supply == S.Integer or (supply == S.Auto and dtype not in (
        torch.float16, torch.bfloat16, torch.float32))
    if picks_integers or not dtype.is_floating_point:
        if dtype == torch.bool:
            return torch.randint(0, 2, shape, device=device).bool()
        if is_float8:
            return torch.randint(-128, 128, shape, dtype=torch.int8, device=device).to(dtype)
        if not dtype.is_floating_point and torch.iinfo(dtype).min == 0:
            return torch.randint(0, 3, shape, dtype=dtype, device=device)
        return torch.randint(-2, 3, shape, device=device).to(dtype)
    if supply in (S.Auto, S.Uniform):
        base = torch.empty(shape, device=device).uniform_(-1.0, 1.0)
    elif supply == S.Normal:
        base = torch.empty(shape, device=device).normal_(-1.0, 1.0)
    else:
        base = torch.randn(shape, device=device)
    return base.to(dtype)


def _poisoned(shape, dtype_name: str, device):
    torch = _torch()
    dtype = _torch_dtype(dtype_name)
    if dtype_name == "float4_e2m1":  # no NaN in fp4: -6 everywhere, packed two a byte
        return torch.full(list(shape[:-1]) + [shape[-1] // 2], 0xFF, dtype=torch.uint8, device=device).view(dtype)
    if dtype.is_floating_point:
        return torch.full(shape, float("nan"), dtype=torch.float32, device=device).to(dtype)
    if dtype == torch.bool:
        return torch.ones(shape, dtype=dtype, device=device)
    info = torch.iinfo(dtype)
    return torch.full(shape, info.max - 7 if info.max > 100 else info.max, dtype=dtype, device=device)


class KernelParam:
    """One kernel parameter for a supply program: name, shape (ints), torch dtype, kind."""

    __slots__ = ("name", "shape", "dtype", "kind")

    def __init__(self, name: str, shape: tuple, dtype: Any, kind: str):
        self.name, self.shape, self.dtype, self.kind = name, shape, dtype, kind

    def torch_dtype(self):
        return self.dtype

    def __repr__(self) -> str:
        return f"KernelParam({self.name}: {self.dtype}{list(self.shape)})"


class Profiler:
    """Created by ``kernel.get_profiler(...)``."""

    def __init__(self, kernel, tensor_supply_type: Any = TensorSupplyType.Auto, symbols: Optional[dict] = None,
                 scalars: Optional[dict] = None, device: Any = "cuda"):
        self.kernel = kernel
        self.supply = TensorSupplyType(tensor_supply_type.value if isinstance(tensor_supply_type, enum.Enum)
                                       else tensor_supply_type)
        self.symbols = dict(symbols or {})
        self.scalars = dict(scalars or {})
        self.device = device
        self.params = kernel.params()

    @property
    def func(self):
        """The kernel as a callable (TileLang's `profiler.func(*args)` runs the kernel)."""
        return self.kernel

    adapter = func

    def _get_inputs(self, with_output: bool = False) -> list:
        """TileLang's name for the generated input tensors (and outputs when asked)."""
        return self._inputs() + (self._outputs() if with_output else [])

    def _get_params(self, with_output: bool = False) -> list:
        """The kernel's parameters as TileLang's supply programs see them (`a.shape`, `a.dtype`):
        the inputs, in order, and the outputs too when asked."""
        shapes = param_shapes(self.kernel, self.symbols)
        return [KernelParam(p["name"], tuple(shape) if shape is not None else (), _torch_dtype(p["dtype"]), p["kind"])
                for p, shape in zip(self.params, shapes) if with_output or not p["is_output"]]

    # ------------------------------------------------------------------ arguments
    def _scalar_value(self, p):
        name = p["name"]
        if name in self.scalars:
            return self.scalars[name]
        if name in self.symbols:
            return self.symbols[name]
        raise KernelArgumentError(
            f"kernel {self.kernel.signature} has the scalar parameter '{name}'; give its value with "
            f"get_profiler(scalars={{'{name}': ...}})")

    def _inputs(self) -> list:
        shapes = param_shapes(self.kernel, self.symbols)
        return [self._scalar_value(p) if p["kind"] == "scalar" else
                _random_tensor(shape, p["dtype"], self.supply, self.device)
                for p, shape in zip(self.params, shapes) if not p["is_output"]]

    def _outputs(self) -> list:
        shapes = param_shapes(self.kernel, self.symbols)
        return [_poisoned(shape, p["dtype"], self.device) for p, shape in zip(self.params, shapes) if p["is_output"]]

    def _all_args(self, inputs: Sequence, outputs: Sequence) -> list:
        ins, outs = iter(inputs), iter(outputs)
        return [next(outs) if p["is_output"] else next(ins) for p in self.params]

    def _check_inputs(self, inputs: Sequence) -> list:
        expected = sum(1 for p in self.params if not p["is_output"])
        inputs = list(inputs)
        if len(inputs) != expected:
            raise KernelArgumentError(f"kernel {self.kernel.signature} takes {expected} inputs, "
                                      f"got {len(inputs)} input_tensors")
        return inputs

    # ------------------------------------------------------------------ checking
    def assert_allclose(self, reference_program: Callable, input_tensors: Optional[Sequence] = None,
                        atol: float = 1e-2, rtol: float = 1e-2, max_mismatched_ratio: float = 0.01) -> None:
        torch = _torch()
        inputs = self._check_inputs(input_tensors) if input_tensors is not None else self._inputs()
        outputs = self._outputs()
        if not outputs:
            raise KernelArgumentError(f"kernel {self.kernel.signature} has no outputs (out_idx) to compare")
        self.kernel(*self._all_args(inputs, outputs))
        torch.cuda.synchronize()
        refs = reference_program(*inputs)
        if not isinstance(refs, (list, tuple)):
            refs = [refs]
        if len(refs) != len(outputs):
            raise AssertionError(f"the reference returned {len(refs)} tensors, the kernel has {len(outputs)} outputs")
        names = [p["name"] for p in self.params if p["is_output"]]
        for name, out, ref in zip(names, outputs, refs):
            _compare(name, out, ref, atol, rtol, max_mismatched_ratio)

    # ------------------------------------------------------------------ timing
    def assert_consistent(self, repeat: int = 10) -> None:
        """Runs the kernel `repeat` times on the same inputs; the outputs must not change."""
        torch = _torch()
        inputs = self._inputs()
        first = [o.clone() for o in self._outputs()]
        self.kernel(*self._all_args(inputs, first))
        for _ in range(repeat):
            again = self._outputs()
            self.kernel(*self._all_args(inputs, again))
            for a, b in zip(first, again):
                if not torch.equal(a, b):
                    raise AssertionError("the kernel gives different results on the same inputs (a race?)")

    def run_once(self, func: Optional[Callable] = None):
        inputs = self._inputs()
        if func is None:
            return self.kernel(*self._all_args(inputs, self._outputs()))
        return func(*inputs)

    def do_bench(self, func: Optional[Callable] = None, warmup: float = 25, rep: float = 100,
                 n_warmup: int = 0, n_repeat: int = 0, input_tensors: Optional[Sequence] = None,
                 backend: str = "event", quantiles: Any = None, return_mode: str = "median",
                 dynamic_symbolic_constraints: Optional[dict] = None, device: Any = None,
                 early_stop_baseline: Any = None, flush_l2: bool = True) -> float:
        """Median time of one call in ms: of the kernel (outputs preallocated) when `func` is
        None, else of func(*inputs) on the same inputs (a peer such as torch). TileLang's other
        keywords are accepted; timing is always CUDA events around each call (`backend`
        "cupti"/"cudagraph" time the same way), and `dynamic_symbolic_constraints` gives
        values for symbolic sizes like `symbols=` of get_profiler."""
        if dynamic_symbolic_constraints:
            self.symbols.update(dynamic_symbolic_constraints)
        if func is not None and input_tensors is not None:
            inputs = list(input_tensors)  # func's own arguments (the kernel's signature does not apply)
        else:
            inputs = self._check_inputs(input_tensors) if input_tensors is not None else self._inputs()
        if func is None:
            args = self._all_args(inputs, self._outputs())
            kernel = self.kernel

            def call():
                kernel(*args)
        else:
            def call():
                func(*inputs)
        return do_bench(call, warmup=warmup, rep=rep, flush_l2=flush_l2)


def _compare(name: str, out, ref, atol: float, rtol: float, max_mismatched_ratio: float) -> None:
    torch = _torch()
    ref = torch.as_tensor(ref, device=out.device)
    if tuple(ref.shape) != tuple(out.shape):
        raise AssertionError(f"output '{name}': the reference has shape {tuple(ref.shape)}, "
                             f"the kernel's output {tuple(out.shape)}")
    got = out.double()
    want = ref.double()
    total = got.numel()
    unwritten = torch.isfinite(want) & ~torch.isfinite(got)
    close = (got - want).abs() <= atol + rtol * want.abs()
    close |= torch.isnan(want) & torch.isnan(got)
    close |= torch.isinf(want) & (got == want)
    bad = ~close
    n_unwritten = int(unwritten.sum())
    n_bad = int(bad.sum())
    if n_unwritten == 0 and n_bad <= max_mismatched_ratio * total:
        return
    diff = (got - want).abs()
    finite = torch.isfinite(diff)
    max_abs = float(diff[finite].max()) if bool(finite.any()) else float("nan")
    rel = diff / want.abs().clamp_min(1e-12)
    max_rel = float(rel[finite].max()) if bool(finite.any()) else float("nan")
    lines = [f"output '{name}' does not match the reference: {n_bad} of {total} elements differ "
             f"({100.0 * n_bad / max(total, 1):.3f}%, allowed {100.0 * max_mismatched_ratio:.3f}%), "
             f"max abs error {max_abs:.4g}, max rel error {max_rel:.4g} (atol={atol}, rtol={rtol})"]
    if n_unwritten:
        lines.append(f"{n_unwritten} elements are NaN/inf where the reference is finite "
                     "(left unwritten: the outputs were poisoned with NaN)")
    for idx in bad.nonzero()[:5].tolist():
        lines.append(f"  at {tuple(idx)}: got {float(got[tuple(idx)]):.6g}, expected {float(want[tuple(idx)]):.6g}")
    raise AssertionError("\n".join(lines))


def do_bench(fn: Callable, warmup: float = 25, rep: float = 100, _n_warmup: int = 0, _n_repeat: int = 0,
             quantiles: Any = None, fast_flush: bool = True, backend: str = "event", return_mode: str = "median",
             device: Any = None, cache_size: int = 256, early_stop_baseline: Any = None,
             flush_l2: bool = True) -> float:
    """Median time of fn() in ms, with CUDA events around each call (TileLang's signature;
    `backend` and `return_mode` are accepted, the result is always the median)."""
    torch = _torch()
    cache = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda") if flush_l2 else None
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        if cache is not None:
            cache.zero_()
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate = max(start.elapsed_time(end) / 5, 1e-3)
    n_warmup = max(1, int(warmup / estimate))
    n_repeat = min(max(1, int(rep / estimate)), 10000)
    for _ in range(n_warmup):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    for i in range(n_repeat):
        if cache is not None:
            cache.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
    return times[len(times) // 2] if len(times) % 2 else 0.5 * (times[len(times) // 2 - 1] + times[len(times) // 2])
