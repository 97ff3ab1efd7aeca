"""Layouts for `T.annotate_layout` (TileLang's `tilelang.layout`): hand-written `Layout` /
`Fragment`, and swizzled shared-memory layouts computed by the C++ layout library."""

from __future__ import annotations

from typing import Any, Optional

from . import _tilec
from .errors import CompileError
from .language.layout import Fragment, Layout

__all__ = ["Layout", "Fragment", "make_swizzled_layout", "make_full_bank_swizzled_layout",
           "make_half_bank_swizzled_layout", "make_quarter_bank_swizzled_layout", "make_linear_layout"]


def _static_shape(buffer: Any) -> list:
    if not isinstance(buffer, _tilec.Buffer):
        raise CompileError(f"a swizzled layout is made for a buffer, got a {type(buffer).__name__}")
    shape = []
    for e in buffer.shape:
        v = e.as_int()
        if v is None:
            raise CompileError(f"buffer '{buffer.name}' has a symbolic shape; swizzled layouts need constant extents")
        shape.append(v)
    return shape


def _swizzled(buffer: Any, mode: Optional[str]) -> "_tilec.Layout":
    shape = _static_shape(buffer)
    if mode is None:
        mode = _tilec.widest_swizzle(shape, buffer.dtype)
    return _tilec.swizzled_layout(shape, buffer.dtype, mode)


def make_swizzled_layout(buffer: Any, k_major: bool = True, allow_pad: bool = True) -> "_tilec.Layout":
    """The widest swizzle (128B, 64B or 32B) that fits the buffer's tile, row-major otherwise."""
    if not k_major:
        raise CompileError("make_swizzled_layout(k_major=False) is not supported yet")
    return _swizzled(buffer, None)


def make_full_bank_swizzled_layout(buffer: Any) -> "_tilec.Layout":
    return _swizzled(buffer, "128B")


def make_half_bank_swizzled_layout(buffer: Any) -> "_tilec.Layout":
    return _swizzled(buffer, "64B")


def make_quarter_bank_swizzled_layout(buffer: Any) -> "_tilec.Layout":
    return _swizzled(buffer, "32B")


def make_linear_layout(buffer: Any) -> "_tilec.Layout":
    return _swizzled(buffer, "none")
