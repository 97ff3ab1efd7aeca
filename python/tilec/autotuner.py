"""`tilelang.autotuner`: pick the best of several configurations of a kernel.

    @tilec.autotune(configs=[{"block_M": 64}, {"block_M": 128}], warmup=10, rep=50)
    @tilec.jit(out_idx=[-1])
    def matmul(M, N, K, block_M=None): ...

    kernel = matmul(1024, 1024, 1024)              # tunes block_M, returns the best kernel
    kernel = matmul(1024, 1024, 1024, block_M=64)  # given: no tuning, a plain jit call

and the object form `AutoTuner.from_kernel(fn, configs).set_compile_args(...)
.set_profile_args(...).run()` -> `AutotuneResult(config, kernel, latency, ...)`.

What a run does (tilec.autotune_engine): every configuration's program is built, then all
are compiled in parallel on every core (a progress bar with tqdm when installed); one that does
not compile, or that spills registers, is skipped with the reason logged. With a CUDA GPU, each
compiled kernel is checked against `ref_prog` when one is given, else against the first
configuration's outputs (a mismatch drops the configuration), and timed with
`do_bench(warmup, rep)`; the fastest wins, and is remembered on disk (keyed by the program's
source, its arguments' shapes and dtypes, the configurations, the GPU and tilec's version) so
that the next process compiles only the winner. `measure_fn=lambda kernel, config: ms` replaces
the GPU timing (a custom benchmark). Without a GPU nothing can be timed: the first configuration
that compiles wins, and the log says so. `timeout` (seconds, per configuration): a configuration
whose check and timing take longer is skipped, with the reason logged. Results are also kept per
call arguments for the life of the process.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
from dataclasses import dataclass
from typing import Any, Callable, Optional

from . import autotune_engine as engine

__all__ = ["autotune", "AutoTuner", "AutotuneResult", "set_autotune_inputs", "get_autotune_inputs"]

_log = logging.getLogger("tilec.autotuner")
_PASS_CONFIGS_KEY = "pass_configs"
_autotune_inputs: list = []


@contextlib.contextmanager
def set_autotune_inputs(*tensors: Any):
    """`with set_autotune_inputs(a, b):` — tune on these inputs instead of random ones."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    _autotune_inputs.append(list(tensors))
    try:
        yield
    finally:
        _autotune_inputs.pop()


def get_autotune_inputs() -> Optional[list]:
    return _autotune_inputs[-1] if _autotune_inputs else None


@dataclass
class AutotuneResult:
    latency: Optional[float] = None
    config: Optional[dict] = None
    ref_latency: Optional[float] = None
    libcode: Optional[str] = None
    func: Any = None
    kernel: Any = None
    tried: int = 0
    compiled: int = 0
    cached: bool = False     # the winner came from the disk cache (nothing else compiled or timed)
    compile_s: float = 0.0   # wall time of the parallel compile
    bench_s: float = 0.0     # wall time of checking and timing


def gpu_available() -> bool:
    """True when kernels can be launched and timed here (torch with CUDA and a driver)."""
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        try:
            import torch  # noqa: F401
        except ImportError:
            return False
    from . import _tilec

    return bool(torch.cuda.is_available()) and bool(_tilec.driver_available()[0])  # (ok, why)


@dataclass
class _ProfileArgs:
    warmup: float = 25
    rep: float = 100
    timeout: float = 100
    supply_type: Any = None
    ref_prog: Optional[Callable] = None
    supply_prog: Optional[Callable] = None
    rtol: float = 1e-2
    atol: float = 1e-2
    max_mismatched_ratio: float = 0.01
    skip_check: bool = False
    manual_check_prog: Optional[Callable] = None
    cache_input_tensors: bool = False
    backend: str = "event"
    measure_fn: Optional[Callable] = None  # (kernel, config) -> ms: replaces the GPU timing


def _split_pass_configs(config: dict) -> tuple:
    config = dict(config)
    return config, config.pop(_PASS_CONFIGS_KEY, None)


def _profile_measure(profile: _ProfileArgs, run_args: Optional[Callable] = None) -> Optional[Callable]:
    """A function timing one compiled kernel, or None when there is no GPU (nor measure_fn)."""
    if profile.measure_fn is not None:
        return lambda kernel, config, reference: profile.measure_fn(kernel, config)
    if not gpu_available():
        return None

    def measure(kernel, config, reference):
        from .profiler import TensorSupplyType

        supply = profile.supply_type if profile.supply_type is not None else TensorSupplyType.Auto
        profiler = kernel.get_profiler(tensor_supply_type=supply)
        given = run_args(config) if run_args is not None else get_autotune_inputs()
        if profile.supply_prog is not None and given is None:  # TileLang passes the input parameters
            given = list(profile.supply_prog(profiler._get_params()))
        ref_prog = profile.ref_prog
        kernel_inputs = run_args is None or given is None  # not an eager call's own arguments
        if ref_prog is None and kernel_inputs and reference is not None and reference is not kernel:
            ref_prog = reference  # the first configuration's outputs on the same inputs
        if ref_prog is not None and not profile.skip_check:
            profiler.assert_allclose(ref_prog, input_tensors=given, rtol=profile.rtol, atol=profile.atol,
                                     max_mismatched_ratio=profile.max_mismatched_ratio)
            engine.check_deadline("the check")  # a slow kernel: no timing run past `timeout`
        if given is not None and run_args is not None:
            return profiler.do_bench(lambda *_: kernel(*given), warmup=profile.warmup, rep=profile.rep,
                                     input_tensors=[])
        return profiler.do_bench(warmup=profile.warmup, rep=profile.rep, input_tensors=given)

    return measure


