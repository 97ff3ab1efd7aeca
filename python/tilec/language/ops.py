"""The T primitives that are statements or values: kernels and loops, allocations, tile
ops, math, thread indices (printing and device asserts: debug_ops.py; barriers, warp roles
and clusters: sync.py). Each is a thin mapping onto one builder
call; checking happens in C++ (tile-op schemas, type rules, shape checks)."""

from __future__ import annotations

import builtins
import enum
import numbers
from typing import Any, Optional, Sequence

from .. import _tilec
from ..errors import CompileError
from ..frontend import context
from ..frontend.values import (
    BARRIER_SCOPE,
    BufferAccess,
    const_int,
    is_ir,
    stored_value,
    to_expr,
)
from .dtypes import dtype_str
from .frames import AnnotationFrame, KernelFrame, LoopFrame, make_serial

Buffer = _tilec.Buffer
BufferRegion = _tilec.BufferRegion
Expr = _tilec.Expr


def primitive(fn):
    """Marks a T function: the parser checks its arity and sets the source location first."""
    fn._tilec_primitive = True
    return fn


def _named_primitive(fn, name: str, doc: str):
    """A T primitive made by a factory (one per op name): named and documented as that op."""
    fn.__name__ = name
    fn.__doc__ = doc
    return primitive(fn)


def _loc():
    return context.loc()


# --------------------------------------------------------------------------- kernels, loops


@primitive
def Kernel(*grid, threads: Any = 128, cluster_dims: Any = None, prelude: Any = None, is_cpu: bool = False):
    """`with T.Kernel(gx, gy, threads=128) as (bx, by):` — a kernel launch over a grid."""
    if prelude is not None or is_cpu:
        raise CompileError("T.Kernel(prelude=..., is_cpu=...) is not supported", hint="tilec targets CUDA GPUs")
    if len(grid) == 1 and isinstance(grid[0], (list, tuple)):
        grid = tuple(grid[0])
    return KernelFrame(grid, threads, cluster_dims, _loc())


_ASYNC_LOOP_HINTS = ("parallel_async_without_async_commit_wait", "parallel_prefer_async")


@primitive
def Parallel(*extents, min: Any = None, annotations: Optional[dict] = None,  # noqa: A002 - printed form
             coalesced_width: Any = None, loop_layout: Any = None, prefer_async: bool = False):
    """`for i, j in T.Parallel(M, N):` — iterations distributed over the block's threads.
    `T.Parallel(n, min=lo)` is one loop over [lo, lo + n) (the printer's form). TileLang's
    `prefer_async=True` (lower a copy loop to cp.async) and its async annotations are
    performance hints: accepted; tilec picks the copy instruction itself."""
    if annotations:
        annotations = {k: v for k, v in annotations.items() if k not in _ASYNC_LOOP_HINTS} or None
    if coalesced_width is not None or loop_layout is not None:
        raise CompileError("T.Parallel(coalesced_width=..., loop_layout=...) is not supported yet",
                           hint="remove the keyword; tilec picks the loop layout by layout inference")
    if not extents:
        raise CompileError("T.Parallel needs at least one extent")
    if min is None and not annotations:
        return LoopFrame("Parallel", extents, what="T.Parallel", loc=_loc())
    if len(extents) != 1:
        raise CompileError("T.Parallel(min=..., annotations=...) takes a single extent")
    return LoopFrame("parallel", extents, [0 if min is None else min], annotations=annotations,
                     what="T.Parallel", loc=_loc())


@primitive
def Pipelined(start: Any, stop: Any = None, num_stages: int = 0, order: Optional[Sequence[int]] = None,
              stage: Optional[Sequence[int]] = None, sync: Any = None, group: Any = None, *,
              annotations: Optional[dict] = None):
    """`for k in T.Pipelined(n, num_stages=3):` — a software-pipelined serial loop."""
    if sync is not None or group is not None:
        raise CompileError("T.Pipelined(sync=..., group=...) is not supported yet",
                           hint="use num_stages, order and stage")
    from .frames import _bounds

    lo, extent = _bounds(start, stop, "T.Pipelined")
    stages = const_int(num_stages, "num_stages")
    order = [const_int(x, "order") for x in order] if order is not None else None
    stage = [const_int(x, "stage") for x in stage] if stage is not None else None
    return LoopFrame("Pipelined", [extent], [lo], num_stages=stages, order=order, stage=stage,
                     annotations=annotations, what="T.Pipelined", loc=_loc())


