"""`T.any_of(buffer_or_region)` / `T.all_of(...)` (TileLang): whether any / every element of a
buffer (or a region of one) is true, as one boolean value. Every element of the region is read by
the thread that evaluates it (TileLang: tl::Any / tl::All over the elements at the address), so
use it on T.alloc_local / T.alloc_var buffers, shared or global memory — not on a fragment that
the threads hold in parts. The region's extents must be constants (at most 1024 elements); the
value is the `or` / `and` of `x != 0` over them."""

from __future__ import annotations

import itertools
from typing import Any

from .. import _tilec
from ..errors import CompileError
from ..frontend import context
from ..frontend.values import const_int, to_region
from .ops import primitive

MAX_ELEMENTS = 1024


def _fold(what: str, buffer: Any, logic: str):
    ctx = context.require(f"T.{what}")
    region = to_region(buffer, f"the argument of T.{what}")
    loc = ctx.loc
    starts, extents = [], []
    for lo, ext in region.region:
        starts.append(lo)
        extents.append(const_int(ext, f"an extent of T.{what}'s region"))
    count = 1
    for e in extents:
        count *= e
    if count > MAX_ELEMENTS:
        raise CompileError(f"T.{what} over {count} elements: tilec unrolls it (at most {MAX_ELEMENTS})",
                           hint="reduce the region first (T.reduce_max / T.reduce_sum into a small buffer)")
    zero = _tilec.int_imm(0, "int32", loc)
    out = None
    for offsets in itertools.product(*[range(e) for e in extents]):
        index = [_tilec.binary("Add", s, _tilec.int_imm(o, "int32", loc), loc) if o else s
                 for s, o in zip(starts, offsets)]
        element = _tilec.buffer_load(region.buffer, index, loc)
        truth = element if str(element.dtype) == "bool" else _tilec.binary("NE", element, _tilec.cast(
            element.dtype, zero, loc), loc)
        out = truth if out is None else _tilec.binary(logic, out, truth, loc)
    return out


@primitive
def any_of(buffer: Any):
    """True when some element of `buffer` (a buffer or a region) is non-zero."""
    return _fold("any_of", buffer, "Or")


@primitive
def all_of(buffer: Any):
    """True when every element of `buffer` (a buffer or a region) is non-zero."""
    return _fold("all_of", buffer, "And")
