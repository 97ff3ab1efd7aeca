"""`tvm.tirx` / `tvm.tir` names used by TileLang programs, mapped onto tilec's IR."""

from __future__ import annotations

from typing import Any

from .. import _tilec
from ..frontend import context

PrimExpr = _tilec.Expr
Var = _tilec.Var
Buffer = _tilec.Buffer


class DataType:
    """`tvm.DataType("float16")`: a dtype with .bits, .lanes, .type_code-like queries."""

    def __init__(self, dtype: Any):
        from ..language.dtypes import dtype_str

        self._dt = _tilec.DataType(dtype_str(dtype))

    bits = property(lambda self: self._dt.bits)
    lanes = property(lambda self: self._dt.lanes)

    def is_float(self) -> bool:
        return self._dt.is_float()

    def __str__(self) -> str:
        return str(self._dt)

    def __repr__(self) -> str:
        return f"DataType({str(self._dt)!r})"

    def __eq__(self, other: Any) -> bool:
        return str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))


def const(value: Any, dtype: Any = None):
    """An immediate of `dtype` (int32 / float32 by the Python type when not given)."""
    from ..language.dtypes import DType, dtype_str

    if dtype is None:
        dtype = "bool" if isinstance(value, bool) else "int32" if isinstance(value, int) else "float32"
    return DType(dtype_str(dtype))(value)


def reinterpret(dtype: Any, value: Any):
    from ..language.bitcast import reinterpret as t_reinterpret

    return t_reinterpret(value, dtype)


def Cast(dtype: Any, value: Any):  # noqa: N802 - the TVM name
    from ..language.dtypes import dtype_str
    from ..frontend.values import to_expr

    return _tilec.cast(dtype_str(dtype), to_expr(value), context.loc())


def __getattr__(name: str):
    raise AttributeError(f"tvm.tirx.{name} is not available in tilec (not built on TVM); use the T. primitives "
                         "(docs/LANGUAGE.md)")