@primitive
def serial(start: Any, stop: Any = None, step: Any = None, *, annotations: Optional[dict] = None):
    return make_serial("serial", "T.serial", start, stop, step, annotations)


@primitive
def unroll(start: Any, stop: Any = None, step: Any = None, *, explicit: bool = False,
           unroll_factor: Any = None, annotations: Optional[dict] = None):
    if explicit or unroll_factor is not None:
        raise CompileError("T.unroll(explicit=..., unroll_factor=...) is not supported yet")
    return make_serial("unroll", "T.unroll", start, stop, step, annotations)


@primitive
def vectorized(start: Any, stop: Any = None, step: Any = None, *, annotations: Optional[dict] = None):
    return make_serial("vectorized", "T.vectorized", start, stop, step, annotations)


@primitive
def thread_binding(start: Any, stop: Any = None, thread: Optional[str] = None, *, annotations: Optional[dict] = None):
    if not isinstance(thread, str) or not thread:
        raise CompileError("T.thread_binding needs thread=\"threadIdx.x\" (or .y / .z)")
    frame = make_serial("thread_binding", "T.thread_binding", start, stop, None, annotations)
    frame.thread_tag = thread
    return frame


def range_loop(*args):
    """Python `range(...)` in a kernel: a serial loop."""
    if not 1 <= len(args) <= 3:
        raise CompileError(f"range expected 1 to 3 arguments, got {len(args)}")
    return make_serial("serial", "range", *args)


# ---------------------------------------------------------------------------- thread indices


@primitive
def get_thread_binding(dim: int = 0):
    ctx = context.require("T.get_thread_binding")
    tvars = ctx.builder.thread_vars()
    d = const_int(dim, "the thread dimension")
    if not 0 <= d < len(tvars):
        raise CompileError(f"T.get_thread_binding({d}): the kernel has {len(tvars)} thread dimension(s)")
    return tvars[d]


@primitive
def get_thread_bindings():
    return list(context.require("T.get_thread_bindings").builder.thread_vars())


@primitive
def get_block_binding(dim: int = 0):
    ctx = context.require("T.get_block_binding")
    if not ctx.kernels:
        raise CompileError("T.get_block_binding used outside T.Kernel")
    bvars = ctx.kernels[-1]
    d = const_int(dim, "the block dimension")
    if not 0 <= d < len(bvars):
        raise CompileError(f"T.get_block_binding({d}): the kernel has {len(bvars)} grid dimension(s)")
    return bvars[d]


@primitive
def get_block_bindings():
    ctx = context.require("T.get_block_bindings")
    if not ctx.kernels:
        raise CompileError("T.get_block_bindings used outside T.Kernel")
    return list(ctx.kernels[-1])


# ------------------------------------------------------------------------------ allocations


def _shape(shape: Any) -> list:
    if isinstance(shape, (list, tuple)):
        return list(shape)
    return [shape]


def _alloc(what: str, default_name: str, shape: Any, dtype: Any, scope: str):
    ctx = context.require(what)
    name = ctx.take_name(default_name)
    return ctx.builder.alloc(name, _shape(shape), dtype_str(dtype), scope, ctx.loc)


@primitive
def alloc_shared(shape: Any, dtype: Any, scope: str = "shared.dyn"):
    return _alloc("T.alloc_shared", "shared", shape, dtype, scope)


@primitive
def alloc_fragment(shape: Any, dtype: Any, scope: str = "local.fragment"):
    ctx = context.current()
    if ctx is not None and scope == "local.fragment" and ctx.pending_name in ctx.scalar_fragments:
        return _alloc("T.alloc_fragment", "fragment", shape, dtype, "local")  # frontend/scalar_fragments.py
    return _alloc("T.alloc_fragment", "fragment", shape, dtype, scope)


