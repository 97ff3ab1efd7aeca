"""`tilelang.testing`: helpers upstream programs and tests use — seeding, tolerant comparisons,
and decorators that skip a test when the machine lacks what it needs (a CUDA GPU, a compute
capability, a Python package). torch, numpy and pytest are imported on first use."""

from __future__ import annotations

import functools
import importlib.util
import inspect
import random
import sys
from typing import Any, Callable

__all__ = [
    "main", "set_random_seed", "torch_assert_close", "assert_allclose", "requires_cuda", "requires_package",
    "requires_cuda_compute_version", "requires_cuda_compute_version_ge", "requires_cuda_compute_version_gt",
    "requires_cuda_compute_version_eq", "requires_cuda_compute_version_lt", "requires_cuda_compute_version_le",
    "requires_cdna", "requires_gfx950", "requires_cuda_or_cdna", "requires_rocm", "requires_llvm", "requires_metal",
    "process_func", "regression",
]


def main() -> None:
    """Runs the pytest tests of the calling file (`if __name__ == "__main__": tilelang.testing.main()`)."""
    import pytest

    caller = inspect.stack()[1].frame.f_globals.get("__file__", sys.argv[0])
    sys.exit(pytest.main([caller, *sys.argv[1:]]))


def set_random_seed(seed: int = 42) -> None:
    """Seeds Python's, numpy's and torch's generators (those that are installed)."""
    random.seed(seed)
    if importlib.util.find_spec("numpy") is not None:
        import numpy as np

        np.random.seed(seed)
    if importlib.util.find_spec("torch") is not None:
        import torch

        torch.manual_seed(seed)
        if torch.cuda.is_available():
            torch.cuda.manual_seed_all(seed)


def torch_assert_close(tensor_a, tensor_b, rtol: float = 1e-2, atol: float = 1e-3, max_mismatched_ratio: float = 0.001,
                       verbose: bool = False, equal_nan: bool = True, check_device: bool = True,
                       check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                       base_name: str = "LHS", compare_name: str = "RHS") -> None:
    """Like torch.testing.assert_close, but a small ratio of mismatched elements is tolerated."""
    import torch

    if check_device and tensor_a.device != tensor_b.device:
        raise AssertionError(f"device mismatch: {base_name} on {tensor_a.device}, {compare_name} on {tensor_b.device}")
    if check_dtype and tensor_a.dtype != tensor_b.dtype:
        raise AssertionError(f"dtype mismatch: {base_name} is {tensor_a.dtype}, {compare_name} is {tensor_b.dtype}")
    if tuple(tensor_a.shape) != tuple(tensor_b.shape):
        raise AssertionError(f"shape mismatch: {base_name} {tuple(tensor_a.shape)}, {compare_name} {tuple(tensor_b.shape)}")
    a, b = tensor_a.double(), tensor_b.double()
    close = torch.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    mismatched = int((~close).sum())
    total = a.numel()
    allowed = int(max_mismatched_ratio * total)
    if mismatched > allowed:
        diff = (a - b).abs()
        raise AssertionError(
            f"{base_name} and {compare_name} differ in {mismatched} of {total} elements "
            f"({100.0 * mismatched / max(total, 1):.4f}%, allowed {100.0 * max_mismatched_ratio:.4f}%); "
            f"max abs difference {float(diff[~close].max()):.6g} (rtol={rtol}, atol={atol})")
    if verbose:
        print(f"{base_name} and {compare_name} match: {mismatched} of {total} elements differ (allowed {allowed})")


assert_allclose = torch_assert_close


def _skip_unless(condition: Callable[[], bool], reason: str):
    def decorate(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            if not condition():
                import pytest

                pytest.skip(reason)
            return func(*args, **kwargs)

        return wrapper

    return decorate


def _cuda_capability():
    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    if not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_capability()


def requires_cuda(func=None):
    decorate = _skip_unless(lambda: _cuda_capability() is not None, "needs a CUDA GPU")
    return decorate(func) if func is not None else decorate


def requires_package(*names: str):
    missing = lambda: [n for n in names if importlib.util.find_spec(n) is None]  # noqa: E731
    return _skip_unless(lambda: not missing(), f"needs the package(s) {', '.join(names)}")


def _never(reason: str):
    def decorator(func=None):
        decorate = _skip_unless(lambda: False, reason)
        return decorate(func) if func is not None else decorate

    return decorator


requires_rocm = _never("tilec targets CUDA GPUs (no ROCm)")
requires_cdna = _never("tilec targets CUDA GPUs (no AMD CDNA)")
requires_gfx950 = _never("tilec targets CUDA GPUs (no AMD gfx950)")
requires_llvm = _never("tilec has no LLVM CPU target")
requires_metal = _never("tilec targets CUDA GPUs (no Metal)")
requires_cuda_or_cdna = requires_cuda

_COMPARE = {"ge": lambda a, b: a >= b, "gt": lambda a, b: a > b, "eq": lambda a, b: a == b,
            "lt": lambda a, b: a < b, "le": lambda a, b: a <= b}


def requires_cuda_compute_version(major_version: int, minor_version: int = 0, mode: str = "ge"):
    if mode not in _COMPARE:
        raise ValueError(f"mode must be one of {sorted(_COMPARE)}, got {mode!r}")
    want = (major_version, minor_version)

    def ok() -> bool:
        cap = _cuda_capability()
        return cap is not None and _COMPARE[mode](tuple(cap), want)

    return _skip_unless(ok, f"needs CUDA compute capability {mode} {major_version}.{minor_version}")


def requires_cuda_compute_version_ge(major_version: int, minor_version: int = 0):
    return requires_cuda_compute_version(major_version, minor_version, "ge")


def requires_cuda_compute_version_gt(major_version: int, minor_version: int = 0):
    return requires_cuda_compute_version(major_version, minor_version, "gt")


def requires_cuda_compute_version_eq(major_version: int, minor_version: int = 0):
    return requires_cuda_compute_version(major_version, minor_version, "eq")


def requires_cuda_compute_version_lt(major_version: int, minor_version: int = 0):
    return requires_cuda_compute_version(major_version, minor_version, "lt")


def requires_cuda_compute_version_le(major_version: int, minor_version: int = 0):
    return requires_cuda_compute_version(major_version, minor_version, "le")


def process_func(func: Callable, *args: Any, **kwargs: Any) -> Any:
    """Upstream's performance-regression hook: here it simply calls func."""
    return func(*args, **kwargs)


def regression(*args: Any, **kwargs: Any) -> None:
    """Upstream's performance-regression runner; tilec's benchmarks live in bench/."""
    raise NotImplementedError("tilelang.testing.regression is not part of tilec: run the benchmarks in bench/ "
                              "(see docs/PERFORMANCE.md)")
