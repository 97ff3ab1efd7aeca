"""`@tilec.jit` and `tilec.compile`, with TileLang's object API.

Two styles, as in TileLang:

    @tilec.jit(out_idx=[-1])
    def matmul(M, N, K, block_M, block_N, block_K):      # a factory
        @T.prim_func
        def main(A: T.Tensor((M, K), "float16"), ...): ...
        return main

    kernel = matmul(1024, 1024, 1024, 128, 128, 32)      # compiles (cached by arguments)
    c = kernel(a, b)

    @tilec.jit(out_idx=[-1])
    @T.prim_func
    def add(A: T.Tensor((1024,), "float32"), ...): ...  # a decorated prim_func
    c = add(a, b)                                        # compiles once, then runs

    @tilec.jit
    def add(A, B, block=128):                           # eager: the function is the kernel
        N = T.const("N"); A: T.Tensor((N,), T.float32); ...; C = T.empty((N,), T.float32)
        ...
        return C
    c = add(a, b)                                        # compiles per shape, runs, returns C

`.get_tir(*args)` returns the PrimFunc without compiling, `.compile(*args)` compiles.
Eager functions are described in frontend/eager.py. Compilation itself is `_tilec.compile`
(the runtime bindings).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional, Sequence, Union

from . import _tilec
from .errors import CompileError
from .frontend.eager import EagerFunction, EagerSource
from .frontend.function import compile_options_from_attrs
from .transform import split_pass_configs

PrimFunc = _tilec.PrimFunc

_TARGET_KEYS = {"kind", "arch"}


def normalize_target(target: Any) -> str:
    """A target spec as the string C++ target parsing takes: "auto", "cuda", "sm_90a",
    "cuda -arch=sm_90a"; dicts such as {"kind": "cuda", "arch": "sm_90"} become strings.
    "cpu" (or {"kind": "cpu"}) is the tile-level CPU reference target (cpu_kernel.py)."""
    if target is None:
        return "auto"
    if isinstance(target, str):
        t = target.strip()
        if not t:
            raise CompileError("empty target", hint='use "auto", "cuda", "sm_90a" or "cuda -arch=sm_90a"')
        return t
    if isinstance(target, dict):
        unknown = set(target) - _TARGET_KEYS
        if unknown:
            raise CompileError(f"unsupported target key(s): {', '.join(sorted(unknown))}",
                               hint='a target dict has "kind" and optionally "arch", e.g. {"kind": "cuda", "arch": "sm_90a"}')
        kind = str(target.get("kind", "cuda"))
        arch = target.get("arch")
        if arch is None:
            return kind
        arch = str(arch)
        if arch.isdigit():
            arch = "sm_" + arch
        return f"{kind} -arch={arch}"
    raise CompileError(f"a target must be a string or a dict, got a {type(target).__name__}",
                       hint='use "auto", "cuda", "sm_90a", "cuda -arch=sm_90a" or {"kind": "cuda", "arch": "sm_90a"}')


def resolve_target(target: Any = "auto") -> str:
    """The architecture `target` compiles for, e.g. "sm_90a": "auto" and "cuda" name this machine's
    GPU (CompileError when there is none); "cpu" stays "cpu". Programs that choose tile sizes per
    architecture (tilec.ops' attention kernels) ask this before they are built."""
    spec = normalize_target(target)
    if spec == "cpu":
        return "cpu"
    return _tilec.resolve_target(spec)


def normalize_out_idx(out_idx: Union[None, int, Sequence[int]]) -> list:
    if out_idx is None:
        return []
    if isinstance(out_idx, int):
        return [out_idx]
    return [int(i) for i in out_idx]


def compile(func: Any, out_idx: Union[None, int, Sequence[int]] = None, target: Any = "auto",
            target_host: Any = None, execution_backend: Optional[str] = None, verbose: Optional[bool] = None,
            pass_configs: Optional[dict] = None, compile_flags: Any = None):
    """Compiles a PrimFunc to a kernel (calling it launches the kernel on torch tensors)."""
    __tracebackhide__ = True  # pytest and IPython leave this frame out of tracebacks
    if isinstance(func, JITImpl):
        return func.compile()
    if not isinstance(func, PrimFunc):
        raise TypeError(f"tilec.compile takes a T.prim_func, got a {type(func).__name__}")
    backend = getattr(_tilec, "compile", None)
    if backend is None:
        raise NotImplementedError("this build of tilec has no runtime: the _tilec.compile binding is missing")
    try:  # the runtime's Python side (torch hooks, CUDA search paths), when present
        from . import kernel as _kernel_module

        backend = getattr(_kernel_module, "compile_prim_func", backend)
    except ImportError:
        pass
    body_out_idx, body_configs, body_flags = compile_options_from_attrs(func)
    if body_out_idx is not None:
        if out_idx is not None and normalize_out_idx(out_idx) != body_out_idx:
            raise CompileError(f"out_idx={out_idx!r} conflicts with the outputs the function returns (T.empty)",
                               hint="drop out_idx: a function that returns T.empty tensors names its outputs")
        out_idx = body_out_idx
    configs = dict(body_configs)
    configs.update({_config_key(k): v for k, v in (pass_configs or {}).items()})
    if normalize_target(target) == "cpu":  # the tile-level interpreter (cpu_kernel.py)
        from .cpu_kernel import CpuKernel

        return CpuKernel(func, out_idx=normalize_out_idx(out_idx), pass_configs=configs)
    configs = split_pass_configs(configs)
    flags = list(body_flags)
    if compile_flags:
        flags += [compile_flags] if isinstance(compile_flags, str) else list(compile_flags)
    options = dict(target=normalize_target(target), out_idx=normalize_out_idx(out_idx), pass_configs=configs)
    if flags:
        options["compile_flags"] = flags
    try:
        from .jit_multi import compile_split, grid_scalars, lift_grid_scalars, needs_split

        lifted = grid_scalars(func)
        if lifted:  # a grid extent from a scalar parameter: a hidden workspace's length carries it
            func, workspaces, derived = lift_grid_scalars(func, lifted)
            return compile_split(func, backend, options, workspaces, derived)
        if needs_split(func):  # several T.Kernel blocks, or T.alloc_global workspaces
            return compile_split(func, backend, options)
        return backend(func, **options)
    except CompileError as e:
        raise e.with_traceback(None) from None


def _config_key(key: Any) -> str:
    """A pass-config key as a string: PassConfigKey members give their value."""
    return str(getattr(key, "value", key))


def _cache_key(args: tuple, kwargs: dict) -> Any:
    key = (args, tuple(sorted(kwargs.items())))
    try:
        hash(key)
        return key
    except TypeError:
        return repr(key)


class JITImpl:
    """What `@tilec.jit` returns; see the module docstring."""

    def __init__(self, func: Union[Callable, PrimFunc], out_idx=None, target: Any = "auto", target_host: Any = None,
                 execution_backend: Optional[str] = None, verbose: Optional[bool] = None,
                 pass_configs: Optional[dict] = None, debug_root_path: Optional[str] = None,
                 compile_flags: Any = None):
        self.func = func
        self.out_idx = out_idx
        self.target = target
        self.target_host = target_host
        self.execution_backend = execution_backend
        self.verbose = verbose
        self.pass_configs = pass_configs
        self.debug_root_path = debug_root_path
        self.compile_flags = compile_flags
        self._kernel_cache: dict = {}
        self._eager: Optional[EagerFunction] = None
        self._mode: Optional[str] = None
        if not isinstance(func, PrimFunc):
            functools.update_wrapper(self, func)

    @property
    def is_prim_func(self) -> bool:
        return isinstance(self.func, PrimFunc)

    @property
    def mode(self) -> str:
        """"eager" when the function is the kernel body, "lazy" when it returns a T.prim_func."""
        if self._mode is None:
            source = None if self.is_prim_func else EagerSource(self.func)
            if source is not None and source.is_eager:
                self._eager = EagerFunction(self.func, source)
                self._mode = "eager"
            else:
                self._mode = "lazy"
        return self._mode

    def get_tir(self, *args: Any, **kwargs: Any) -> PrimFunc:
        """The PrimFunc for these factory arguments, without compiling."""
        __tracebackhide__ = True  # pytest and IPython leave this frame out of tracebacks
        if self.is_prim_func:
            if args or kwargs:
                raise TypeError("a jit-decorated T.prim_func takes no factory arguments in get_tir()")
            return self.func
        if self.mode == "eager":
            try:
                return self._eager.prim_func(args, kwargs)
            except CompileError as e:
                raise e.with_traceback(None) from None
        try:
            tir = self.func(*args, **kwargs)
        except CompileError as e:
            raise e.with_traceback(None) from None
        if not isinstance(tir, PrimFunc):
            raise TypeError(f"the jit factory {getattr(self.func, '__name__', '?')} must return a T.prim_func, "
                            f"got a {type(tir).__name__}")
        return tir

    def compile(self, *args: Any, **kwargs: Any):
        if self.mode == "eager":
            return self._eager_kernel(args, kwargs)[0]
        return compile(self.get_tir(*args, **kwargs), out_idx=self.out_idx, target=self.target,
                       target_host=self.target_host, execution_backend=self.execution_backend, verbose=self.verbose,
                       pass_configs=self.pass_configs, compile_flags=self.compile_flags)

    def prepare_compile(self, *args: Any, pass_configs: Optional[dict] = None, **kwargs: Any):
        """Builds the program for these arguments here (the front end runs in the calling
        thread) and returns a thunk that compiles it (the C++ compile releases the GIL, so
        thunks may run on other threads: the autotuner's parallel compile). `pass_configs` are
        added to the jit's own."""
        configs = {**(self.pass_configs or {}), **(pass_configs or {})} or None
        options = dict(target=self.target, target_host=self.target_host, execution_backend=self.execution_backend,
                       verbose=self.verbose, pass_configs=configs, compile_flags=self.compile_flags)
        if self.mode == "eager":
            try:
                key, _, compile_args, consts = self._eager.cache_key(args, kwargs)
                key, options["pass_configs"] = _with_index_width(key, configs, args, kwargs)
                kernel = self._kernel_cache.get(key) if not pass_configs else None
                if kernel is not None:
                    return lambda: kernel
                _, func = self._eager.parse(compile_args, consts)
            except CompileError as e:
                raise e.with_traceback(None) from None

            def build_eager():
                k = compile(func, out_idx=None, **options)
                if not pass_configs:
                    self._kernel_cache[key] = k
                return k

            return build_eager
        func = self.get_tir(*args, **kwargs)
        return lambda: compile(func, out_idx=self.out_idx, **options)

    def par_compile(self, configs: Any, num_workers: Optional[int] = None, ignore_error: bool = False) -> list:
        """TileLang's `f.par_compile([{arg: value, ...}, ...])`: the kernels of these keyword
        argument sets, compiled on `num_workers` threads (default: every core); results in the
        input order, a failed one None with ignore_error (else its error is raised). The front
        end runs here, one set after another; the C++ compiles run in parallel. Placeholders for
        runtime parameters (`T.ptr()`, tensors) only need to be accepted: nothing is launched."""
        jobs = []
        for config in configs:
            try:
                jobs.append(self.prepare_compile(**dict(config)))
            except CompileError as e:
                jobs.append(e)
        return _compile_in_parallel(jobs, num_workers, ignore_error)

    def _kernel(self, args: tuple, kwargs: dict):
        key = _cache_key(args, kwargs)
        kernel = self._kernel_cache.get(key)
        if kernel is None:
            kernel = self.compile(*args, **kwargs)
            self._kernel_cache[key] = kernel
        return kernel

    def _eager_kernel(self, args: tuple, kwargs: dict):
        """(kernel, runtime arguments) of an eager call; compiles once per specialisation. A call
        with a tensor of 2^31 elements or more gets (and caches) the kernel with 64-bit offsets
        (tl.config_index_bitwidth = 64), as the symbolic sizes would overflow int32 offsets."""
        __tracebackhide__ = True  # pytest and IPython leave this frame out of tracebacks
        try:
            key, runtime, compile_args, consts = self._eager.cache_key(args, kwargs)
            key, configs = _with_index_width(key, self.pass_configs, args, kwargs)
            kernel = self._kernel_cache.get(key)
            if kernel is None:
                _, func = self._eager.parse(compile_args, consts)
                kernel = compile(func, out_idx=None, target=self.target, target_host=self.target_host,
                                 execution_backend=self.execution_backend, verbose=self.verbose,
                                 pass_configs=configs, compile_flags=self.compile_flags)
                self._kernel_cache[key] = kernel
        except CompileError as e:
            raise e.with_traceback(None) from None
        return kernel, runtime

    def __call__(self, *args: Any, **kwargs: Any):
        if self.is_prim_func:
            kernel = self._kernel((), {})
            return kernel(*args, **kwargs) if (args or kwargs) else kernel
        if self.mode == "eager":
            kernel, runtime = self._eager_kernel(args, kwargs)
            return kernel(*self._eager.runtime_args(runtime))
        return self._kernel(args, kwargs)

    def get_kernel_source(self, *args: Any, **kwargs: Any) -> str:
        if not self.is_prim_func and self.mode == "eager":
            return self.compile(*args, **kwargs).get_kernel_source()
        return self._kernel(args, kwargs).get_kernel_source()

    def __repr__(self) -> str:
        name = self.func.name if self.is_prim_func else getattr(self.func, "__name__", "?")
        return f"<tilec.jit {name}>"


_INT32_SPAN = 2**31 - 1


def _with_index_width(key: Any, configs: Optional[dict], args: tuple, kwargs: dict) -> tuple:
    """(cache key, pass configs) of an eager compile: a call with a tensor of 2^31 elements or
    more gets 64-bit offsets (tl.config_index_bitwidth = 64) and a key of its own, unless the
    configs set the width; the direct call and the autotuner's compiles both come here."""
    if _has_huge_tensor(args, kwargs) and "tl.config_index_bitwidth" not in (configs or {}):
        return (key, "index64"), {**(configs or {}), "tl.config_index_bitwidth": 64}
    return key, configs


def _has_huge_tensor(args: tuple, kwargs: dict) -> bool:
    """Some tensor argument (torch or numpy: anything with numel / size and a shape) has more
    elements than int32 offsets reach."""
    for a in list(args) + list(kwargs.values()):
        numel = getattr(a, "numel", None)
        n = numel() if callable(numel) else getattr(a, "size", None) if hasattr(a, "shape") else None
        if isinstance(n, int) and n > _INT32_SPAN:
            return True
    return False


def jit(func: Any = None, *, out_idx=None, target: Any = "auto", target_host: Any = None,
        execution_backend: Optional[str] = None, verbose: Optional[bool] = None, pass_configs: Optional[dict] = None,
        debug_root_path: Optional[str] = None, compile_flags: Any = None):
    """`@tilec.jit` / `@tilec.jit(out_idx=..., target=..., pass_configs=...)`."""
    options = dict(out_idx=out_idx, target=target, target_host=target_host, execution_backend=execution_backend,
                   verbose=verbose, pass_configs=pass_configs, debug_root_path=debug_root_path,
                   compile_flags=compile_flags)

    def decorate(f):
        return JITImpl(f, **options)

    return decorate(func) if func is not None else decorate


def par_compile(funcs: Any, out_idx=None, target: Any = "auto", target_host: Any = None,
                execution_backend: Optional[str] = None, verbose: Optional[bool] = None,
                pass_configs: Optional[dict] = None, compile_flags: Any = None, num_workers: Optional[int] = None,
                ignore_error: bool = False) -> list:
    """Compiles several PrimFuncs (TileLang's par_compile) on `num_workers` threads (default:
    every core; the C++ compile releases the GIL); results in the input order. A failed one is
    None with ignore_error, else its error is raised (the first in input order)."""
    jobs = [lambda f=f: compile(f, out_idx=out_idx, target=target, pass_configs=pass_configs,
                                compile_flags=compile_flags) for f in funcs]
    return _compile_in_parallel(jobs, num_workers, ignore_error)


def _compile_in_parallel(jobs: list, num_workers: Optional[int], ignore_error: bool) -> list:
    """Runs compile thunks on `num_workers` threads (default: every core; the C++ compile releases
    the GIL), after worker processes filled the disk cache with them where that helps
    (compile_workers.py); a job may instead be the CompileError its preparation raised. Kernels in input
    order; a failed one is None with ignore_error, else the first error in input order is raised."""
    import concurrent.futures
    import os

    def one(job):
        if isinstance(job, CompileError):
            return None, job
        try:
            return job(), None
        except CompileError as e:
            return None, e

    workers = max(1, min(num_workers or os.cpu_count() or 1, len(jobs) or 1))
    from .compile_workers import warm_disk_cache

    warm_disk_cache([job for job in jobs if not isinstance(job, CompileError)], workers)  # processes first
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tilec-compile") as pool:
        results = list(pool.map(one, jobs))
    for _, error in results:
        if error is not None and not ignore_error:
            raise error
    return [kernel for kernel, _ in results]