@primitive
def alloc_local(shape: Any, dtype: Any, scope: str = "local"):
    return _alloc("T.alloc_local", "local", shape, dtype, scope)


@primitive
def alloc_buffer(shape: Any, dtype: Any, scope: Optional[str] = None):
    ctx = context.current()
    if ctx is not None and not ctx.kernels and scope in (None, "global"):
        # At function level (TVM's default scope is global): a workspace, as T.alloc_global.
        from .sync import alloc_global

        return alloc_global(shape, dtype)
    if scope is None:
        scope = "shared.dyn"
    return _alloc("T.alloc_buffer", "buf", shape, dtype, scope)


@primitive
def alloc_tmem(shape: Any, dtype: Any):
    return _alloc("T.alloc_tmem", "tmem", shape, dtype, "shared.tmem")


@primitive
def alloc_var(dtype: Any, init: Any = None, scope: str = "local.var"):
    """A per-thread scalar variable; read it as `v`, assign it with `v = ...`."""
    ctx = context.require("T.alloc_var")
    buf = _alloc("T.alloc_var", "v", [1], dtype, scope)
    if init is not None:
        ctx.builder.store(buf, [0], stored_value(buf, init, ctx.loc), ctx.loc)
    return buf


# --------------------------------------------------------------------------------- tile ops


class GemmWarpPolicy(enum.Enum):
    """How T.gemm splits the block's warps over the output tile."""

    Square = "Square"
    FullRow = "FullRow"
    FullCol = "FullCol"


_schemas: dict = {}


def _schema(op: str) -> dict:
    if op not in _schemas:
        s = _tilec.tile_op_schema(op)
        if s is None:
            raise CompileError(f"unknown tile op 'T.{op}'")
        _schemas[op] = s
    return _schemas[op]


def _marshal_arg(v: Any, kind: str) -> Any:
    if isinstance(v, (Buffer, BufferRegion)):
        return v
    if isinstance(v, BufferAccess):
        if kind == "region" or not v.is_point():
            return v.to_region()
        return v.to_load()
    if kind == "region" and not is_ir(v) and not isinstance(v, (numbers.Number, str)):
        raise CompileError(f"a {type(v).__name__} is not a buffer or a buffer region",
                           hint="pass a buffer (A_shared) or a region (A[i, j] / A[0:64, k])")
    return to_expr(v)


def _marshal_attr(v: Any) -> Any:
    if isinstance(v, enum.Enum):
        return v.value
    if isinstance(v, Buffer):
        return to_expr(v) if v.scope == BARRIER_SCOPE else v
    if isinstance(v, BufferAccess):
        return v.to_load()
    if isinstance(v, tuple):
        return list(v)
    return v


def _tile_op(op: str, args: Sequence[Any], kwargs: dict, extra_positional: Sequence[str] = ()):
    ctx = context.require(f"T.{op}")
    schema = _schema(op)
    specs = schema["args"]
    args = list(args)
    kwargs = dict(kwargs)
    # TileLang lets some keywords be given positionally (T.gemm(A, B, C, True, False)).
    if len(specs) < len(args) <= len(specs) + len(extra_positional):
        for name, value in zip(extra_positional, args[len(specs):]):
            if name in kwargs:
                raise CompileError(f"T.{op} got multiple values for '{name}'")
            kwargs[name] = value
        args = args[: len(specs)]
    # Positional arguments given by keyword: T.reduce_max(A, out=B).
    for i in range(len(args), len(specs)):
        if specs[i][0] not in kwargs:
            break
        args.append(kwargs.pop(specs[i][0]))
    for a in args:  # a tensor re-indexed by a T.Layout (language/global_layout.py) has no regions
        buf = a if isinstance(a, Buffer) else getattr(a, "buffer", None)
        if isinstance(buf, Buffer) and buf.scope == "global" and getattr(ctx, "global_layouts", None):
            from .global_layout import remapped

            if remapped(buf):
                raise CompileError(f"T.{op} on a region of '{buf.name}', a tensor given a T.Layout, is not supported",
                                   hint="access it element by element (in T.Parallel) or with T.copy")
    tile_args = [_marshal_arg(a, specs[i][1] if i < len(specs) else "region_or_expr") for i, a in enumerate(args)]
    attrs = {k: _marshal_attr(v) for k, v in kwargs.items() if v is not None}
    ctx.builder.tile_op(op, tile_args, attrs, ctx.loc)


