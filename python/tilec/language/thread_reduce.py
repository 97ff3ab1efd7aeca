"""TVM's cross-thread reduction, as TileLang's GEMV examples write it:

    with T.attr(T.comm_reducer(lambda x, y: x + y, [T.cast(0, dtype)]), "reduce_scope",
                T.reinterpret(T.uint64(0), dtype="handle")):
        T.evaluate(T.tvm_thread_allreduce(T.uint32(1), value, True, out[0], tx, dtype="handle"))

`out[0]` gets, in every thread, the reduction of `value` over the threads that differ only in
the listed thread index. Supported: one value, over one thread index (threadIdx.x, .y or .z).
When the threads reduced together lie in one warp (the index's extent a power of two, times the
extents of the faster indices at most 32) it is a butterfly of warp shuffles; otherwise every
thread writes its value to a shared-memory buffer of the block and combines the ones of its
group in order (the barrier placement pass puts __syncthreads between). Every thread of the block
must reach it, as in TVM. Other forms raise a CompileError naming T.reduce_* on a fragment as the
alternative. `T.attr` with other keys is accepted and has no effect."""

from __future__ import annotations

from typing import Any

from ..errors import CompileError
from ..frontend import context
from ..frontend.values import BufferAccess, stored_value, to_expr
from .frames import Frame
from .ops import primitive
from .. import _tilec
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
    extents = list(getattr(ctx, "kernel_threads", None) or [])
    if len(thread_vars) != 1 or not extents:
        raise CompileError("T.tvm_thread_allreduce: tilec reduces over one thread index",
                           hint="reduce a fragment with T.reduce_sum / T.reduce_max instead")
    dims = [d for d, tv in enumerate(tvars[:len(extents)]) if to_expr(thread_vars[0]).same_as(tv)]
    if not dims:
        raise CompileError("T.tvm_thread_allreduce: the reduced index must be a thread index of the block "
                           "(T.get_thread_binding(d))",
                           hint="reduce a fragment with T.reduce_sum / T.reduce_max instead")
    if not (isinstance(out, BufferAccess) and out.is_point()):
        raise CompileError("T.tvm_thread_allreduce writes its result to one buffer element, e.g. out[0]")
    d = dims[0]
    width, stride = extents[d], 1
    for e in extents[:d]:
        stride *= e
    combine = reducers[-1].combine
    index = [to_expr(i[1]) for i in out.items]
    power_of_two = width & (width - 1) == 0 and stride & (stride - 1) == 0
    if power_of_two and width * stride <= 32:
        _warp_butterfly(ctx, out, index, value, combine, width, stride)
    else:
        _through_shared_memory(ctx, out, index, value, combine, tvars[:len(extents)], extents, d, stride)
    return None


def _warp_butterfly(ctx, out, index, value, combine, width, stride):
    """The partners differ in the index's bits, `stride` lanes apart: XOR shuffles in one warp."""
    ctx.builder.store(out.buffer, index, stored_value(out.buffer, to_expr(value), ctx.loc), ctx.loc)
    offset = width // 2
    while offset >= 1:  # one butterfly step per statement: each shuffle runs once
        v = out.to_load()
        ctx.builder.store(out.buffer, index, stored_value(out.buffer, combine(v, shfl_xor(v, offset * stride)),
                                                          ctx.loc), ctx.loc)
        offset //= 2


def _through_shared_memory(ctx, out, index, value, combine, tvars, extents, d, stride):
    """Every thread stores its value at its linear index; each then folds its group's values in
    the order of the reduced index."""
    loc = ctx.loc
    int_imm = lambda n: _tilec.int_imm(n, "int32", loc)  # noqa: E731
    linear, base, scale = None, None, 1
    for k, (tv, e) in enumerate(zip(tvars, extents)):
        term = _tilec.binary("Mul", tv, int_imm(scale), loc) if scale != 1 else tv
        linear = term if linear is None else _tilec.binary("Add", linear, term, loc)
        if k != d:
            base = term if base is None else _tilec.binary("Add", base, term, loc)
        scale *= e
    base = base if base is not None else int_imm(0)
    v = to_expr(value)
    buf = ctx.builder.alloc("allreduce_buf", [scale], v.dtype, "shared.dyn", loc)  # scale: the block's threads
    ctx.builder.store(buf, [linear], v, loc)
    first = _tilec.buffer_load(buf, [base], loc)
    ctx.builder.store(out.buffer, index, stored_value(out.buffer, first, loc), loc)
    j = ctx.builder.begin_for("allreduce_j", int_imm(1), int_imm(extents[d] - 1), "serial", loc=loc)
    at = _tilec.binary("Add", base, _tilec.binary("Mul", j, int_imm(stride), loc), loc)
    other = _tilec.buffer_load(buf, [at], loc)
    ctx.builder.store(out.buffer, index, stored_value(out.buffer, combine(out.to_load(), other), loc), loc)
    ctx.builder.end_frame()
