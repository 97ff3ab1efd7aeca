"""Warp shuffles: TileLang's `T.shfl_xor / shfl_down / shfl_up / shfl_sync` and TVM's
`T.tvm_warp_shuffle(_down/_up)(mask, value, lane_or_delta, width, warp_size)`, lowered to the
device library's full-warp shuffles (tl::shfl_xor/down/up/idx in reduce.cuh). Every lane of
the warp must execute them, as in CUDA. A `width` below 32 (segments of `width` lanes) is
expressed through the source lane, which assumes the warp's lanes are threadIdx.x % 32 (a
one-dimensional thread block, or x a multiple of 32). The mask is not passed on: the shuffles
synchronise the whole warp."""
from __future__ import annotations

from typing import Any

from .. import _tilec
from ..errors import CompileError
from ..frontend import context
from ..frontend.values import const_int, to_expr
from .ops import _loc, primitive, select_values


def _shuffle(op: str, value: Any, arg: Any):
    v = to_expr(value)
    return _tilec.call(str(v.dtype), op, [v, to_expr(arg)], _loc())


def _width(width: Any, what: str) -> int:
    w = const_int(width, f"{what}: the width")
    if w <= 0 or w > 32 or w & (w - 1):
        raise CompileError(f"{what}: the width must be a power of two from 1 to 32, got {w}")
    return w


def _lane():
    ctx = context.require("a warp shuffle")
    tvars = ctx.builder.thread_vars()
    if not tvars:
        raise CompileError("a warp shuffle with a width below 32 is used outside a T.Kernel with threads")
    return tvars[0] % 32


@primitive
def shfl_xor(value: Any, offset: Any):
    """`value` as the lane `lane ^ offset` of this warp holds it."""
    return _shuffle("tl.shfl_xor", value, offset)


@primitive
def shfl_down(value: Any, offset: Any):
    """`value` from the lane `offset` above; the highest lanes keep their own."""
    return _shuffle("tl.shfl_down", value, offset)


@primitive
def shfl_up(value: Any, offset: Any):
    """`value` from the lane `offset` below; the lowest lanes keep their own."""
    return _shuffle("tl.shfl_up", value, offset)


@primitive
def shfl_sync(mask: Any, value: Any, src_lane: Any, width: Any = 32):
    """`value` as lane `src_lane` (of this lane's segment of `width` lanes) holds it."""
    return tvm_warp_shuffle(mask, value, src_lane, width, 32)


@primitive
def tvm_warp_shuffle(mask: Any, value: Any, lane: Any, width: Any, warp_size: Any = 32):
    w = _width(width, "T.tvm_warp_shuffle")
    if w == 32:
        return _shuffle("tl.shfl_idx", value, lane)
    me = _lane()
    return _shuffle("tl.shfl_idx", value, me - me % w + lane % w)


@primitive
def tvm_warp_shuffle_down(mask: Any, value: Any, delta: Any, width: Any, warp_size: Any = 32):
    w = _width(width, "T.tvm_warp_shuffle_down")
    if w == 32:
        return _shuffle("tl.shfl_down", value, delta)
    me = _lane()
    # every lane shuffles (the warp synchronises); those past their segment's end read their own
    return _shuffle("tl.shfl_idx", value, select_values(me % w + delta < w, me + delta, me))


@primitive
def tvm_warp_shuffle_up(mask: Any, value: Any, delta: Any, width: Any, warp_size: Any = 32):
    w = _width(width, "T.tvm_warp_shuffle_up")
    if w == 32:
        return _shuffle("tl.shfl_up", value, delta)
    me = _lane()
    return _shuffle("tl.shfl_idx", value, select_values(me % w >= delta, me - delta, me))
