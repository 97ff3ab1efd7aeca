"""Views of global tensors and T.im2col, written as index arithmetic in the front end.

`T.Tensor(shape, dtype, A.data)` in a kernel: the memory of the global tensor A seen with
another (row-major) shape, e.g. a (KH, KW, C, F) filter as a (KH*KW*C, F) matrix. An element of
the view is the element of A at the same row-major offset. A T.copy with a view on one side is
an element loop (language/global_layout.py). The view must not be larger than A.

`T.im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad)`: fills the (block_M,
block_K) tile `col` with rows nhw_step*block_M + m of the im2col matrix of the NHWC image `img`
(rows: (n, oh, ow); columns: (kh, kw, c)), zeros outside the image (the padding) and past the
matrix's end, as TileLang does for a 2-D convolution.
"""

from __future__ import annotations

from typing import Any

from .. import _tilec
from ..errors import CompileError
from ..frontend import context
from ..frontend.values import Buffer, BufferAccess, const_int, stored_value, to_expr
from .dtypes import dtype_str
from .ops import _loc, primitive


class BufferData:
    """`A.data`: the memory of buffer A (only for `T.Tensor(shape, dtype, A.data)`)."""

    def __init__(self, buffer: Buffer):
        self.buffer = buffer


class GlobalView:
    scope = "global"

    def __init__(self, base: Buffer, shape: list, dtype: str):
        self.base = base
        self.shape = [n if isinstance(n, _tilec.Expr) else int(n) for n in shape]
        self.dtype = dtype
        self.name = base.name
        self.ndim = len(shape)

    def base_indices(self, indices: list) -> list:
        loc = _loc()
        linear = to_expr(indices[0])
        for i, n in zip(indices[1:], self.shape[1:]):
            linear = _tilec.binary("Add", _tilec.binary("Mul", linear, to_expr(n), loc), to_expr(i), loc)
        out = []
        for n in reversed(list(self.base.shape)[1:]):
            out.append(_tilec.binary("FloorMod", linear, to_expr(n), loc))
            linear = _tilec.binary("FloorDiv", linear, to_expr(n), loc)
        out.append(linear)
        return [_tilec.simplify(e) for e in reversed(out)]


class ViewAccess(BufferAccess):
    """`V[i, j]` / `V[i, a:b]` of a GlobalView: an element (read through the base tensor) or the
    start / region of a T.copy (which keeps the view's coordinates)."""

    __slots__ = ()

    def to_load(self):
        if not self.is_point():
            raise CompileError(f"'{self.buffer.name}[...]' of a view with a slice is a region, not a value")
        view = self.buffer
        return _tilec.buffer_load(view.base, view.base_indices([it[1] for it in self.items]), self.loc)

    def to_region(self):
        raise CompileError(f"a region of the view of '{self.buffer.name}' can only be copied with T.copy",
                           hint="or index it element by element inside T.Parallel")


def make_view(shape: Any, dtype: Any, data: BufferData) -> GlobalView:
    base = data.buffer
    if base.scope != "global":
        raise CompileError(f"T.Tensor(shape, dtype, {base.name}.data) views a global tensor; '{base.name}' is in "
                           f"{base.scope}", hint="views of shared or fragment buffers are not supported yet")
    dt = dtype_str(dtype)
    if dt != str(base.dtype):
        raise CompileError(f"a view of '{base.name}' ({base.dtype}) as {dt} is not supported",
                           hint="view a tensor with its own dtype")
    shape = list(shape) if isinstance(shape, (list, tuple)) else [shape]
    return GlobalView(base, shape, dt)


def subscript(view: GlobalView, items: list) -> Any:
    if len(items) != view.ndim:
        raise CompileError(f"the view of '{view.name}' has {view.ndim} dimensions but is indexed with {len(items)}")
    return ViewAccess(view, items, context.loc())


