"""TVM's cross-thread reduction, as TileLang's GEMV examples write it:

    with T.attr(T.comm_reducer(lambda x, y: x + y, [T.cast(0, dtype)]), "reduce_scope",
                T.reinterpret(T.uint64(0), dtype="handle")):
        T.evaluate(T.tvm_thread_allreduce(T.uint32(1), value, True, out[0], tx, dtype="handle"))

`out[0]` gets, in every thread, the reduction of `value` over the threads that differ only in
the listed thread indices. Supported: one value, threads along threadIdx.x whose extent is a
power of two up to 32 (lanes of one warp), lowered to a butterfly of warp shuffles. Other forms
raise a CompileError naming T.reduce_* on a fragment as the alternative. `T.attr` with other
keys is accepted and has no effect."""

from __future__ import annotations

from typing import Any

from ..errors import CompileError
from ..frontend import context
from ..frontend.values import BufferAccess, stored_value, to_expr
from .frames import Frame
from .ops import primitive
from .warp import shfl_xor


class CommReducer:
    def __init__(self, combine: Any, identities: Any):
        self.combine = combine
        self.identities = list(identities) if isinstance(identities, (list, tuple)) else [identities]


@primitive
def comm_reducer(combine: Any, identities: Any):
    """`T.comm_reducer(lambda x, y: ..., [identity])`: the combiner of T.tvm_thread_allreduce."""
    return CommReducer(combine, identities)


comm_reducer._tilec_takes_callables = True  # the combiner is a lambda written in the kernel


class _AttrFrame(Frame):
    def __init__(self, node: Any, key: Any):
        self.reducer = node if key == "reduce_scope" and isinstance(node, CommReducer) else None

    def begin(self, ctx):
        ctx.__dict__.setdefault("reducers", []).append(self.reducer)
        return None

    def end(self, ctx):
        ctx.reducers.pop()


@primitive
def attr(node: Any, key: Any, value: Any = None):
    """`with T.attr(node, key, value):` (TVM): a reduction scope for T.tvm_thread_allreduce;
    other attributes are accepted and have no effect."""
    return _AttrFrame(node, key)


@primitive
def tvm_thread_allreduce(*args, dtype: Any = None):
    ctx = context.require("T.tvm_thread_allreduce")
    reducers = [r for r in getattr(ctx, "reducers", []) if r is not None]
    if not reducers:
        raise CompileError("T.tvm_thread_allreduce needs an enclosing `with T.attr(T.comm_reducer(...), "
                           "\"reduce_scope\", ...)`")
    if len(args) < 5 or to_expr(args[0]).as_int() != 1:
        raise CompileError("T.tvm_thread_allreduce: tilec supports one reduced value "
                           "(size 1, value, cond, out, thread index)",
                           hint="reduce a fragment with T.reduce_sum / T.reduce_max instead")
    value, out, thread_vars = args[1], args[3], args[4:]
    tvars = ctx.builder.thread_vars()
    extents = getattr(ctx, "kernel_threads", None) or []
    if len(thread_vars) != 1 or not tvars or not to_expr(thread_vars[0]).same_as(tvars[0]) or not extents:
        raise CompileError("T.tvm_thread_allreduce: tilec reduces over threadIdx.x only",
                           hint="reduce a fragment with T.reduce_sum / T.reduce_max instead")
    width = extents[0]
    if width > 32 or width & (width - 1):
        raise CompileError(f"T.tvm_thread_allreduce over {width} threads: tilec reduces within a warp "
                           "(a power of two up to 32 threads along threadIdx.x)",
                           hint="reduce a fragment with T.reduce_sum / T.reduce_max instead")
    if not (isinstance(out, BufferAccess) and out.is_point()):
        raise CompileError("T.tvm_thread_allreduce writes its result to one buffer element, e.g. out[0]")
    combine = reducers[-1].combine
    index = [to_expr(i[1]) for i in out.items]
    ctx.builder.store(out.buffer, index, stored_value(out.buffer, to_expr(value), ctx.loc), ctx.loc)
    offset = width // 2
    while offset >= 1:  # one butterfly step per statement: each shuffle runs once
        v = out.to_load()
        ctx.builder.store(out.buffer, index, stored_value(out.buffer, combine(v, shfl_xor(v, offset)), ctx.loc),
                          ctx.loc)
        offset //= 2
    return None