@primitive
def copy(src: Any, dst: Any, *args, **kwargs):
    """Copy a region to another (global <-> shared <-> fragment); extents of an all-index
    side (A[i, j]) are taken from the other side."""
    from .global_layout import copy_remapped
    from .local_copy import copy_into_local

    if copy_into_local(src, dst) or copy_remapped(src, dst):
        return
    _tile_op("copy", [src, dst, *args], kwargs, ("coalesced_width", "disable_tma", "eviction_policy"))


@primitive
def tma_copy(src: Any, dst: Any, *args, **kwargs):
    """The producer half of a TMA copy (arrive-expect-tx + load); wait on `barrier` yourself."""
    _tile_op("tma_copy", [src, dst, *args], kwargs, ("barrier", "eviction_policy"))


@primitive
def gemm(A: Any, B: Any, C: Any, *args, **kwargs):
    """C (+)= A @ B on tiles (transpose_A / transpose_B, policy, clear_accum, k_pack, wg_wait)."""
    args = list(args)
    if len(args) >= 4 and "clear_accum" not in kwargs:  # positional: transpose_A, transpose_B, policy, clear_accum
        kwargs["clear_accum"] = args.pop(3)
    if is_ir(kwargs.get("clear_accum")):
        # A condition known only in the kernel (clear_accum=(k == 0)): clear C when it holds, then accumulate.
        ctx = context.require("T.gemm")
        cond, loc = to_expr(kwargs.pop("clear_accum")), ctx.loc
        ctx.builder.begin_if(cond, loc)
        clear(C)
        ctx.builder.end_frame()
        ctx.loc = loc
    _tile_op("gemm", [A, B, C, *args], kwargs,
             ("transpose_A", "transpose_B", "policy", "clear_accum", "k_pack", "wg_wait"))


gemm_v1 = gemm
gemm_v2 = gemm


@primitive
def wgmma_gemm(A: Any, B: Any, C: Any, *args, **kwargs):
    kwargs.setdefault("instruction", "wgmma")
    return gemm(A, B, C, *args, **kwargs)


@primitive
def gemm_sp(A_sparse: Any, E: Any, B: Any, C: Any, *args, **kwargs):
    """C (+)= dense(A) @ B with A 2:4 structured-sparse along K: A_sparse (M, K/2) holds the
    kept values, E (M, K/get_e_factor) the metadata (TileLang's torch_compress format).
    Keywords as TileLang: transpose_A, transpose_E, transpose_B, policy, clear_accum, wg_wait.
    tilec rebuilds dense A in shared memory and runs a dense gemm (no sparse MMA yet)."""
    _tile_op("gemm_sp", [A_sparse, E, B, C, *args], kwargs,
             ("transpose_A", "transpose_E", "transpose_B", "policy", "clear_accum", "wg_wait"))


@primitive
def gemm_sp_v2(A_sparse: Any, E: Any, B: Any, C: Any, *args, **kwargs):
    """T.gemm_sp with TileLang's gemm_sp_v2 positional order (transpose_B before transpose_E)."""
    _tile_op("gemm_sp", [A_sparse, E, B, C, *args], kwargs,
             ("transpose_A", "transpose_B", "transpose_E", "policy", "clear_accum", "k_pack", "wg_wait"))


@primitive
def tcgen05_gemm(*args, **kwargs):
    raise CompileError(
        "T.tcgen05_gemm needs the sm_100 (Blackwell) tcgen05 path, which tilec does not support yet",
        hint="use T.gemm with a T.alloc_fragment accumulator; tilec targets sm_80 and sm_90 today")


@primitive
def fill(buffer: Any, value: Any):
    from .local_copy import fill_local

    if fill_local(buffer, value):
        return
    _tile_op("fill", [buffer, value], {})


