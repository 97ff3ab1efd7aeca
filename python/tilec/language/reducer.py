"""`T.alloc_reducer` / `T.finalize_reducer` (TileLang): a fragment that T.Parallel loops accumulate
into from any thread, e.g. a GEMV's row sums:

    o = T.alloc_reducer(block_M, "float32", op="sum", replication="all")
    T.clear(o)
    for i, j in T.Parallel(block_M, block_N):
        o[i] += a[i, j] * x[j]
    T.finalize_reducer(o)

TileLang gives each thread a private copy, accumulates into it and combines the copies at
T.finalize_reducer. tilec combines eagerly instead, with the same result up to the order of the
sums: a T.Parallel loop that updates the reducer (frontend/reducers.py) accumulates into a
fragment of the loop's shape, filled with the op's identity before the loop, and after the loop
T.reduce_<op> folds it into the reducer along the loop dimension its index leaves out
(clear=False). T.finalize_reducer has nothing left to do. `replication` is accepted (every thread
that holds an element of the reducer sees the combined value, as with "all")."""

from __future__ import annotations

from typing import Any

from ..errors import CompileError
from ..frontend import context
from .ops import alloc_fragment, primitive

REDUCER_OPS = ("sum", "max", "min")


@primitive
def alloc_reducer(shape: Any, dtype: Any, op: str = "sum", replication: Any = None):
    if op not in REDUCER_OPS:
        raise CompileError(f"T.alloc_reducer: op {op!r} is not supported", hint="op='sum', 'max' or 'min'")
    if replication not in (None, "all", "none"):
        raise CompileError(f"T.alloc_reducer: replication {replication!r}", hint="replication='all' or 'none'")
    buf = alloc_fragment(shape, dtype)
    ctx = context.require("T.alloc_reducer")
    ctx.__dict__.setdefault("reducer_ops", {})[id(buf)] = (buf, op)
    return buf


@primitive
def finalize_reducer(reducer: Any):
    """Nothing to do: tilec combines a reducer's contributions at the end of each T.Parallel loop."""
    ctx = context.require("T.finalize_reducer")
    if id(reducer) not in getattr(ctx, "reducer_ops", {}):
        raise CompileError("T.finalize_reducer takes a buffer made by T.alloc_reducer")
