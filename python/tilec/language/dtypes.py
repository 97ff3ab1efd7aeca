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
        dt = _tilec.DataType(dtype_str(str(self)))
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

    @property
    def bits(self) -> int:
        return _tilec.DataType(dtype_str(str(self))).bits

    @property
    def lanes(self) -> int:
        return _tilec.DataType(dtype_str(str(self))).lanes

    def is_float(self) -> bool:
        return _tilec.DataType(dtype_str(str(self))).is_float()

    def as_torch(self):
        """The torch dtype of the same name (float8_e4m3 is torch.float8_e4m3fn)."""
        return as_torch(self)

    # TileLang's dtype objects have these too.
    def is_float8(self) -> bool:
        return str(self).startswith("float8")


_NAMES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "bfloat16",
    "float8_e4m3", "float8_e5m2", "float8_e4m3fn", "float4_e2m1", "float4_e2m1fn",
]
_ALIASES = {"half": "float16", "double": "float64", "float": "float32", "int": "int32", "uint": "uint32"}

_VECTOR_BASES = ["float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
                 "uint32", "uint64", "float8_e4m3", "float8_e5m2"]

# Names TileLang has that tilec cannot store: they exist (programs name them in tables and
# annotations), and using one as a dtype raises this message.
UNSUPPORTED = {
    "int4": "sub-byte integers are not supported by tilec: store two 4-bit values per int8/uint8 and unpack "
            "them with shifts and masks",
    "uint4": "sub-byte integers are not supported by tilec: store two 4-bit values per uint8 and unpack them "
             "with shifts and masks",
    "int2": "sub-byte integers are not supported by tilec: pack them into uint8",
    "uint2": "sub-byte integers are not supported by tilec: pack them into uint8",
    "int1": "1-bit integers are not supported by tilec: use bool or pack bits into uint8/uint32",
    "float8_e8m0fnu": "float8_e8m0fnu (MX scale factors) is not supported by tilec: keep the scale exponents in "
                      "uint8 and build the float with T.reinterpret",
    "float6_e2m3fn": "6-bit floats are not supported by tilec",
    "float6_e3m2fn": "6-bit floats are not supported by tilec",
    "float4_e2m1_unpacked": "fp4 stored one value per byte is TileLang's layout hint for sm_100's block-scaled "
                            "tcgen05 gemm, which tilec does not support: tilec stores float4_e2m1 packed two "
                            "values per byte (T.float4_e2m1)",
}

DTYPES = {name: DType(name) for name in _NAMES}
DTYPES.update({name: DType(name) for name in UNSUPPORTED})
# TensorFloat-32 is float32 in memory; T.gemm on float32 operands is tilec's choice of instruction.
DTYPES["tfloat32"] = DType("float32")
for _alias, _target in _ALIASES.items():
    DTYPES[_alias] = DType(_target)
for _base in _VECTOR_BASES:  # T.float32x2, T.float16x4, ...
    for _lanes in (2, 4, 8, 16, 32):
        DTYPES[f"{_base}x{_lanes}"] = DType(f"{_base}x{_lanes}")

# tilec name -> torch dtype attribute where they differ. float4_e2m1 is torch's packed
# float4_e2m1fn_x2 (two elements a byte, last dimension halved: tilec/kernel.py).
_TORCH_NAMES = {"float8_e4m3": "float8_e4m3fn", "float8_e4m3fn": "float8_e4m3fn",
                "float4_e2m1": "float4_e2m1fn_x2", "float4_e2m1fn": "float4_e2m1fn_x2"}


def as_torch(v: Any):
    """The torch dtype for a dtype given in any form dtype_str accepts."""
    import torch

    name = dtype_str(v)
    torch_name = _TORCH_NAMES.get(name, name)
    if name == "bool":
        return torch.bool
    found = getattr(torch, torch_name, None)
    if found is None:
        raise CompileError(f"torch has no dtype for {name}")
    return found


def dtype(v: Any) -> DType:
    """`T.dtype(x)`: a T dtype from a name, a torch dtype or another dtype object."""
    return DType(dtype_str(v))


def __getattr__(name: str):
    if name == "_TORCH_DTYPE_TO_STR":  # TileLang's table, built when asked for (needs torch)
        import torch

        table = {}
        for tname in _NAMES:
            attr = getattr(torch, _TORCH_NAMES.get(tname, tname), None)
            if attr is not None and attr not in table:
                table[attr] = tname
        return table
    raise AttributeError(name)


def dtype_str(v: Any, what: str = "dtype") -> str:
    """A dtype given as a T name, a string, a DataType or a Python type (float / int / bool)."""
    if isinstance(v, str):
        if v in UNSUPPORTED:
            raise CompileError(f"T.{v}: {UNSUPPORTED[v]}", hint="docs/LANGUAGE.md lists the dtypes tilec supports")
        if v in _ALIASES and _tilec.DataType.parse(v) is None:  # TVM's short names: "int", "uint", "half"
            return _ALIASES[v]
        _tilec.DataType(v)  # CompileError for unknown names
        return str(v)
    if isinstance(v, _tilec.DataType):
        return str(v)
    if getattr(v, "_tilec_pointer_table", False):  # T.ptr: a table of addresses is int64 storage
        return "int64"
    if v is float:
        return "float32"
    if v is int:
        return "int32"
    if v is bool:
        return "bool"
    # objects that name their dtype (e.g. torch.float16, numpy.float32, tvm.DataType) by name
    name = str(v).rsplit(".", 1)[-1]
    if name.endswith("'>"):  # <class 'numpy.float32'>
        name = name[:-2]
    if name == "float4_e2m1fn_x2":  # torch's packed fp4: elements are float4_e2m1
        return "float4_e2m1"
    if _tilec.DataType.parse(name) is not None:
        return name
    raise CompileError(f"{what} must be a dtype such as \"float16\" or T.float16, got {v!r}")