@primitive
def clear(buffer: Any):
    from .local_copy import fill_local

    if fill_local(buffer, 0):
        return
    _tile_op("fill", [buffer, 0], {})


def _region_like(point: BufferAccess, other: Any) -> BufferAccess:
    """`point` (all indices) as the region of `other`'s extents, aligned on the last dimensions."""
    if isinstance(other, Buffer):
        extents = [e for e in other.shape]
    elif isinstance(other, BufferRegion):
        extents = [ext for _, ext in other.region]
    else:
        extents = [it[2] if it[0] == "slice" else 1 for it in other.items]
    while len(extents) > 1 and len(extents) > len(point.items):
        if not (isinstance(extents[0], numbers.Integral) and extents[0] == 1 or
                isinstance(extents[0], Expr) and extents[0].as_int() == 1):
            break
        extents = extents[1:]
    lead = len(point.items) - len(extents)
    if lead < 0:
        return point
    items = list(point.items[:lead]) + [("slice", it[1], ext) for it, ext in zip(point.items[lead:], extents)]
    return BufferAccess(point.buffer, items, point.loc)


def _atomic(kind: str):
    def op(dst: Any, value: Any, **kwargs):
        return_prev = bool(kwargs.pop("return_prev", False))
        # Performance options of TileLang's atomics (how, not what): tilec picks the instruction.
        for how in ("use_tma", "memory_order"):
            kwargs.pop(how, None)
        if return_prev:
            return _atomic_returning_prev(kind, dst, value, kwargs)
        # One element updated by a scalar (as TileLang does): a plain atomic call, so it
        # may stand anywhere, a T.Parallel body included. Regions stay tile ops.
        if isinstance(dst, BufferAccess) and dst.is_point() and not kwargs and \
                not isinstance(value, (Buffer, BufferRegion)) and \
                not (isinstance(value, BufferAccess) and not value.is_point()):
            ctx = context.require(f"T.{kind}")
            target = dst.to_load()
            address = _tilec.call("handle", "tl.address_of", [target], ctx.loc)
            value = value.to_load() if isinstance(value, BufferAccess) else to_expr(value)
            value = _tilec.cast(dtype_str(dst.buffer.dtype), value, ctx.loc)
            call = _tilec.call("void", "tl." + kind, [address, value], ctx.loc)
            ctx.builder.evaluate(call, ctx.loc)
            return
        if isinstance(dst, BufferAccess) and dst.is_point() and isinstance(value, (Buffer, BufferRegion, BufferAccess)):
            dst = _region_like(dst, value)  # C[by * 128, bx * 128] += a whole tile, as in T.copy
        from .global_layout import atomic_remapped

        if not kwargs and atomic_remapped(kind, dst, value):
            return
        _tile_op(kind, [dst, value], kwargs)

    return _named_primitive(op, kind, f"T.{kind}(dst, value): element-wise ({kind.split('_')[1]}) atomically, "
                                      "on an element or a region")


def _atomic_returning_prev(kind: str, dst: Any, value: Any, kwargs: dict):
    """`old = T.atomic_add(A[i], v, return_prev=True)`: one element, the value it held before."""
    if not (isinstance(dst, BufferAccess) and dst.is_point()) or kwargs or \
            isinstance(value, (Buffer, BufferRegion)) or (isinstance(value, BufferAccess) and not value.is_point()):
        raise CompileError(f"T.{kind}(return_prev=True) updates one element by a scalar and returns its old value; "
                           "regions cannot return their previous values",
                           hint=f"old = T.{kind}(A[i], v, return_prev=True)")
    ctx = context.require(f"T.{kind}")
    address = _tilec.call("handle", "tl.address_of", [dst.to_load()], ctx.loc)
    value = value.to_load() if isinstance(value, BufferAccess) else to_expr(value)
    value = _tilec.cast(dtype_str(dst.buffer.dtype), value, ctx.loc)
    return _tilec.call(dtype_str(dst.buffer.dtype), "tl." + kind, [address, value], ctx.loc)


