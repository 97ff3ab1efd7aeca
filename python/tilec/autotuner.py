"""`tilelang.autotuner`: pick the best of several configurations of a kernel.

    @tilec.autotune(configs=[{"block_M": 64}, {"block_M": 128}], warmup=10, rep=50)
    @tilec.jit(out_idx=[-1])
    def matmul(M, N, K, block_M=None): ...

    kernel = matmul(1024, 1024, 1024)              # tunes block_M, returns the best kernel
    kernel = matmul(1024, 1024, 1024, block_M=64)  # given: no tuning, a plain jit call

and the object form `AutoTuner.from_kernel(fn, configs).set_compile_args(...)
.set_profile_args(...).run()` -> `AutotuneResult(config, kernel, latency, ...)`.

What a run does: every configuration is compiled (a configuration that does not compile is
skipped, with its error logged). With a CUDA GPU, each compiled kernel is checked against
`ref_prog` when one is given (a mismatch drops the configuration) and timed with
`do_bench(warmup, rep)`; the fastest wins. Without a GPU nothing can be timed: the first
configuration that compiles wins, and the log says so. Results are cached per call
arguments for the life of the process.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from .errors import CompileError

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

    return bool(torch.cuda.is_available()) and bool(_tilec.driver_available())


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


def _split_pass_configs(config: dict) -> tuple:
    config = dict(config)
    return config, config.pop(_PASS_CONFIGS_KEY, None)


def _select(candidates: list, compile_one: Callable, measure: Optional[Callable], what: str) -> AutotuneResult:
    """Compiles every candidate config; with `measure`, times them and keeps the fastest."""
    result = AutotuneResult(tried=len(candidates))
    if not candidates:
        raise ValueError(f"autotune {what}: no configurations to try (configs is empty)")
    errors = []
    start = time.perf_counter()
    for config in candidates:
        try:
            kernel = compile_one(config)
        except (CompileError, ValueError, TypeError, NotImplementedError) as e:
            errors.append((config, e))
            _log.info("autotune %s: config %s does not compile: %s", what, config, str(e).splitlines()[0])
            continue
        result.compiled += 1
        if measure is None:
            _log.warning("autotune %s: no CUDA GPU to time kernels on; taking the first configuration that "
                         "compiles: %s (%d of %d tried)", what, config, len(errors) + 1, len(candidates))
            result.config, result.kernel = config, kernel
            result.latency = float("nan")  # not measured
            return result
        try:
            latency = measure(kernel, config)
        except AssertionError as e:
            _log.info("autotune %s: config %s gives wrong results: %s", what, config, str(e).splitlines()[0])
            continue
        if latency is not None and (result.latency is None or latency < result.latency):
            result.latency, result.config, result.kernel = latency, config, kernel
    if result.kernel is None:
        first = errors[0] if errors else None
        detail = f"; the first error ({first[0]}):\n{first[1]}" if first else ""
        raise CompileError(f"autotune {what}: none of the {len(candidates)} configurations compiled and "
                           f"passed its check{detail}")
    _log.info("autotune %s: best %s at %.4f ms (%d configurations, %.1f s)", what, result.config, result.latency,
              len(candidates), time.perf_counter() - start)
    return result


def _profile_measure(profile: _ProfileArgs, run_args: Optional[Callable] = None) -> Optional[Callable]:
    """A function timing one compiled kernel, or None when there is no GPU."""
    if not gpu_available():
        return None

    def measure(kernel, config):
        from .profiler import TensorSupplyType

        supply = profile.supply_type if profile.supply_type is not None else TensorSupplyType.Auto
        profiler = kernel.get_profiler(tensor_supply_type=supply)
        given = run_args(config) if run_args is not None else get_autotune_inputs()
        if profile.supply_prog is not None and given is None:
            given = list(profile.supply_prog(kernel.params()))
        if profile.ref_prog is not None and not profile.skip_check:
            profiler.assert_allclose(profile.ref_prog, input_tensors=given, rtol=profile.rtol, atol=profile.atol,
                                     max_mismatched_ratio=profile.max_mismatched_ratio)
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
                         cache_input_tensors: bool = False, backend: str = "event", **unused: Any) -> "AutoTuner":
        self.profile = _ProfileArgs(warmup, rep, timeout, supply_type, ref_prog, supply_prog, rtol, atol,
                                    max_mismatched_ratio, skip_check, manual_check_prog, cache_input_tensors, backend)
        return self

    def run(self, warmup: Optional[float] = None, rep: Optional[float] = None, timeout: Optional[float] = None,
            **unused: Any) -> AutotuneResult:
        from .jit import JITImpl, compile

        if warmup is not None:
            self.profile.warmup = warmup
        if rep is not None:
            self.profile.rep = rep
        configs = self.configs() if callable(self.configs) else list(self.configs)

        def compile_one(config):
            kwargs, config_pass_configs = _split_pass_configs(config)
            args = dict(self.compile_args)
            if config_pass_configs:
                args["pass_configs"] = {**(args.get("pass_configs") or {}), **config_pass_configs}
            if isinstance(self.fn, JITImpl):
                return self.fn.compile(**kwargs)
            return compile(self.fn(**kwargs), **args)

        result = _select(configs, compile_one, _profile_measure(self.profile), getattr(self.fn, "__name__", "kernel"))
        result.libcode = result.kernel.get_kernel_source()
        return result

    __call__ = run


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

        key = _cache_key(tuple(_key_part(a) for a in args), {k: _key_part(v) for k, v in kwargs.items()})
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

        def compile_one(config):
            merged, config_pass_configs = _split_pass_configs(config)
            merged = {**merged, **kwargs}
            if not config_pass_configs:
                return self.jit_impl.compile(*args, **merged)
            saved = self.jit_impl.pass_configs
            self.jit_impl.pass_configs = {**(saved or {}), **config_pass_configs}
            try:
                return self.jit_impl.compile(*args, **merged)
            finally:
                self.jit_impl.pass_configs = saved

        run_args = None
        if self.jit_impl.mode == "eager":
            def run_args(config):
                _, runtime, _, _ = self.jit_impl._eager.cache_key(args, {**config, **kwargs})
                return self.jit_impl._eager.runtime_args(runtime)

        chosen = _select(configs, compile_one, _profile_measure(self.profile, run_args), self.__name__)
        result = (chosen.kernel, chosen.config)
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
             do_not_specialize: Any = None, early_stop: bool = False, early_stop_factor: float = 2.0):
    """`@autotune(configs=[...])` above `@jit(...)`; see the module docstring."""
    profile = _ProfileArgs(warmup, rep, timeout, supply_type, ref_prog, supply_prog, rtol, atol,
                           max_mismatched_ratio, skip_check, manual_check_prog, cache_input_tensors)

    def decorate(f):
        from .jit import JITImpl, jit

        impl = f if isinstance(f, JITImpl) else jit(f)
        return AutoTuneImpl(impl, configs, profile)

    return decorate(func) if func is not None else decorate