class AutoTuner:
    """The object form: `AutoTuner.from_kernel(fn, configs)...run()`; fn(**config) returns a PrimFunc."""

    def __init__(self, fn: Callable, configs: Any):
        self.fn = fn
        self.configs = configs
        self.compile_args: dict = {}
        self.profile = _ProfileArgs()

    @classmethod
    def from_kernel(cls, kernel: Callable, configs: Any) -> "AutoTuner":
        return cls(kernel, configs)

    def set_compile_args(self, out_idx: Any = None, target: Any = "auto", execution_backend: Any = None,
                         target_host: Any = None, verbose: Any = False, pass_configs: Optional[dict] = None,
                         **unused: Any) -> "AutoTuner":
        self.compile_args = dict(out_idx=out_idx, target=target, pass_configs=pass_configs)
        return self

    def set_profile_args(self, warmup: float = 25, rep: float = 100, timeout: float = 30, supply_type: Any = None,
                         ref_prog: Optional[Callable] = None, supply_prog: Optional[Callable] = None,
                         rtol: float = 1e-2, atol: float = 1e-2, max_mismatched_ratio: float = 0.01,
                         skip_check: bool = False, manual_check_prog: Optional[Callable] = None,
                         cache_input_tensors: bool = False, backend: str = "event",
                         measure_fn: Optional[Callable] = None, **unused: Any) -> "AutoTuner":
        self.profile = _ProfileArgs(warmup, rep, timeout, supply_type, ref_prog, supply_prog, rtol, atol,
                                    max_mismatched_ratio, skip_check, manual_check_prog, cache_input_tensors, backend,
                                    measure_fn)
        return self

    def run(self, warmup: Optional[float] = None, rep: Optional[float] = None, timeout: Optional[float] = None,
            **unused: Any) -> AutotuneResult:
        from .jit import JITImpl, compile

        if warmup is not None:
            self.profile.warmup = warmup
        if rep is not None:
            self.profile.rep = rep
        if timeout is not None:
            self.profile.timeout = timeout
        configs = self.configs() if callable(self.configs) else list(self.configs)

        def prepare_one(config):
            kwargs, config_pass_configs = _split_pass_configs(config)
            if isinstance(self.fn, JITImpl):
                return self.fn.prepare_compile(pass_configs=config_pass_configs, **kwargs)
            args = dict(self.compile_args)
            if config_pass_configs:
                args["pass_configs"] = {**(args.get("pass_configs") or {}), **config_pass_configs}
            func = self.fn(**kwargs)
            return lambda: compile(func, **args)

        what = getattr(self.fn, "__name__", "kernel")
        key = _tuning_key(self.fn, (), {}, configs, self.compile_args.get("target", "auto"))
        result = engine.select(configs, prepare_one, _profile_measure(self.profile), what, cache_key=key,
                               timeout=self.profile.timeout)
        result.libcode = result.kernel.get_kernel_source()
        return result

    __call__ = run


def _eager_run_args(jit_impl: Any, args: tuple, kwargs: dict) -> Callable:
    """config -> the kernel's arguments for timing an eager-JIT configuration: the tensors of
    `with set_autotune_inputs(...)` when given (TileLang's way to tune `f.compile(n=...)`, a call
    without tensors), else the call's own arguments; None for a call that gives none of the
    tensors (`f.compile(M=..., N=...)`): the profiler then makes inputs from the compiled kernel's
    parameters, as for a lazy kernel (upstream's gemv example tunes such a call)."""
    def run_args(config):
        supplied = get_autotune_inputs()
        if supplied is not None:
            return list(supplied)
        _, runtime, _, _ = jit_impl._eager.cache_key(args, {**config, **kwargs})
        if not any(name in runtime for name in jit_impl._eager.runtime_params):
            return None
        return jit_impl._eager.runtime_args(runtime)

    return run_args


def _tuning_key(fn: Any, args: tuple, kwargs: dict, configs: list, target: Any) -> Optional[str]:
    """What the winner depends on: the program's source, the call's arguments (tensors by shape
    and dtype), the configurations, the GPU (or target) and tilec's version. None when the
    program's source cannot be read (nothing is cached then)."""
    from . import __version__

    func = getattr(fn, "func", fn)
    try:
        source = inspect.getsource(func)
    except (OSError, TypeError):
        return None
    device = str(target)
    if gpu_available():
        import torch

        device = torch.cuda.get_device_name()
    supplied = tuple(_key_part(t) for t in (get_autotune_inputs() or ()))  # set_autotune_inputs' shapes
    parts = [__version__, getattr(func, "__qualname__", "?"), source, repr(tuple(_key_part(a) for a in args)),
             repr(sorted((k, repr(_key_part(v))) for k, v in kwargs.items())), repr(configs), device, repr(supplied)]
    return "\n".join(parts)