atomic_add = _atomic("atomic_add")
atomic_max = _atomic("atomic_max")
atomic_min = _atomic("atomic_min")


# ------------------------------------------------------------------------------------- math


def _call(op: str, *args, dtype: Any = None):
    exprs = [to_expr(a) for a in args]
    return _tilec.call(dtype if dtype is not None else exprs[0].dtype, op, exprs, _loc())


def _math(name: str):
    def fn(x: Any):
        return _call(name, x)

    return _named_primitive(fn, name, f"T.{name}(x), elementwise")


exp = _math("exp")
log10 = _math("log10")
sin = _math("sin")
cos = _math("cos")
floor = _math("floor")
ceil = _math("ceil")
round = _math("round")  # noqa: A001
trunc = _math("trunc")
erf = _math("erf")
exp2 = _math("exp2")
log = _math("log")
log2 = _math("log2")
sqrt = _math("sqrt")
rsqrt = _math("rsqrt")
tanh = _math("tanh")
sigmoid = _math("sigmoid")


def _classify(name: str):
    def fn(x: Any):
        e = to_expr(x)
        t = str(e.dtype)
        if not t.startswith(("float", "bfloat")):
            raise CompileError(f"T.{name} takes a floating-point value, got {t}")
        return _tilec.call("bool", name, [e], _loc())

    return _named_primitive(fn, name, f"T.{name}(x): a bool, elementwise")


isnan = _classify("isnan")
isinf = _classify("isinf")
isfinite = _classify("isfinite")


@primitive
def pow(x: Any, y: Any):  # noqa: A001 - the T name
    ex = to_expr(x)
    ey = _tilec.cast(ex.dtype, to_expr(y), _loc()) if not isinstance(y, Expr) else y
    return _tilec.call(ex.dtype, "pow", [ex, ey], _loc())


_BITWISE = {"and": "tl.bitwise_and", "or": "tl.bitwise_or", "xor": "tl.bitwise_xor",
            "shl": "tl.shift_left", "shr": "tl.shift_right"}


def _widen_integers(a: Expr, b: Expr) -> tuple:
    """Two integer values of different types, brought to one by TVM's rule: the narrower is
    widened; of one width, unsigned wins."""
    if a.dtype == b.dtype:
        return a, b
    a_unsigned, b_unsigned = str(a.dtype).startswith("u"), str(b.dtype).startswith("u")
    if a.dtype.bits < b.dtype.bits or (a.dtype.bits == b.dtype.bits and b_unsigned and not a_unsigned):
        return _tilec.cast(b.dtype, a, _loc()), b
    return a, _tilec.cast(a.dtype, b, _loc())


def bitwise(kind: str, a: Any, b: Any):
    """Integer bit operations on kernel values (`&`, `|`, `^`, `<<`, `>>`)."""
    ea = a if isinstance(a, Expr) else None
    eb = b if isinstance(b, Expr) else None
    # A Python int takes the other operand's integer type.
    if ea is None:
        ea = _tilec.int_imm(int(a), eb.dtype, _loc()) if isinstance(a, numbers.Integral) else to_expr(a)
    if eb is None:
        eb = _tilec.int_imm(int(b), ea.dtype, _loc()) if isinstance(b, numbers.Integral) else to_expr(b)
    if ea.dtype.is_integer() and eb.dtype.is_integer() and ea.dtype != eb.dtype and ea.dtype.lanes == eb.dtype.lanes:
        ea, eb = _widen_integers(ea, eb)  # uint8 >> uint16; uint32 >> int32 (the top-k selector's radix digits)
    if not ea.dtype.is_integer() or ea.dtype != eb.dtype:
        raise CompileError(f"bit operations need two integers of one type, got {ea.dtype} and {eb.dtype}",
                           hint="cast one side with T.cast(x, \"int32\")")
    return _tilec.call(ea.dtype, _BITWISE[kind], [ea, eb], _loc())


