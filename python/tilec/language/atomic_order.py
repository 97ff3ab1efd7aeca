"""TileLang's `T.atomic_load(src, memory_order="seq_cst")` and `T.atomic_store(dst, value,
memory_order="seq_cst")`: one element read or written atomically with a C++ memory order, at GPU
scope (tilec/atomic.cuh: ld.relaxed / ld.acquire / st.relaxed / st.release, fence.sc for seq_cst),
e.g. a flag a producer block sets and a consumer block spins on. 32- and 64-bit dtypes; on the CPU
target (blocks run one at a time) a plain load / store."""
from __future__ import annotations

from typing import Any

from .. import _tilec
from ..errors import CompileError
from ..frontend import context
from ..frontend.values import BufferAccess, to_expr
from .dtypes import dtype_str
from .ops import primitive

_ORDERS = {"relaxed": 0, "consume": 2, "acquire": 2, "release": 3, "acq_rel": 4, "seq_cst": 5}
_LOAD_ORDERS = ("relaxed", "consume", "acquire", "seq_cst")
_STORE_ORDERS = ("relaxed", "release", "seq_cst")


def _element(x: Any, what: str):
    """The element an atomic access names: `A[i]`, or a one-element buffer."""
    if isinstance(x, BufferAccess) and x.is_point():
        load = x.to_load()
    elif isinstance(x, _tilec.Buffer) and all(getattr(d, "value", None) == 1 for d in x.shape):
        load = _tilec.buffer_load(x, [to_expr(0) for _ in x.shape], context.require(what).loc)
    else:
        raise CompileError(f"{what} reads or writes one element", hint=f"{what}(A[i], ...)")
    dtype = dtype_str(load.dtype)
    if _tilec.DataType(dtype).bits not in (32, 64):
        raise CompileError(f"{what} of {dtype}: 32- and 64-bit values only",
                           hint="keep the flag or counter in an int32 / int64 / float32 element")
    return load, dtype


def _order(memory_order: str, allowed: tuple, what: str) -> int:
    if memory_order not in allowed:
        raise CompileError(f"{what}: memory_order {memory_order!r} is not one a {what.split('_')[-1]} takes",
                           hint="one of " + ", ".join(repr(o) for o in allowed))
    return _ORDERS[memory_order]


@primitive
def atomic_load(src: Any, memory_order: str = "seq_cst"):
    """The element's value, read atomically with the given order."""
    load, dtype = _element(src, "T.atomic_load")
    order = _order(memory_order, _LOAD_ORDERS, "T.atomic_load")
    ctx = context.require("T.atomic_load")
    address = _tilec.call("handle", "tl.address_of", [load], ctx.loc)
    return _tilec.call(dtype, "tl.atomic_load", [to_expr(order), address], ctx.loc)


@primitive
def atomic_store(dst: Any, value: Any, memory_order: str = "seq_cst"):
    """Writes `value` into the element atomically with the given order."""
    load, dtype = _element(dst, "T.atomic_store")
    order = _order(memory_order, _STORE_ORDERS, "T.atomic_store")
    ctx = context.require("T.atomic_store")
    address = _tilec.call("handle", "tl.address_of", [load], ctx.loc)
    v = _tilec.cast(dtype, value.to_load() if isinstance(value, BufferAccess) else to_expr(value), ctx.loc)
    ctx.builder.evaluate(_tilec.call("void", "tl.atomic_store", [to_expr(order), address, v], ctx.loc), ctx.loc)