def _key_part(v: Any) -> Any:
    """A call argument as part of the tuning cache key: tensors by shape and dtype."""
    if hasattr(v, "shape") and hasattr(v, "dtype") and not isinstance(v, type):
        return ("tensor", tuple(int(d) for d in v.shape), str(v.dtype))
    return v


class AutoTuneImpl:
    """What `@autotune(configs=...)` over `@jit` returns."""

    def __init__(self, jit_impl: Any, configs: Any, profile: _ProfileArgs):
        self.jit_impl = jit_impl
        self.configs = configs
        self.profile = profile
        self._cache: dict = {}
        self.__name__ = getattr(jit_impl, "__name__", "kernel")
        self.__doc__ = getattr(jit_impl, "__doc__", None)

    def _configs_for(self, args: tuple, kwargs: dict) -> list:
        configs = self.configs(*args, **kwargs) if callable(self.configs) else self.configs
        return [dict(c) for c in configs]

    def _given(self, args: tuple, kwargs: dict) -> set:
        params = list(inspect.signature(self.jit_impl.func).parameters)
        return set(params[: len(args)]) | set(kwargs)

    def _tune(self, args: tuple, kwargs: dict):
        from .jit import _cache_key

        supplied = tuple(_key_part(t) for t in (get_autotune_inputs() or ()))
        key = _cache_key(tuple(_key_part(a) for a in args) + (("autotune_inputs",) + supplied,),
                         {k: _key_part(v) for k, v in kwargs.items()})
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        configs = self._configs_for(args, kwargs)
        given = self._given(args, kwargs)
        tunable = {k for c in configs for k in c if k != _PASS_CONFIGS_KEY}
        if configs and tunable <= given:  # every tuned parameter given: a plain jit call
            result = (self.jit_impl.compile(*args, **kwargs), None)
            self._cache[key] = result
            return result

        def prepare_one(config):
            merged, config_pass_configs = _split_pass_configs(config)
            return self.jit_impl.prepare_compile(*args, pass_configs=config_pass_configs, **{**merged, **kwargs})

        run_args = _eager_run_args(self.jit_impl, args, kwargs) if self.jit_impl.mode == "eager" else None

        chosen = engine.select(configs, prepare_one, _profile_measure(self.profile, run_args), self.__name__,
                               cache_key=_tuning_key(self.jit_impl.func, args, kwargs, configs, self.jit_impl.target),
                               timeout=self.profile.timeout)
        result = (chosen.kernel, chosen.config)
        # As TileLang's tuned kernels: the example scripts read .config, .latency and .ref_latency.
        for name in ("config", "latency", "ref_latency"):
            setattr(chosen.kernel, name, getattr(chosen, name))
        self._cache[key] = result
        return result

    def __call__(self, *args: Any, **kwargs: Any):
        kernel, config = self._tune(args, kwargs)
        if self.jit_impl.mode == "lazy":
            return kernel
        merged = {**(config or {}), **kwargs}
        merged.pop(_PASS_CONFIGS_KEY, None)
        _, runtime, _, _ = self.jit_impl._eager.cache_key(args, merged)
        return kernel(*self.jit_impl._eager.runtime_args(runtime))

    def compile(self, *args: Any, **kwargs: Any):
        return self._tune(args, kwargs)[0]

    def get_tir(self, *args: Any, **kwargs: Any):
        return self.jit_impl.get_tir(*args, **kwargs)


def autotune(func: Any = None, *, configs: Any, warmup: float = 25, rep: float = 100, timeout: float = 100,
             supply_type: Any = None, ref_prog: Optional[Callable] = None, supply_prog: Optional[Callable] = None,
             rtol: float = 1e-2, atol: float = 1e-2, max_mismatched_ratio: float = 0.01, skip_check: bool = False,
             manual_check_prog: Optional[Callable] = None, cache_input_tensors: bool = False,
             do_not_specialize: Any = None, early_stop: bool = False, early_stop_factor: float = 2.0,
             measure_fn: Optional[Callable] = None):
    """`@autotune(configs=[...])` above `@jit(...)`; see the module docstring."""
    profile = _ProfileArgs(warmup, rep, timeout, supply_type, ref_prog, supply_prog, rtol, atol,
                           max_mismatched_ratio, skip_check, manual_check_prog, cache_input_tensors,
                           measure_fn=measure_fn)

    def decorate(f):
        from .jit import JITImpl, jit

        impl = f if isinstance(f, JITImpl) else jit(f)
        return AutoTuneImpl(impl, configs, profile)

    return decorate(func) if func is not None else decorate

