"""A `T.Layout` given to a global tensor with `T.annotate_layout` (TileLang's FlashAttention
backward stores dQ in an atomic-friendly order this way): the tensor's elements live where the
layout sends them. The front end re-indexes every access of that tensor after the annotation:
logical A[i...] is element `linear(layout(i...))` of A's memory in row-major order (so the kernel
that writes A and the one that reads it back agree when both annotate the same layout). A T.copy
with such a tensor on one side becomes an element loop. The layout must be a bijection onto as
many elements as the tensor has (checked from its outputs' ranges)."""

from __future__ import annotations

from typing import Any

from .. import _tilec
from ..errors import CompileError
from ..frontend import context
from ..frontend.values import Buffer, BufferAccess, stored_value, to_expr


class _Range:
    """[lo, hi] of an integer expression of the layout's inputs (enough for +, -, *, //, % by
    constants, the forms layouts are written in)."""

    def __init__(self, lo: int, hi: int):
        self.lo, self.hi = lo, hi

    @staticmethod
    def of(v: Any) -> "_Range":
        if isinstance(v, _Range):
            return v
        if isinstance(v, int):
            return _Range(v, v)
        raise TypeError("not a range")

    def __add__(self, o):
        o = _Range.of(o)
        return _Range(self.lo + o.lo, self.hi + o.hi)

    __radd__ = __add__

    def __sub__(self, o):
        o = _Range.of(o)
        return _Range(self.lo - o.hi, self.hi - o.lo)

    def __rsub__(self, o):
        return _Range.of(o) - self

    def __mul__(self, o):
        o = _Range.of(o)
        c = [self.lo * o.lo, self.lo * o.hi, self.hi * o.lo, self.hi * o.hi]
        return _Range(min(c), max(c))

    __rmul__ = __mul__

    def __floordiv__(self, o):
        if not isinstance(o, int) or o <= 0:
            raise TypeError("division by a non-constant")
        return _Range(self.lo // o, self.hi // o)

    def __mod__(self, o):
        if not isinstance(o, int) or o <= 0:
            raise TypeError("modulo by a non-constant")
        if self.lo >= 0 and self.hi < o:
            return self
        return _Range(0, o - 1)


def _static_shape(buf: Buffer) -> list:
    out = []
    for n in buf.shape:
        v = n if isinstance(n, int) else n.as_int()
        if v is None:
            raise CompileError(f"a T.Layout on the global tensor '{buf.name}' needs its shape to be constant")
        out.append(v)
    return out


def register(buf: Buffer, layout: Any) -> None:
    from .layout import FORWARD_FNS

    ctx = context.require("T.annotate_layout")
    entry = FORWARD_FNS.get(id(layout))
    if entry is None or entry[0] is not layout or _is_fragment(layout):
        raise CompileError(f"the layout of the global tensor '{buf.name}' must be a T.Layout(shape, lambda ...)",
                           hint="T.Fragment layouts are for fragments")
    fn = entry[1]
    shape = _static_shape(buf)
    try:
        outs = fn(*[_Range(0, n - 1) for n in shape])
    except TypeError:
        raise CompileError(f"the layout of the global tensor '{buf.name}' must use +, -, * and // or % by "
                           "constants of its indices") from None
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    extents = []
    for o in outs:
        r = _Range.of(o)
        if r.lo < 0:
            raise CompileError(f"the layout of the global tensor '{buf.name}' has a negative output")
        extents.append(r.hi + 1)
    total = 1
    for n in shape:
        total *= n
    image = 1
    for n in extents:
        image *= n
    if image != total:
        raise CompileError(f"the layout of the global tensor '{buf.name}' maps its {total} elements onto "
                           f"{image} places (output extents {extents}); it must be a bijection",
                           hint="give a layout whose outputs enumerate exactly the tensor's elements")
    if not hasattr(ctx, "global_layouts"):
        ctx.global_layouts = {}
    ctx.global_layouts[buf.name] = (buf, fn, extents, shape)


def _entry(buf: Buffer):
    if not isinstance(buf, Buffer):
        return None
    ctx = context.current()
    table = getattr(ctx, "global_layouts", None) if ctx is not None else None
    if not table or buf.name not in table:
        return None
    entry = table[buf.name]
    return entry if entry[0].same_as(buf) else None


def remapped(buf: Buffer) -> bool:
    return _entry(buf) is not None


def remap(buf: Buffer, indices: list) -> list:
    """The indices of buf's memory that logical element buf[indices] lives at."""
    _, fn, extents, shape = _entry(buf)
    loc = context.loc()
    outs = fn(*[to_expr(i) for i in indices])
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    linear = to_expr(outs[0])
    for o, n in zip(outs[1:], extents[1:]):
        linear = _tilec.binary("Add", _tilec.binary("Mul", linear, to_expr(n), loc), to_expr(o), loc)
    out = []
    for n in reversed(shape[1:]):
        out.append(_tilec.binary("FloorMod", linear, to_expr(n), loc))
        linear = _tilec.binary("FloorDiv", linear, to_expr(n), loc)
    out.append(linear)
    return [_tilec.simplify(e) for e in reversed(out)]


def remap_access(access: BufferAccess) -> BufferAccess:
    """An element access of a re-indexed tensor, re-indexed (slices are left to T.copy)."""
    if not remapped(access.buffer) or not access.is_point():
        return access
    return BufferAccess(access.buffer, [("index", e) for e in remap(access.buffer, [i[1] for i in access.items])],
                        access.loc)


def _region(v: Any):
    from .views import GlobalView, ViewAccess

    if isinstance(v, GlobalView):
        return v, [("slice", 0, n) for n in v.shape]
    if isinstance(v, ViewAccess):
        return v.buffer, list(v.items)
    if isinstance(v, Buffer):
        return v, [("slice", 0, n) for n in v.shape]
    if isinstance(v, BufferAccess):
        return v.buffer, list(v.items)
    return None, None


def copy_remapped(src: Any, dst: Any) -> bool:
    """T.copy with a re-indexed tensor on either side: an element loop (T.Parallel) over the
    region, guarded by the tensors' bounds. Returns False when neither side is re-indexed."""
    return _element_loop(src, dst, "T.copy", None)


def atomic_remapped(kind: str, dst: Any, value: Any) -> bool:
    """T.atomic_add/max/min of a region into a re-indexed tensor: one atomic per element, in an
    element loop as for T.copy. Returns False when the destination is not re-indexed."""
    d = _region(dst)[0]
    if d is None or not remapped(d) or not isinstance(value, (Buffer, BufferAccess)):
        return False
    return _element_loop(value, dst, f"T.{kind}", kind)


def _element_loop(src: Any, dst: Any, what: str, atomic: Any) -> bool:
    from .views import GlobalView

    (sbuf, sitems), (dbuf, ditems) = _region(src), _region(dst)
    special = [b for b in (sbuf, dbuf) if isinstance(b, GlobalView) or (b is not None and remapped(b))]
    if sbuf is None or dbuf is None or not special:
        return False
    ctx = context.require(what)
    loc = ctx.loc

    def free(items):
        return [(d, it[2]) for d, it in enumerate(items) if it[0] == "slice" and
                not (isinstance(it[2], int) and it[2] == 1 or isinstance(it[2], _tilec.Expr) and it[2].as_int() == 1)]

    sfree, dfree = free(sitems), free(ditems)
    # An all-index side (A[i, j]) takes its extents from the other side, on its last dimensions.
    for items, other, side in ((sitems, dfree, "s"), (ditems, sfree, "d")):
        if other and all(it[0] == "index" for it in items) and len(items) >= len(other):
            first = len(items) - len(other)
            items[first:] = [("slice", items[first + k][1], n) for k, (_, n) in enumerate(other)]
            if side == "s":
                sfree = free(sitems)
            else:
                dfree = free(ditems)
    if len(sfree) != len(dfree):
        raise CompileError(f"{what} between '{sbuf.name}' and '{dbuf.name}' (a tensor with a T.Layout): the regions "
                           "have different numbers of dimensions", hint="give both sides as slices of one shape")
    extents = [to_expr(n) for _, n in dfree]
    names = [f"{dbuf.name}_c{k}" for k in range(len(extents))]
    loop_vars = ctx.builder.begin_loop_nest(names, extents, "Parallel", loc)

    def indices(items, freedims):
        out = [to_expr(it[1]) for it in items]
        for (d, _), v in zip(freedims, loop_vars):
            out[d] = _tilec.binary("Add", out[d], v, loc)
        return out

    sidx, didx = indices(sitems, sfree), indices(ditems, dfree)
    conds = []
    for buf, idx in ((sbuf, sidx), (dbuf, didx)):
        if buf.scope == "global":
            conds += [_tilec.binary("LT", i, to_expr(n), loc) for i, n in zip(idx, buf.shape)]
    cond, seen = None, set()
    for c in conds:
        c = _tilec.simplify(c)
        if (c.kind == "IntImm" and repr(c) == "True") or repr(c) in seen:  # proven in bounds, or already there
            continue
        seen.add(repr(c))
        cond = c if cond is None else _tilec.binary("And", cond, c, loc)
    if cond is not None:
        ctx.builder.begin_if(cond, loc)
    if isinstance(sbuf, GlobalView):
        sbuf, sidx = sbuf.base, sbuf.base_indices(sidx)
    if isinstance(dbuf, GlobalView):
        dbuf, didx = dbuf.base, dbuf.base_indices(didx)
    if remapped(sbuf):
        sidx = remap(sbuf, sidx)
    if remapped(dbuf):
        didx = remap(dbuf, didx)
    value = _tilec.buffer_load(sbuf, sidx, loc)
    if atomic is None:
        ctx.builder.store(dbuf, didx, stored_value(dbuf, value, loc), loc)
    else:
        address = _tilec.call("handle", "tl.address_of", [_tilec.buffer_load(dbuf, didx, loc)], loc)
        ctx.builder.evaluate(_tilec.call("void", "tl." + atomic, [address, stored_value(dbuf, value, loc)], loc), loc)
    if cond is not None:
        ctx.builder.end_frame()
    ctx.builder.end_frame()
    return True


def _is_fragment(layout: Any) -> bool:
    flag = layout.is_fragment
    return bool(flag() if callable(flag) else flag)