@primitive
def reshape(src: Any, shape: Any):
    """`T.reshape(buf, shape)`: buf's elements under another shape (row-major order kept).
    Fragments and local buffers: a view with the same registers (layouts follow each other);
    shared memory: a buffer of its own over the same bytes (its own layout, as in TileLang);
    global tensors: a view as `T.Tensor(shape, dtype, A.data)`."""
    ctx = context.require("T.reshape")
    if not isinstance(src, Buffer):
        raise CompileError("T.reshape takes a buffer (a T.alloc_fragment / T.alloc_local buffer or a T.Tensor)")
    dims = list(shape) if isinstance(shape, (list, tuple)) else [shape]
    if src.scope == "global":
        return make_view(dims, src.dtype, BufferData(src))
    name = ctx.take_name(f"{src.name}_reshaped")
    return ctx.builder.alloc_view(name, [to_expr(n) for n in dims], src, ctx.loc)


@primitive
def view(src: Any, shape: Any = None, dtype: Any = None):
    """`T.view(buf, shape=..., dtype=...)`: T.reshape when the dtype stays. Another dtype
    reinterprets shared memory (`T.view(KV_shared, shape=[16, D], dtype=T.float32)`: the bf16
    tile's bytes reused as float32 staging): a buffer of its own over the same bytes, the sizes in
    bytes equal; registers and global tensors are not reinterpreted (a CompileError says so)."""
    if not isinstance(src, Buffer):
        raise CompileError("T.view takes a buffer")
    dims = list(src.shape) if shape is None else (list(shape) if isinstance(shape, (list, tuple)) else [shape])
    if dtype is None or dtype_str(dtype) == str(src.dtype):
        return reshape(src, dims)
    if src.scope == "global":
        return make_view(dims, dtype, BufferData(src))  # a CompileError: global views keep the dtype
    ctx = context.require("T.view")
    name = ctx.take_name(f"{src.name}_view")
    return ctx.builder.alloc_view(name, [to_expr(n) for n in dims], src, ctx.loc, dtype_str(dtype))


@primitive
def im2col(img: Any, col: Any, nhw_step: Any, c_step: Any, kernel: Any, stride: Any, dilation: Any, pad: Any,
           eviction_policy: Any = None):
    ctx = context.require("T.im2col")
    if not isinstance(img, Buffer) or img.scope != "global" or img.ndim != 4:
        raise CompileError("T.im2col reads a global NHWC image (a 4-D T.Tensor)")
    if not isinstance(col, Buffer) or col.ndim != 2:
        raise CompileError("T.im2col writes a 2-D tile (block_M, block_K), e.g. a T.alloc_shared buffer")
    K, S, D, P = (const_int(v, f"the {w} of T.im2col") for v, w in
                  ((kernel, "kernel size"), (stride, "stride"), (dilation, "dilation"), (pad, "padding")))
    N, H, W, C = (to_expr(n) for n in img.shape)
    bm, bk = (to_expr(n) for n in col.shape)
    loc = ctx.loc

    def b(kind, x, y):
        return _tilec.binary(kind, to_expr(x), to_expr(y), loc)

    OH = b("Add", b("FloorDiv", b("Sub", b("Add", H, 2 * P), D * (K - 1) + 1), S), 1)
    OW = b("Add", b("FloorDiv", b("Sub", b("Add", W, 2 * P), D * (K - 1) + 1), S), 1)
    m, k = ctx.builder.begin_loop_nest([f"{col.name}_m", f"{col.name}_k"], [bm, bk], "Parallel", loc)
    row = b("Add", b("Mul", nhw_step, bm), m)
    kk = b("Add", b("Mul", c_step, bk), k)
    n = b("FloorDiv", row, b("Mul", OH, OW))
    oh = b("FloorMod", b("FloorDiv", row, OW), OH)
    ow = b("FloorMod", row, OW)
    kh = b("FloorDiv", kk, b("Mul", K, C))
    kw = b("FloorMod", b("FloorDiv", kk, C), K)
    c = b("FloorMod", kk, C)
    ih = b("Sub", b("Add", b("Mul", oh, S), b("Mul", kh, D)), P)
    iw = b("Sub", b("Add", b("Mul", ow, S), b("Mul", kw, D)), P)
    inside = [b("LT", row, b("Mul", N, b("Mul", OH, OW))), b("LT", kk, b("Mul", K * K, C)),
              b("GE", ih, 0), b("LT", ih, H), b("GE", iw, 0), b("LT", iw, W)]
    cond = inside[0]
    for x in inside[1:]:
        cond = b("And", cond, x)
    value = _tilec.buffer_load(img, [_tilec.simplify(e) for e in (n, ih, iw, c)], loc)
    zero = _tilec.cast(img.dtype, to_expr(0), loc)
    ctx.builder.store(col, [m, k], stored_value(col, _tilec.select(_tilec.simplify(cond), value, zero, loc), loc), loc)
    ctx.builder.end_frame()


