"""`T.reinterpret(value, dtype)`: the bits of a value read as another type of the same size
(TileLang's spelling; TVM's `reinterpret(dtype, value)` order is accepted too)."""

from __future__ import annotations

from typing import Any

from .. import _tilec
from ..errors import CompileError
from ..frontend import context
from ..frontend.values import is_ir, to_expr
from .dtypes import DType, dtype_str
from .ops import primitive


def _is_dtype(v: Any) -> bool:
    return isinstance(v, (DType, _tilec.DataType)) or (isinstance(v, str) and _tilec.DataType.parse(v) is not None)


@primitive
def reinterpret(value: Any, dtype: Any):
    if _is_dtype(value) and not _is_dtype(dtype) and not is_ir(value):  # reinterpret(dtype, value)
        value, dtype = dtype, value
    target = _tilec.DataType(dtype_str(dtype))
    e = to_expr(value)
    if e.dtype.bits * e.dtype.lanes != target.bits * target.lanes:
        raise CompileError(f"T.reinterpret from {e.dtype} ({e.dtype.bits * e.dtype.lanes} bits) to {target} "
                           f"({target.bits * target.lanes} bits): the sizes differ",
                           hint="reinterpret between types of one size (e.g. float32 <-> uint32); use T.cast to convert")
    if e.dtype == target:
        return e
    both_int = e.dtype.is_integer() and target.is_integer() and not e.dtype.is_bool() and not target.is_bool()
    if both_int and e.dtype.lanes == 1:  # same width: the conversion keeps the bits (two's complement)
        return _tilec.cast(target, e, context.loc())
    return _tilec.call(target, "tl.reinterpret", [e], context.loc())
