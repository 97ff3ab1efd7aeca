"""`T.copy` into a `T.alloc_local` buffer: every thread holds its own copy of a local buffer,
so every thread must copy every element. The front end writes that as unrolled loops of
element loads and stores (the tile op partitions a copy over the threads, which is right
for shared and fragment destinations only)."""

from __future__ import annotations

from typing import Any, Optional

from .. import _tilec
from ..errors import CompileError
from ..frontend import context
from ..frontend.values import Buffer, BufferAccess, stored_value, to_expr

LOCAL_SCOPE = "local"
# Per-thread buffers: T.alloc_local ("local") and T.alloc_var ("local.var"): every thread holds
# its own copy, so a copy into one or a fill of one runs in every thread.
PER_THREAD_SCOPES = (LOCAL_SCOPE, "local.var")


def _items(v: Any) -> Optional[tuple]:
    """(buffer, items) of a buffer or an access; items per dimension ("index", e) / ("slice", lo, n)."""
    if isinstance(v, Buffer):
        return v, [("slice", 0, n) for n in v.shape]
    if isinstance(v, BufferAccess):
        v.check_rank()
        return v.buffer, list(v.items)
    return None


def _const(n: Any) -> Optional[int]:
    if isinstance(n, int):
        return n
    if isinstance(n, _tilec.Expr):
        return n.as_int()
    return None


def _free_dims(items: list) -> Optional[list]:
    """Positions and constant extents of the dimensions a copy runs over (extent > 1)."""
    dims = []
    for d, item in enumerate(items):
        if item[0] == "slice":
            n = _const(item[2])
            if n is None:
                return None
            if n != 1:
                dims.append((d, n))
    return dims


def copy_into_local(src: Any, dst: Any) -> bool:
    """Emits the copy when `dst` is a local buffer and returns True; False leaves it to T.copy."""
    d = _items(dst)
    s = _items(src)
    if d is None or s is None or d[0].scope not in PER_THREAD_SCOPES:
        return False
    ctx = context.require("T.copy")
    (dbuf, ditems), (sbuf, sitems) = d, s
    if sbuf.scope == "local.fragment" and dbuf.scope != LOCAL_SCOPE:
        return False  # a fragment element into a T.alloc_var: the tile op's own lowering
    if sbuf.scope == "local.fragment":
        raise CompileError(f"T.copy from the fragment '{sbuf.name}' into the local buffer '{dbuf.name}' is not supported",
                           hint="copy inside `for i in T.Parallel(...)` element by element, or use a shared buffer")
    dfree = _free_dims(ditems)
    if dfree is None:
        raise CompileError(f"T.copy into the local buffer '{dbuf.name}' needs constant extents")
    if all(item[0] == "index" for item in sitems):  # A[i, j]: the extents come from the destination
        if len(dfree) > len(sitems):
            raise CompileError(f"T.copy into '{dbuf.name}': the source has fewer dimensions than the copy")
        first = len(sitems) - len(dfree)
        sitems = sitems[:first] + [("slice", sitems[first + k][1], n) for k, (_, n) in enumerate(dfree)]
    sfree = _free_dims(sitems)
    if sfree is None or [n for _, n in sfree] != [n for _, n in dfree]:
        raise CompileError(
            f"T.copy into the local buffer '{dbuf.name}': the source region of '{sbuf.name}' has extents "
            f"{[n for _, n in sfree or []]} and the destination {[n for _, n in dfree]}",
            hint="copy regions with the same extents (dimensions of extent 1 aside)")
    loc = ctx.loc
    loop_vars = []
    for k, (_, n) in enumerate(dfree):
        loop_vars.append(ctx.builder.begin_for(f"{dbuf.name}_i{k}", to_expr(0), to_expr(n), "unroll", 0, None, None,
                                               None, "", loc))

    def indices(items: list, free: list) -> list:
        out = [to_expr(item[1]) for item in items]
        for (pos, _), v in zip(free, loop_vars):
            out[pos] = _tilec.binary("Add", out[pos], v, loc)
        return out

    value = _tilec.buffer_load(sbuf, indices(sitems, sfree), loc)
    ctx.builder.store(dbuf, indices(ditems, dfree), stored_value(dbuf, value, loc), loc)
    for _ in loop_vars:
        ctx.builder.end_frame()
    return True


def fill_local(dst: Any, value: Any) -> bool:
    """T.fill / T.clear of a local buffer or a T.alloc_var (or a region of one): every thread fills
    its own copy (as a fragment, only the threads that own its elements would)."""
    d = _items(dst)
    if d is None or d[0].scope not in PER_THREAD_SCOPES:
        return False
    ctx = context.require("T.fill")
    dbuf, ditems = d
    dfree = _free_dims(ditems)
    if dfree is None:
        raise CompileError(f"T.fill of the local buffer '{dbuf.name}' needs constant extents")
    loc = ctx.loc
    loop_vars = [ctx.builder.begin_for(f"{dbuf.name}_i{k}", to_expr(0), to_expr(n), "unroll", 0, None, None, None, "",
                                       loc) for k, (_, n) in enumerate(dfree)]
    idx = [to_expr(item[1]) for item in ditems]
    for (pos, _), v in zip(dfree, loop_vars):
        idx[pos] = _tilec.binary("Add", idx[pos], v, loc)
    ctx.builder.store(dbuf, idx, stored_value(dbuf, value, loc), loc)
    for _ in loop_vars:
        ctx.builder.end_frame()
    return True