@primitive
def transpose(src: Any, dst: Any, annotations: Any = None):
    """dst[..., j, i] = src[..., i, j] (TileLang's tile-op transpose of a shared tile): a
    T.Parallel loop over the source's extents, so the copy is spread over the block's threads
    and a shared buffer only such loops touch gets a bank-conflict-free layout (tilec chooses
    it; TileLang's annotations are accepted and have no effect)."""
    from .local_copy import _const, _free_dims, _items

    ctx = context.require("T.transpose")
    sides = []
    for v, what in ((src, "source"), (dst, "destination")):
        got = _items(v)
        if got is None:
            raise CompileError(f"T.transpose: the {what} must be a buffer or a region of one, got {type(v).__name__}")
        free = _free_dims(got[1])
        if free is None:
            raise CompileError(f"T.transpose needs constant extents (the {what} '{got[0].name}')")
        sides.append((got[0], got[1], free))
    (sbuf, s, sfree_dims), (dbuf, d, dfree_dims) = sides
    sfree, dfree = [pos for pos, _ in sfree_dims], [pos for pos, _ in dfree_dims]
    sext, dext = [n for _, n in sfree_dims], [n for _, n in dfree_dims]
    if len(s) < 2 or len(d) < 2:
        raise CompileError("T.transpose needs 2-D (or higher) source and destination regions")
    # The last two dimensions swap; leading ones (extent > 1) pair in order.
    want = sext[:-2] + sext[-2:][::-1] if len(sext) >= 2 else sext
    if len(sext) < 2 or dext != want:
        extents = [[_const(it[2]) if it[0] == "slice" else 1 for it in items] for items in (s, d)]
        raise CompileError(f"T.transpose: the source '{sbuf.name}' has extents {extents[0]} and the destination "
                           f"'{dbuf.name}' {extents[1]}: the destination must be the source with its last two "
                           "dimensions swapped", hint="e.g. (M, N) into (N, M)")
    loc = ctx.loc
    names = [f"{sbuf.name}_t{k}" for k in range(len(sext))]
    loop_vars = ctx.builder.begin_loop_nest(names, [to_expr(n) for n in sext], "Parallel", loc)
    if not isinstance(loop_vars, (list, tuple)):
        loop_vars = [loop_vars]
    dvars = list(loop_vars[:-2]) + [loop_vars[-1], loop_vars[-2]]

    def indices(items: list, free: list, vars_: list) -> list:
        out = [to_expr(item[1]) for item in items]
        for pos, v in zip(free, vars_):
            out[pos] = _tilec.binary("Add", out[pos], v, loc)
        return out

    value = _tilec.buffer_load(sbuf, indices(s, sfree, list(loop_vars)), loc)
    ctx.builder.store(dbuf, indices(d, dfree, dvars), stored_value(dbuf, value, loc), loc)
    ctx.builder.end_frame()
