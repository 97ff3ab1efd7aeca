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
from .ops import alloc_fragment, copy, fill, infinity, primitive

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


def _reducer_op(reducer: Any, what: str) -> str:
    ctx = context.require(what)
    entry = getattr(ctx, "reducer_ops", {}).get(id(reducer))
    if entry is None:
        raise CompileError(f"{what} takes a buffer made by T.alloc_reducer")
    return entry[1]


@primitive
def finalize_reducer(reducer: Any, dst: Any = None, batch: int = 1, annotations: Any = None):
    """Nothing to combine: tilec combines a reducer's contributions at the end of each T.Parallel
    loop. TileLang's reducer v2 form `T.finalize_reducer(acc, dst)` copies the result to `dst`."""
    _reducer_op(reducer, "T.finalize_reducer")
    if batch < 1:
        raise CompileError(f"T.finalize_reducer: batch must be >= 1, got {batch}")
    if dst is not None:
        copy(reducer, dst)


@primitive
def reducer_init(reducer: Any, init: Any = None):
    """TileLang's reducer v2: opens the reduction from the op's identity (sum 0, max -inf, min
    +inf), or from `init`, a logical starting value combined once per element (tilec combines
    eagerly, so that is the reducer's value before the first update)."""
    op = _reducer_op(reducer, "T.reducer_init")
    if init is None:
        init = 0 if op == "sum" else (-infinity(reducer.dtype) if op == "max" else infinity(reducer.dtype))
    fill(reducer, init)


@primitive
def reducer_update(target: Any, value: Any):
    """`T.reducer_update(acc[i], v)` inside a T.Parallel loop: rewritten by the parser into the
    reducer's update (frontend/reducers.py). Reaching this call means it stands elsewhere."""
    raise CompileError("T.reducer_update is used inside a T.Parallel loop over the values it combines",
                       hint="for i, j in T.Parallel(M, N): T.reducer_update(acc[i], x[i, j])")
