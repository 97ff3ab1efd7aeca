"""Data types as T names: ``T.float16``, ``T.bfloat16``, ``T.float8_e4m3``, ``T.int32``, ...

Each is a ``str`` subclass (so ``T.float16 == "float16"`` and it works wherever a dtype name
does) that is also callable: ``T.float32(0)`` is an immediate, ``T.float32("inf")`` too, and
``T.float16(x)`` on a kernel value is a cast. As a parameter annotation (``n: T.int32``) it
declares a scalar parameter.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from .. import _tilec
from ..errors import CompileError
from ..frontend import context
from ..frontend.values import is_ir, to_expr

_FLOAT_WORDS = {"inf": math.inf, "+inf": math.inf, "-inf": -math.inf, "nan": math.nan}


class DType(str):
    """A dtype name that can also make immediates and casts."""

    __slots__ = ()
    _tilec_primitive = True

    def __call__(self, value: Any) -> Any:
        loc = context.loc()
        dt = _tilec.DataType(str(self))
        if is_ir(value):
            return _tilec.cast(dt, to_expr(value), loc)
        if isinstance(value, str):
            word = value.strip().lower()
            if word not in _FLOAT_WORDS or not dt.is_float():
                raise CompileError(f"T.{self}({value!r}): expected a number", hint='strings accepted: "inf", "-inf", "nan" (float types)')
            return _tilec.float_imm(_FLOAT_WORDS[word], dt, loc)
        if dt.is_bool():
            return _tilec.bool_imm(bool(value), loc)
        if dt.is_float():
            return _tilec.float_imm(float(value), dt, loc)
        if isinstance(value, float) and not value.is_integer():
            raise CompileError(f"T.{self}({value}) loses the fraction", hint="use a float dtype or an integer value")
        if not isinstance(value, numbers.Number):
            raise CompileError(f"T.{self}(...) takes a number or a kernel value, got a {type(value).__name__}")
        return _tilec.int_imm(int(value), dt, loc)

    def __repr__(self) -> str:
        return f"T.{str(self)}"


_NAMES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "bfloat16",
    "float8_e4m3", "float8_e5m2", "float8_e4m3fn", "float4_e2m1", "float4_e2m1fn",
]
_ALIASES = {"half": "float16", "double": "float64", "float": "float32"}

DTYPES = {name: DType(name) for name in _NAMES}
for _alias, _target in _ALIASES.items():
    DTYPES[_alias] = DType(_target)


def dtype_str(v: Any, what: str = "dtype") -> str:
    """A dtype given as a T name, a string, a DataType or a Python type (float / int / bool)."""
    if isinstance(v, str):
        _tilec.DataType(v)  # CompileError for unknown names
        return str(v)
    if isinstance(v, _tilec.DataType):
        return str(v)
    if v is float:
        return "float32"
    if v is int:
        return "int32"
    if v is bool:
        return "bool"
    # objects that name their dtype (e.g. torch.float16) are accepted by name
    name = str(v).rsplit(".", 1)[-1]
    if _tilec.DataType.parse(name) is not None:
        return name
    raise CompileError(f"{what} must be a dtype such as \"float16\" or T.float16, got {v!r}")
