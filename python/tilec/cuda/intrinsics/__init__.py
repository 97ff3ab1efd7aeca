"""`tilelang.cuda.intrinsics`: the swizzle helper for shared memory and `.sparse_layout` (the
2:4 sparsity facts). The macro generators (`.macro.*`) are left out (tilec._unsupported says so
on import)."""
from __future__ import annotations

from typing import Any

from ... import _tilec
from ..._unsupported import MACRO_HINT, install
from ...layout import _static_shape

install()


def make_mma_swizzle_layout(shared_buf: Any, is_smooth: bool = False) -> "_tilec.Layout":
    """A bank-conflict-avoiding layout for a shared buffer (TileLang's helper for hand-written
    MMA kernels): row-major when `is_smooth` or when a row is not a multiple of 64 bytes,
    otherwise the widest XOR swizzle that fits. A layout only places elements, so any choice
    leaves the program's results unchanged."""
    shape = _static_shape(shared_buf)
    bits = _tilec.DataType(str(shared_buf.dtype)).bits
    if is_smooth or len(shape) < 2 or (shape[-1] * bits) % 512 != 0:
        mode = "none"
    else:
        mode = _tilec.widest_swizzle(shape, shared_buf.dtype)
    return _tilec.swizzled_layout(shape, shared_buf.dtype, mode)


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotImplementedError(f"tilelang.cuda.intrinsics.{name}: {MACRO_HINT}")