def _bit_intrinsic(name: str):
    def fn(a: Any, b: Any):
        ea = to_expr(a) if not isinstance(a, numbers.Integral) or isinstance(b, numbers.Integral) else None
        eb = to_expr(b) if ea is None or not isinstance(b, numbers.Integral) else _tilec.int_imm(int(b), ea.dtype, _loc())
        if ea is None:
            ea = _tilec.int_imm(int(a), eb.dtype, _loc())
        return _tilec.call(ea.dtype, "tl." + name, [ea, eb], _loc())

    return _named_primitive(fn, name, f"T.{name}(a, b) on integers")


bitwise_and = _bit_intrinsic("bitwise_and")
bitwise_or = _bit_intrinsic("bitwise_or")
bitwise_xor = _bit_intrinsic("bitwise_xor")
shift_left = _bit_intrinsic("shift_left")
shift_right = _bit_intrinsic("shift_right")


def bitwise_not(a: Any):
    ea = to_expr(a)
    if not ea.dtype.is_integer():
        raise CompileError(f"'~' needs an integer, got {ea.dtype}")
    return _tilec.call(ea.dtype, "tl.bitwise_not", [ea], _loc())


@primitive
def abs(x: Any):  # noqa: A001 - the T name
    if not is_ir(x):
        return builtins.abs(x)
    return _call("abs", x)


def _fold_binary(kind: str, pyfn, values: Sequence[Any]):
    if len(values) < 2:
        raise CompileError(f"T.{kind.lower()} needs at least two values")
    if not any(is_ir(v) for v in values):
        return pyfn(values)
    acc = to_expr(values[0])
    for v in values[1:]:
        acc = _tilec.binary(kind, acc, to_expr(v), _loc())
    return acc


@primitive
def max(a: Any, b: Any, *more):  # noqa: A001
    return _fold_binary("Max", builtins.max, [a, b, *more])


@primitive
def min(a: Any, b: Any, *more):  # noqa: A001
    return _fold_binary("Min", builtins.min, [a, b, *more])


@primitive
def cast(value: Any, dtype: Any):
    return _tilec.cast(dtype_str(dtype), to_expr(value), _loc())


@primitive
def Cast(dtype: Any, value: Any):
    """TVMScript's argument order: T.Cast(dtype, value)."""
    return cast(value, dtype)


def select_values(cond: Any, true_value: Any, false_value: Any):
    """A Select whose two values get one dtype, as TileLang's if_then_else does: a Python number
    takes the other side's type; int and float mix as the float type."""
    t, f = to_expr(true_value), to_expr(false_value)
    if t.dtype != f.dtype and t.dtype.lanes == f.dtype.lanes:
        python_t, python_f = not is_ir(true_value), not is_ir(false_value)
        if python_t and not python_f:
            t = _tilec.cast(f.dtype, t, _loc())
        elif python_f and not python_t:
            f = _tilec.cast(t.dtype, f, _loc())
        elif t.dtype.is_float() and not f.dtype.is_float():
            f = _tilec.cast(t.dtype, f, _loc())
        elif f.dtype.is_float() and not t.dtype.is_float():
            t = _tilec.cast(f.dtype, t, _loc())
        elif t.dtype.is_integer() and f.dtype.is_integer():
            t, f = _widen_integers(t, f)  # sparse_utils' `if_then_else(c, i, nz_idx[n])`: int32, uint8
    return _tilec.select(to_expr(cond), t, f, _loc())


@primitive
def if_then_else(cond: Any, true_value: Any, false_value: Any):
    if not is_ir(cond):
        return true_value if cond else false_value
    return select_values(cond, true_value, false_value)


Select = if_then_else


@primitive
def infinity(dtype: Any):
    return _tilec.call(dtype_str(dtype), "infinity", [], _loc())


