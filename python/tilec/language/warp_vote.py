"""Warp votes, ballots, warp reductions of one value and counting block barriers (upstream
TileLang's builtins): `T.any_sync(pred, mask=0xFFFFFFFF)`, `T.all_sync`, `T.ballot_sync`,
`T.ballot(pred)`, `T.activemask()`, `T.syncthreads_count(pred)` / `_and` / `_or`,
`T.__ffs(v)`, `T.__fns(mask, base, offset)`, and `T.warp_reduce_sum(v)` (`_max`, `_min`,
`_bitand`, `_bitor`): every lane of the warp ends with the combination of all 32 lanes' values.

Thread-level operations (tilec/warp_vote.cuh, tilec/reduce.cuh): every lane of the warp must run
a vote or a warp reduction, every thread of the block a syncthreads_* (each is a block barrier).
Predicates are integers or booleans; a float predicate is a CompileError, as TileLang refuses it.
Ballots and the active mask are uint64 (the 32-lane mask zero-extended), as in TileLang."""
from __future__ import annotations

from typing import Any

from .. import _tilec
from ..errors import CompileError
from ..frontend import context
from ..frontend.values import const_int, to_expr
from .ops import _loc, primitive

_FULL_WARP_MASK = 0xFFFFFFFF


def _predicate(value: Any, what: str):
    p = to_expr(value)
    t = str(p.dtype)
    if not (t == "bool" or t.startswith("int") or t.startswith("uint")):
        raise CompileError(f"T.{what} requires an integer or boolean predicate, but got {t}",
                           hint="compare the value, e.g. x > 0")
    return _tilec.cast("int32", p, _loc()) if t != "int32" else p


def _mask(mask: Any):
    return _tilec.cast("uint32", to_expr(mask), _loc())


@primitive
def any_sync(predicate: Any, mask: Any = _FULL_WARP_MASK):
    """Non-zero when some lane of `mask` has a non-zero predicate (int32)."""
    return _tilec.call("int32", "tl.any_sync", [_mask(mask), _predicate(predicate, "any_sync")], _loc())


@primitive
def all_sync(predicate: Any, mask: Any = _FULL_WARP_MASK):
    """Non-zero when every lane of `mask` has a non-zero predicate (int32)."""
    return _tilec.call("int32", "tl.all_sync", [_mask(mask), _predicate(predicate, "all_sync")], _loc())


@primitive
def ballot_sync(predicate: Any, mask: Any = _FULL_WARP_MASK):
    """Bit n set when lane n (of `mask`) has a non-zero predicate (uint64)."""
    return _tilec.call("uint64", "tl.ballot_sync", [_mask(mask), _predicate(predicate, "ballot_sync")], _loc())


@primitive
def ballot(predicate: Any):
    """ballot_sync over the full warp."""
    return _tilec.call("uint64", "tl.ballot_sync", [_mask(_FULL_WARP_MASK), _predicate(predicate, "ballot")], _loc())


@primitive
def activemask():
    """The lanes of this warp that run this instruction (uint64)."""
    return _tilec.call("uint64", "tl.activemask", [], _loc())


@primitive
def syncthreads_count(predicate: Any):
    """A block barrier returning how many threads have a non-zero predicate (int32)."""
    return _tilec.call("int32", "tl.syncthreads_count", [_predicate(predicate, "syncthreads_count")], _loc())


@primitive
def syncthreads_and(predicate: Any):
    """A block barrier returning non-zero when every thread's predicate is non-zero (int32)."""
    return _tilec.call("int32", "tl.syncthreads_and", [_predicate(predicate, "syncthreads_and")], _loc())


@primitive
def syncthreads_or(predicate: Any):
    """A block barrier returning non-zero when some thread's predicate is non-zero (int32)."""
    return _tilec.call("int32", "tl.syncthreads_or", [_predicate(predicate, "syncthreads_or")], _loc())


@primitive
def ffs(value: Any):
    """`T.__ffs(v)`: the one-based position of the lowest set bit of a 32- or 64-bit integer, 0
    for 0 (int32)."""
    v = to_expr(value)
    t = str(v.dtype)
    if t not in ("int32", "uint32", "int64", "uint64"):
        raise CompileError(f"T.__ffs takes a 32- or 64-bit integer, got {t}")
    return _tilec.call("int32", "tl.ffs", [v], _loc())


@primitive
def fns(mask: Any, base: Any, offset: Any):
    """`T.__fns(mask, base, offset)`: the position of the offset-th set bit of mask from base,
    0xFFFFFFFF when there is none (uint32)."""
    return _tilec.call("uint32", "tl.fns", [_mask(mask), _tilec.cast("uint32", to_expr(base), _loc()),
                                            _tilec.cast("int32", to_expr(offset), _loc())], _loc())


def _warp_reduce(op: str, value: Any, integer_only: bool = False):
    v = to_expr(value)
    t = str(v.dtype)
    if integer_only and not (t.startswith("int") or t.startswith("uint")):
        raise CompileError(f"T.warp_reduce_{op} takes an integer value, got {t}")
    return _tilec.call(t, f"tl.warp_reduce_{op}", [to_expr(32), v], _loc())


@primitive
def warp_reduce_sum(value: Any):
    """The sum of `value` over the 32 lanes of the warp, in every lane."""
    return _warp_reduce("sum", value)


@primitive
def warp_reduce_max(value: Any):
    return _warp_reduce("max", value)


@primitive
def warp_reduce_min(value: Any):
    return _warp_reduce("min", value)


@primitive
def warp_reduce_bitand(value: Any):
    return _warp_reduce("bitand", value, integer_only=True)


@primitive
def warp_reduce_bitor(value: Any):
    return _warp_reduce("bitor", value, integer_only=True)


@primitive
def shuffle_elect(thread_extent: Any):
    """True in one thread of each group of `thread_extent` consecutive threads (the first, as
    TileLang's elect.sync picks with every lane active); 0: one thread of the whole block."""
    n = const_int(thread_extent, "T.shuffle_elect: the group size")
    if n < 0:
        raise CompileError(f"T.shuffle_elect({n}): the group size is 0 (the block) or positive")
    ctx = context.require("T.shuffle_elect")
    tvars = ctx.builder.thread_vars()
    if not tvars:
        raise CompileError("T.shuffle_elect is used inside a T.Kernel with threads")
    extents = list(getattr(ctx, "kernel_threads", []) or [])
    linear, stride = None, 1
    for i, v in enumerate(tvars):
        extent = extents[i] if i < len(extents) else 1
        if extent > 1 or linear is None:
            term = v if stride == 1 else v * stride
            linear = term if linear is None else linear + term
        stride *= extent
    return linear == 0 if n == 0 else linear % n == 0
