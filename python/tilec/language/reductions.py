"""T.reduce_max / min / sum / abssum / absmax and T.reduce: the reduction tile ops (their
schema in src/ir/tile_op.cc, lowering in src/ops/reduce.cc), with TileLang's keyword and
positional forms: (buffer, out, dim, clear, batch[, nan_propagate])."""

from __future__ import annotations

from typing import Any

from ..errors import CompileError
from .ops import _named_primitive, _tile_op, primitive


def _reduce_hints(kind: str, args: list, kwargs: dict) -> None:
    """TileLang's performance hints of a reduction, checked and dropped: batch (output elements
    per batched all-reduce; tilec combines a thread's registers before shuffling anyway) and
    annotations (sm_100 lowering choices). Results do not depend on them."""
    if len(args) > 2:  # (dim, clear, batch, ...) given positionally
        kwargs.setdefault("batch", args[2])
        if len(args) > 3:
            kwargs.setdefault("nan_propagate", args[3])
        del args[2:]
    batch = kwargs.pop("batch", 1)
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise CompileError(f"T.{kind}: batch must be a positive integer, got {batch!r}")
    kwargs.pop("annotations", None)


def _reduce(kind: str):
    max_like = kind in ("reduce_max", "reduce_min", "reduce_absmax")

    def op(buffer: Any, out: Any, *args, **kwargs):
        args, kwargs = list(args), dict(kwargs)
        if "stage" in kwargs:  # the schema's stage is the compiler's own (pass defer_row_sums)
            raise CompileError(f"T.{kind} got an unexpected keyword argument 'stage'",
                               hint="its keywords are: dim, clear, batch" + (", nan_propagate" if max_like else ""))
        _reduce_hints(kind, args, kwargs)
        if not max_like and "nan_propagate" in kwargs:
            raise CompileError(f"T.{kind} takes no nan_propagate (only reduce_max, reduce_min and reduce_absmax do)",
                               hint="a sum has no NaN choice to make: NaN operands always give NaN")
        _tile_op(kind, [buffer, out, *args], kwargs, ("dim", "clear"))

    extra = ", batch=1, nan_propagate=False" if max_like else ", batch=1"
    return _named_primitive(op, kind, f"T.{kind}(buffer, out, dim=-1, clear=True{extra})")


reduce_max = _reduce("reduce_max")
reduce_min = _reduce("reduce_min")
reduce_sum = _reduce("reduce_sum")
reduce_abssum = _reduce("reduce_abssum")
reduce_absmax = _reduce("reduce_absmax")


@primitive
def reduce(buffer: Any, out: Any, reduce_type: str, dim: int = -1, clear: bool = True, batch: int = 1,
           nan_propagate: bool = False, annotations: Any = None):
    if reduce_type not in ("max", "min", "sum", "abssum", "absmax"):
        raise CompileError(f"T.reduce: unknown reduce_type {reduce_type!r}", hint="max, min, sum, abssum or absmax")
    kwargs = {"dim": dim, "clear": clear, "batch": batch}
    _reduce_hints("reduce_" + reduce_type, [], kwargs)
    if nan_propagate:
        if reduce_type not in ("max", "min", "absmax"):
            raise CompileError(f"T.reduce: reduce_type {reduce_type!r} takes no nan_propagate",
                               hint="only max, min and absmax do: NaN operands always make a sum NaN")
        kwargs["nan_propagate"] = True
    _tile_op("reduce_" + reduce_type, [buffer, out], kwargs)
