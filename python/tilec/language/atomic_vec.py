"""`T.atomic_addx2` / `T.atomic_addx4` (dst_element, src_element): TileLang's vector atomics add
the 2 / 4 consecutive elements that start at `src_element` (along the last dimension) to those
that start at `dst_element`. tilec issues one atomic add per element: every element is updated
atomically, as with the vector instruction (the order of concurrent adds is unspecified either way)."""

from __future__ import annotations

from typing import Any

from .. import _tilec
from ..errors import CompileError
from ..frontend import context
from ..frontend.values import BufferAccess, to_expr
from .ops import _named_primitive, atomic_add


def _shifted(access: BufferAccess, k: int) -> BufferAccess:
    items = list(access.items)
    last = items[-1]
    items[-1] = ("index", _tilec.binary("Add", to_expr(last[1]), to_expr(k), context.loc()) if k else last[1])
    return BufferAccess(access.buffer, items, access.loc)


def _vector_atomic(lanes: int):
    name = f"atomic_addx{lanes}"

    def op(dst: Any, value: Any, **kwargs):
        context.require(f"T.{name}")
        for how in ("use_tma", "return_prev", "memory_order"):
            if how == "return_prev" and kwargs.get(how):
                raise CompileError(f"T.{name}(return_prev=True) is not supported yet")
            kwargs.pop(how, None)
        if kwargs:
            raise CompileError(f"T.{name} got unexpected keyword(s): {', '.join(kwargs)}")
        for what, v in (("destination", dst), ("value", value)):
            if not (isinstance(v, BufferAccess) and v.is_point()):
                raise CompileError(f"the {what} of T.{name} must be one buffer element (the first of {lanes})",
                                   hint=f"write T.{name}(dst[i, j * {lanes}], src[i, j * {lanes}])")
        for k in range(lanes):
            atomic_add(_shifted(dst, k), _shifted(value, k))

    return _named_primitive(op, name, f"T.{name}(dst, src): {lanes} consecutive elements added atomically")


atomic_addx2 = _vector_atomic(2)
atomic_addx4 = _vector_atomic(4)
