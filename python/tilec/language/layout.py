"""Layouts written by hand: ``T.Layout(shape, lambda i, j: [index])`` and
``T.Fragment(shape, forward_thread=lambda i, j: t, forward_index=lambda i, j: [k], replicate=R)``
(a third lambda parameter `rep` in forward_thread when R > 1). The lambdas are called once
with fresh index variables; the expressions they return are the layout."""

from __future__ import annotations

import inspect
from typing import Any, Callable, Optional, Sequence

from .. import _tilec
from ..errors import CompileError
from ..frontend import context
from ..frontend.values import const_int, to_expr
from .ops import primitive


def _param_names(fn: Callable) -> list:
    names = getattr(fn, "param_names", None)
    if names is not None:
        return list(names)
    try:
        return [p.name for p in inspect.signature(fn).parameters.values()]
    except (TypeError, ValueError):
        raise CompileError("a layout function must be a lambda or a Python function") from None


def _shape(shape: Any) -> list:
    return list(shape) if isinstance(shape, (list, tuple)) else [shape]


def _index_list(v: Any) -> list:
    return [to_expr(x) for x in v] if isinstance(v, (list, tuple)) else [to_expr(v)]


def _vars_for(fn: Callable, ndim: int, what: str, allow_rep: bool = False):
    names = _param_names(fn)
    if len(names) != ndim and not (allow_rep and len(names) == ndim + 1):
        raise CompileError(f"{what} over {ndim} dimension(s) takes a function of {ndim} index variable(s), "
                           f"got one of {len(names)}",
                           hint="lambda i, j: [...] for a 2-D shape")
    loc = context.loc()
    return [_tilec.var(n, "int32", loc) for n in names]


@primitive
def Layout(shape: Any, forward_fn: Callable) -> "_tilec.Layout":
    shape = _shape(shape)
    vs = _vars_for(forward_fn, len(shape), "T.Layout")
    index = _index_list(forward_fn(*vs))
    layout = _tilec.make_layout([to_expr(s) for s in shape], vs, index)
    FORWARD_FNS[id(layout)] = (layout, forward_fn)  # a layout given to a global tensor re-indexes it
    return layout


# id(layout) -> (layout, its Python forward function), for language/global_layout.py.
FORWARD_FNS: dict = {}


@primitive
def Fragment(shape: Any, forward_thread: Optional[Callable] = None, forward_index: Optional[Callable] = None,
             replicate: Any = 1, *, forward_fn: Optional[Callable] = None, forward_thread_fn: Optional[Callable] = None,
             forward_index_fn: Optional[Callable] = None) -> "_tilec.Layout":
    shape = _shape(shape)
    forward_thread = forward_thread or forward_thread_fn
    forward_index = forward_index or forward_index_fn
    rep = const_int(replicate, "replicate")
    if forward_fn is not None:  # TileLang: thread, index = forward_fn(*index_vars[, rep])
        if forward_thread is not None or forward_index is not None:
            raise CompileError("T.Fragment takes forward_fn or forward_thread / forward_index, not both")
        fvars = _vars_for(forward_fn, len(shape), "T.Fragment forward_fn", allow_rep=rep > 1)
        result = forward_fn(*fvars)
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            raise CompileError("T.Fragment forward_fn returns (thread, index), e.g. lambda i, j: (i // 2, [j])")
        return _tilec.make_fragment([to_expr(s) for s in shape], fvars[: len(shape)], _index_list(result[1]),
                                    to_expr(result[0]), rep if rep != 1 else None,
                                    fvars[len(shape)] if len(fvars) > len(shape) else None)
    if forward_thread is None:
        raise CompileError("T.Fragment needs forward_thread=lambda i, j: thread")
    tvars = _vars_for(forward_thread, len(shape), "T.Fragment forward_thread", allow_rep=rep > 1)
    rep_var = tvars[len(shape)] if len(tvars) > len(shape) else None
    thread = to_expr(forward_thread(*tvars))
    ivars = tvars[: len(shape)]
    if forward_index is not None:
        # The index function gets the same variables, so both maps share one input space.
        if len(_param_names(forward_index)) != len(shape):
            raise CompileError(f"T.Fragment forward_index over {len(shape)} dimension(s) takes {len(shape)} index variable(s)")
        index = _index_list(forward_index(*ivars))
    else:
        index = []
    return _tilec.make_fragment([to_expr(s) for s in shape], ivars, index, thread,
                                rep if rep != 1 else None, rep_var)


Layout._tilec_takes_callables = True  # type: ignore[attr-defined]
Fragment._tilec_takes_callables = True  # type: ignore[attr-defined]