@primitive
def ceildiv(a: Any, b: Any):
    if not is_ir(a) and not is_ir(b):
        if b == 0:
            raise CompileError(f"T.ceildiv({a}, 0): division by zero",
                               hint="a tile size of 0 (e.g. a block_M argument) divides an extent")
        return -(-a // b)
    return _tilec.binary("FloorDiv", _tilec.binary("Sub", _tilec.binary("Add", to_expr(a), to_expr(b), _loc()), 1, _loc()),
                         to_expr(b), _loc())


@primitive
def floordiv(a: Any, b: Any):
    if not is_ir(a) and not is_ir(b):
        return a // b
    return _tilec.binary("FloorDiv", to_expr(a), to_expr(b), _loc())


@primitive
def floormod(a: Any, b: Any):
    if not is_ir(a) and not is_ir(b):
        return a % b
    return _tilec.binary("FloorMod", to_expr(a), to_expr(b), _loc())


@primitive
def truncdiv(a: Any, b: Any):
    if not is_ir(a) and not is_ir(b):
        q = builtins.abs(a) // builtins.abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    return _tilec.binary("Div", to_expr(a), to_expr(b), _loc())


@primitive
def truncmod(a: Any, b: Any):
    if not is_ir(a) and not is_ir(b):
        return a - truncdiv(a, b) * b
    return _tilec.binary("Mod", to_expr(a), to_expr(b), _loc())


@primitive
def Ramp(base: Any, stride: Any, lanes: int):
    return _tilec.ramp(to_expr(base), to_expr(stride), const_int(lanes, "lanes"), _loc())


@primitive
def Broadcast(value: Any, lanes: int):
    return _tilec.broadcast(to_expr(value), const_int(lanes, "lanes"), _loc())


@primitive
def call_intrin(dtype: Any, op: str, *args):
    return _tilec.call(dtype_str(dtype), op, [to_expr(a) for a in args], _loc())


@primitive
def evaluate(value: Any):
    ctx = context.require("T.evaluate")
    if value is None:  # a primitive that emitted its statements itself (T.tvm_thread_allreduce)
        return
    ctx.builder.evaluate(to_expr(value), ctx.loc)


@primitive
def func_attr(attrs: dict):
    """Function attributes (the printer's first body line)."""
    ctx = context.require("T.func_attr")
    if not isinstance(attrs, dict):
        raise CompileError("T.func_attr takes a dict {name: value}")
    ctx.func_attrs.update({k: _marshal_attr(v) for k, v in attrs.items()})


# ------------------------------------------------------------------------------ annotations


@primitive
def annotate_layout(layout_map: dict):
    """Fixes the layouts of buffers: `T.annotate_layout({A_shared: layout})`."""
    if not isinstance(layout_map, dict):
        raise CompileError("T.annotate_layout takes a dict {buffer: layout}")
    for k, v in layout_map.items():
        if not isinstance(k, Buffer) or not isinstance(v, _tilec.Layout):
            raise CompileError("T.annotate_layout takes a dict {buffer: T.Layout(...) / T.Fragment(...)}",
                               hint="swizzle helpers such as make_swizzled_layout are not available yet")
    from .global_layout import register

    for k in [k for k in layout_map if k.scope == "global"]:  # re-indexes the tensor in the front end
        register(k, layout_map[k])
    layout_map = {k: v for k, v in layout_map.items() if k.scope != "global"}
    if not layout_map:
        return None
    return AnnotationFrame("layout_map", layout_map)


@primitive
def use_swizzle(panel_size: Any, order: str = "row", enable: bool = True):
    """Rasterises the grid in panels of `panel_size` blocks for L2 reuse."""
    if not enable:
        return None
    ctx = context.current()
    if ctx is not None and ctx.kernels and len(ctx.kernels[-1]) != 2:
        # tilec rasterizes 2-D grids; elsewhere the hint is dropped (it never changes results)
        return None
    if order != "row":
        raise CompileError(f"T.use_swizzle(order={order!r}) is not supported yet", hint="order='row'")
    return AnnotationFrame("use_swizzle", const_int(panel_size, "panel_size"))


@primitive
def annotate(key: str, value: Any):
    if not isinstance(key, str):
        raise CompileError("T.annotate takes a string key")
    return AnnotationFrame(key, _marshal_attr(value))


@primitive
def clamp(x: Any, lo: Any, hi: Any):
    """min(max(x, lo), hi)."""
    return min(max(x, lo), hi)


@primitive
def assume(cond: Any):
    """A fact the compiler may use (TileLang: T.assume). tilec does not use it yet: no IR."""
    context.require("T.assume")
