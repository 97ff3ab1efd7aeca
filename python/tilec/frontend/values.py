"""Values the parser passes around besides IR expressions: buffer accesses (``A[i, j]``,
``A[0:64, k]``) that become loads or regions depending on where they are used, and the
conversions from Python values to IR."""

from __future__ import annotations

import numbers
from typing import Any

from .. import _tilec
from ..errors import CompileError
from . import context

Expr = _tilec.Expr
Var = _tilec.Var
Buffer = _tilec.Buffer
BufferRegion = _tilec.BufferRegion

VAR_SCOPE = "local.var"
BARRIER_SCOPE = "shared.barrier"


class BufferAccess:
    """``A[i, j]`` or ``A[lo:hi, j]``: a load in expressions, a region in tile-op arguments.

    items: per dimension ("index", expr) or ("slice", min, extent).
    """

    __slots__ = ("buffer", "items", "loc")

    def __init__(self, buffer: Buffer, items: list, loc):
        self.buffer = buffer
        self.items = items
        self.loc = loc

    def is_point(self) -> bool:
        return all(item[0] == "index" for item in self.items)

    def check_rank(self) -> None:
        if len(self.items) != self.buffer.ndim:
            raise CompileError(
                f"buffer '{self.buffer.name}' has {self.buffer.ndim} dimensions but is indexed with "
                f"{len(self.items)}",
                hint="give one index or slice per dimension",
            )

    def to_region(self) -> BufferRegion:
        self.check_rank()
        ranges = []
        for item in self.items:
            if item[0] == "index":
                ranges.append((to_expr(item[1]), 1))
            else:
                ranges.append((to_expr(item[1]), to_expr(item[2])))
        return BufferRegion(self.buffer, ranges, self.loc)

    def to_load(self) -> Expr:
        if not self.is_point():
            raise CompileError(
                f"'{self.buffer.name}[...]' with a slice is a region, not a value",
                hint="index every dimension with a single value to read one element",
            )
        return _tilec.buffer_load(self.buffer, [to_expr(i[1]) for i in self.items], self.loc)

    def astype(self, dtype: Any) -> Expr:
        return _astype(self.to_load(), dtype)

    @property
    def dtype(self):
        """The element type (TVM's BufferLoad.dtype, which helper functions of programs read)."""
        return self.buffer.dtype

    def __repr__(self) -> str:
        parts = []
        for item in self.items:
            parts.append(repr(item[1]) if item[0] == "index" else f"{item[1]!r}:+{item[2]!r}")
        return f"{self.buffer.name}[{', '.join(parts)}]"


def _astype(e: Expr, dtype: Any) -> Expr:
    """`x.astype(dtype)` (TVM's PrimExpr method, used by TileLang programs): a cast."""
    from ..language.dtypes import dtype_str

    return _tilec.cast(dtype_str(dtype), e, context.loc())


Expr.astype = _astype


def is_ir(v: Any) -> bool:
    """True for values that only exist in the kernel (not Python constants)."""
    return isinstance(v, (Expr, Buffer, BufferAccess, BufferRegion))


def is_python_number(v: Any) -> bool:
    return isinstance(v, (bool, numbers.Number)) and not is_ir(v)


def to_expr(v: Any) -> Expr:
    """A Python or kernel value as an IR expression (CompileError when it cannot be one)."""
    if isinstance(v, Expr):
        return v
    if isinstance(v, BufferAccess):
        return v.to_load()
    if isinstance(v, Buffer):
        if v.scope in (VAR_SCOPE, BARRIER_SCOPE) and v.ndim == 1:
            return _tilec.buffer_load(v, [0], context.loc())
        raise CompileError(
            f"buffer '{v.name}' is used as a value",
            hint=f"index it to read an element, e.g. {v.name}[{', '.join('ijklmn'[: max(v.ndim, 1)])}]",
        )
    if isinstance(v, bool):
        return _tilec.bool_imm(v, context.loc())
    if isinstance(v, numbers.Integral):
        v = int(v)
        dtype = "int32" if -(2**31) <= v < 2**31 else "int64"
        return _tilec.int_imm(v, dtype, context.loc())
    if isinstance(v, numbers.Real):
        return _tilec.float_imm(float(v), "float32", context.loc())
    if isinstance(v, str):
        return _tilec.string_imm(v, context.loc())
    raise CompileError(f"a {type(v).__name__} cannot be used as a value in a kernel")


def stored_value(buffer: Buffer, value: Any, loc) -> Expr:
    """`value` as stored into `buffer`: cast to the buffer's dtype when it differs (TileLang
    converts on store, e.g. a float32 sum written into a float16 tile)."""
    e = to_expr(value)
    if e.dtype != buffer.dtype and e.dtype.lanes == 1 and buffer.dtype.lanes == 1:
        return _tilec.cast(buffer.dtype, e, loc)
    return e


def to_region(v: Any, what: str = "argument") -> BufferRegion:
    if isinstance(v, BufferRegion):
        return v
    if isinstance(v, Buffer):
        return BufferRegion.full(v)
    if isinstance(v, BufferAccess):
        return v.to_region()
    raise CompileError(
        f"{what} must be a buffer or a buffer region, got a {type(v).__name__}",
        hint="pass a buffer (A_shared) or a region (A[i, j] / A[0:64, k])",
    )


