"""Scans: `T.cumsum` (inclusive prefix sums along a dimension, from the end with reverse) and
TileLang's `T.cummax` (running maxima, NaN-ignoring as T.max): one tile op, "cumsum", with an
`op` attribute (src/ops/cumsum.cc lowers both; T.cummax prints as T.cumsum(..., op="max"))."""
from __future__ import annotations

from typing import Any

from ..errors import CompileError
from .ops import _tile_op, primitive


@primitive
def cumsum(src: Any, dst: Any = None, dim: int = 0, reverse: bool = False, annotations: Any = None,
           op: str = "sum"):
    """Inclusive prefix sums along `dim`; `op="max"` (how T.cummax prints) takes running maxima."""
    if op not in ("sum", "max"):
        raise CompileError(f"T.cumsum: op {op!r} is not a scan tilec has", hint="op='sum' or 'max' (T.cummax)")
    _tile_op("cumsum", [src, src if dst is None else dst], {"dim": dim, "reverse": reverse, "op": op})


@primitive
def cummax(src: Any, dst: Any = None, dim: int = 0, reverse: bool = False, annotations: Any = None):
    """Running maxima along `dim` (from the end with reverse), in place without `dst`; NaN-ignoring
    as T.max. The cumsum scan with max (src/ops/cumsum.cc)."""
    cumsum(src, dst, dim, reverse, op="max")
