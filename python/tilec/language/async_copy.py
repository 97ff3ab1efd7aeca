"""TileLang's hand-written cp.async primitives, for programs that issue their own copies (a
producer warp group filling shared memory row by row, gathering rows by index):

    T.ptx_cp_async(T.access_ptr(S[r, c], "w", 8), T.access_ptr(G[i, c], "r", 8), 8)
    T.cp_async_barrier_noinc(bar[stage])   # bar completes when these copies have landed

T.access_ptr gives the address of an element (the start of a region); T.ptx_cp_async copies
num_elems elements of the pointers' dtype (as in TileLang: 8 float16 elements are 16 bytes),
which must come to 4, 8 or 16 bytes, global -> shared asynchronously (tilec/cp_async.cuh); the copies complete
through T.ptx_commit_group / T.ptx_wait_group, or through an mbarrier with
T.cp_async_barrier_noinc (the mbarrier must expect one arrival per issuing thread)."""

from __future__ import annotations

from typing import Any

from .. import _tilec
from ..errors import CompileError
from ..frontend import context
from ..frontend.values import BufferAccess, const_int, to_expr
from .ops import Buffer, BufferRegion, Expr, primitive
from .sync import _barrier

_ACCESS_MODES = ("r", "w", "rw")


def _element_load(base: Any) -> Expr:
    """The first element of a buffer, region or element access, as a BufferLoad."""
    ctx = context.require("T.access_ptr")
    if isinstance(base, BufferAccess):
        base.check_rank()
        return _tilec.buffer_load(base.buffer, [to_expr(item[1]) for item in base.items], ctx.loc)
    if isinstance(base, Buffer):
        return _tilec.buffer_load(base, [to_expr(0)] * base.ndim, ctx.loc)
    if isinstance(base, BufferRegion):
        return _tilec.buffer_load(base.buffer, [r[0] for r in base.region], ctx.loc)
    if isinstance(base, Expr) and base.kind == "BufferLoad":
        return base
    return _unsupported_base(base)


def _unsupported_base(base: Any):
    raise CompileError(f"T.access_ptr takes a buffer, an element A[i, j] or a region A[i, j:k], not "
                       f"{type(base).__name__}", hint="T.access_ptr(S[row, col], \"w\", 8)")


def _is_address(e: Any) -> bool:
    return isinstance(e, Expr) and e.kind == "Call" and e.op == "tl.address_of"


@primitive
def access_ptr(base: Any, access_type: str = "rw", *extents, offset: Any = 0, **_ignored):
    """`T.access_ptr(A[i, j], "r", extent)`: the address of A[i, j] (the access mask and extent
    say how the pointer is used; tilec reads that from the intrinsic the pointer is passed to)."""
    if access_type not in _ACCESS_MODES:
        raise CompileError(f"T.access_ptr: the access type must be one of {', '.join(_ACCESS_MODES)}, "
                           f"got {access_type!r}")
    if not (isinstance(offset, int) and offset == 0):
        raise CompileError("T.access_ptr(offset=...) is not supported by tilec",
                           hint="index the element the pointer should start at: T.access_ptr(A[i, j + k], ...)")
    ctx = context.require("T.access_ptr")
    return _tilec.call("handle", "tl.address_of", [_element_load(base)], ctx.loc)


@primitive
def ptx_cp_async(dst: Any, src: Any, num_elems: Any, *more, predicate: Any = None):
    """`T.ptx_cp_async(dst_ptr, src_ptr, num_elems)`: an asynchronous copy of num_elems elements
    (4, 8 or 16 bytes of the pointers' dtype) from global to shared memory, both given as
    T.access_ptr(...). With `predicate` (a condition) the copy reads nothing and writes zeros
    where the condition is false, as in TileLang."""
    ctx = context.require("T.ptx_cp_async")
    if len(more) == 1 and predicate is None:  # TileLang's predicate, given positionally
        predicate, more = more[0], ()
    if more:
        raise CompileError("T.ptx_cp_async takes (dst_ptr, src_ptr, num_elems); TVM's six-argument form "
                           "(dtype, shared_ptr, shared_offset, global_ptr, global_offset, bytes) is not "
                           "supported by tilec", hint="T.ptx_cp_async(T.access_ptr(S[i], \"w\"), "
                                                      "T.access_ptr(G[j], \"r\"), 16)")
    if not (_is_address(dst) and _is_address(src)):
        raise CompileError("T.ptx_cp_async needs addresses: pass T.access_ptr(S[...], \"w\") and "
                           "T.access_ptr(G[...], \"r\")")
    dst_scope = dst.args[0].buffer.scope
    src_scope = src.args[0].buffer.scope
    if not dst_scope.startswith("shared") or src_scope != "global":
        raise CompileError(f"T.ptx_cp_async copies global -> shared memory, not {src_scope} -> {dst_scope}")
    dst_dtype, src_dtype = str(dst.args[0].buffer.dtype), str(src.args[0].buffer.dtype)
    dst_bits, src_bits = dst.args[0].buffer.dtype.bits, src.args[0].buffer.dtype.bits
    if dst_bits != src_bits:
        raise CompileError(f"T.ptx_cp_async copies between elements of one width, not {src_dtype} -> {dst_dtype}")
    elems = const_int(num_elems, "the element count of T.ptx_cp_async")
    n = elems * dst_bits // 8
    if elems <= 0 or elems * dst_bits % 8 or n not in (4, 8, 16):
        raise CompileError(f"T.ptx_cp_async copies 4, 8 or 16 bytes: {elems} {dst_dtype} elements are "
                           f"{elems * dst_bits / 8:g} bytes",
                           hint="the third argument counts elements of the pointers' dtype, as in TileLang "
                                f"(16 bytes of {dst_dtype}: {128 // dst_bits})")
    op = "tl.cp_async_cg16" if n == 16 else f"tl.cp_async_ca{n}"
    args = [dst, src]
    if predicate is not None:
        op += "_zfill"
        args.append(to_expr(predicate))
    ctx.builder.evaluate(_tilec.call("void", op, args, ctx.loc), ctx.loc)


@primitive
def cp_async_barrier_noinc(barrier: Any):
    """`T.cp_async_barrier_noinc(bar)`: one arrival on the mbarrier once this thread's earlier
    cp.async copies have landed (counted against the barrier's expected arrivals)."""
    ctx = context.require("T.cp_async_barrier_noinc")
    call = _tilec.call("void", "tl.cp_async_mbarrier_arrive_noinc", [_barrier(barrier)], ctx.loc)
    ctx.builder.evaluate(call, ctx.loc)