def const_int(v: Any, what: str) -> int:
    """A value that must be known when the kernel is parsed (block sizes, thread counts)."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, Expr):
        i = v.as_int()
        if i is not None:
            return i
    raise CompileError(
        f"{what} must be a constant integer, got {describe(v)}",
        hint="use a Python int or a parameter of the jit factory (they are folded when the kernel is parsed)",
    )


def describe(v: Any) -> str:
    if isinstance(v, Expr):
        return f"the kernel value `{v!r}`"
    if isinstance(v, Buffer):
        return f"the buffer '{v.name}'"
    if isinstance(v, BufferAccess):
        return f"`{v!r}`"
    return f"a {type(v).__name__}"


def extent_between(lo: Any, hi: Any) -> Any:
    """hi - lo for loop bounds and slices; undoes the printer's `lo:lo + extent` form."""
    if not is_ir(lo) and not is_ir(hi):
        return hi - lo
    lo_e, hi_e = to_expr(lo), to_expr(hi)
    if hi_e.kind == "Var":  # hi = lo + n bound by a let (H1 = H0 + 64; A[H0:H1])
        bound = context.let_value(hi_e)
        if bound is not None:
            hi_e = to_expr(bound)
    if hi_e.kind == "Add" and _tilec.structural_equal(hi_e.a, lo_e):
        return hi_e.b
    ext = _tilec.simplify(_tilec.binary("Sub", hi_e, lo_e, context.loc()))
    if ext.as_int() is None and lo_e.kind == "Var":  # lo and hi both let-bound (start = ...; end = ...)
        bound = context.let_value(lo_e)
        if bound is not None:
            folded = _tilec.simplify(_tilec.binary("Sub", hi_e, to_expr(bound), context.loc()))
            if folded.as_int() is not None:
                return folded
    if ext.as_int() is None:  # a let inside one bound: k_base = bk * K; A[bk * K + t * n : k_base + (t + 1) * n]
        folded = _tilec.simplify(_tilec.binary("Sub", _inline_lets(hi_e), _inline_lets(lo_e), context.loc()))
        if folded.as_int() is not None:
            return folded
    return ext


_ARITH_KINDS = ("Add", "Sub", "Mul", "FloorDiv", "FloorMod")


def _inline_lets(e: Any, depth: int = 0) -> Any:
    """`e` with the kernel's let variables replaced by their values, through + - * // %."""
    if depth > 16:
        return e
    if e.kind == "Var":
        bound = context.let_value(e)
        return e if bound is None else _inline_lets(to_expr(bound), depth + 1)
    if e.kind in _ARITH_KINDS:
        return _tilec.binary(e.kind, _inline_lets(e.a, depth + 1), _inline_lets(e.b, depth + 1), context.loc())
    return e


# ------------------------------------------------------------------ operators outside the parser
# Helper functions called from a kernel (plain Python, not parsed) apply Python's operators to
# kernel values directly: `(bits >> 23) & 0xFF`, `amax * scale`. On integers `&`, `|`, `^`,
# `<<`, `>>` are bit operations (as in TVM); `&` / `|` on booleans stay logical.


def _bit_op(kind: str, logical: str = ""):
    def op(a: Any, b: Any) -> Expr:
        from ..language.ops import bitwise

        if logical:
            ea, eb = to_expr(a), to_expr(b)
            if ea.dtype.is_bool() and eb.dtype.is_bool():
                return _tilec.binary(logical, ea, eb, context.loc())
        return bitwise(kind, a, b)

    def rop(a: Any, b: Any) -> Expr:
        return op(b, a)

    return op, rop


for _name, _kind, _logical in (("and", "and", "And"), ("or", "or", "Or"), ("xor", "xor", ""),
                               ("lshift", "shl", ""), ("rshift", "shr", "")):
    _op, _rop = _bit_op(_kind, _logical)
    setattr(Expr, f"__{_name}__", _op)
    setattr(Expr, f"__r{_name}__", _rop)


def _invert(a: Any) -> Expr:
    """`~x`: bitwise not of an integer, logical not of a bool (TVM's meaning in both cases)."""
    e = to_expr(a)
    if e.dtype.is_bool():
        return _tilec.logical_not(e, context.loc())
    from ..language.ops import bitwise_not

    return bitwise_not(e)


Expr.__invert__ = _invert


def _load_op(name: str):
    def op(self: BufferAccess, *other: Any) -> Any:
        return getattr(self.to_load(), name)(*other)

    op.__name__ = name
    return op


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "and", "or", "xor", "lshift", "rshift"):
    setattr(BufferAccess, f"__{_name}__", _load_op(f"__{_name}__"))
    setattr(BufferAccess, f"__r{_name}__", _load_op(f"__r{_name}__"))
for _name in ("lt", "le", "gt", "ge", "eq", "ne", "neg", "pos", "invert"):
    setattr(BufferAccess, f"__{_name}__", _load_op(f"__{_name}__"))
BufferAccess.__hash__ = object.__hash__  # __eq__ builds IR; hash by identity as before
