"""Frames: the T constructs that open a scope — `with T.Kernel(...)`, `with T.ws(...)`,
`for ... in T.Parallel/T.Pipelined/T.serial/...`, and annotations (`T.annotate_layout`,
`T.use_swizzle`, `T.annotate`), which written as a statement apply to the rest of the
enclosing block. The parser calls begin()/end(); each maps to one builder frame."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from .. import _tilec
from ..errors import CompileError
from ..frontend import context
from ..frontend.values import const_int, extent_between, is_ir, to_expr


class Frame:
    """Base class of everything the parser accepts after `with` (or `for ... in`)."""

    # Annotation frames may also be written as a statement: they then cover the rest
    # of the enclosing block.
    implicit_ok = False

    def begin(self, ctx: context.ParseContext) -> Any:
        raise NotImplementedError

    def end(self, ctx: context.ParseContext) -> None:
        ctx.builder.end_frame()


class KernelFrame(Frame):
    def __init__(self, grid: Sequence[Any], threads: Any, cluster_dims: Any, loc):
        self.grid = list(grid)
        self.threads = threads
        self.cluster_dims = cluster_dims
        self.loc = loc

    def begin(self, ctx):
        if not self.grid:
            raise CompileError("T.Kernel needs at least one grid extent", hint="write T.Kernel(gx[, gy[, gz]], threads=...)")
        grid = [to_expr(g) for g in self.grid]
        threads = _int_tuple(self.threads, "threads")
        cluster = _int_tuple(self.cluster_dims, "cluster_dims") if self.cluster_dims is not None else []
        block_vars = ctx.builder.begin_kernel(grid, threads, cluster, self.loc)
        ctx.kernels.append(block_vars)
        ctx.kernel_threads = threads  # the block's extents (T.tvm_thread_allreduce reads them)
        return block_vars

    def end(self, ctx):
        ctx.builder.end_frame()
        ctx.kernels.pop()


def _int_tuple(v: Any, what: str) -> list:
    if isinstance(v, (list, tuple)):
        return [const_int(x, f"T.Kernel {what}") for x in v]
    return [const_int(v, f"T.Kernel {what}")]


class LoopFrame(Frame):
    """A `for` iterable. `names` come from the loop target."""

    def __init__(self, kind: str, extents: Sequence[Any], mins: Optional[Sequence[Any]] = None,
                 num_stages: int = 0, order=None, stage=None, annotations=None, thread_tag: str = "",
                 what: str = "T.serial", loc=None):
        self.kind = kind
        self.extents = list(extents)
        self.mins = list(mins) if mins is not None else [0] * len(self.extents)
        self.num_stages = num_stages
        self.order = order
        self.stage = stage
        self.annotations = annotations
        self.thread_tag = thread_tag
        self.what = what
        self.loc = loc

    @property
    def arity(self) -> int:
        return len(self.extents)

    def begin_loops(self, ctx, names: Sequence[str]) -> list:
        if len(names) != self.arity:
            raise CompileError(
                f"{self.what} over {self.arity} extent(s) binds {len(names)} loop variable(s)",
                hint="name one loop variable per extent, e.g. `for i, j in T.Parallel(M, N):`",
            )
        if self.kind == "Parallel":
            return ctx.builder.begin_loop_nest(list(names), [to_expr(e) for e in self.extents], "Parallel", self.loc)
        v = ctx.builder.begin_for(
            names[0], to_expr(self.mins[0]), to_expr(self.extents[0]), self.kind, self.num_stages,
            self.order, self.stage, self.annotations, self.thread_tag, self.loc)
        return [v]

    def end_loops(self, ctx) -> None:
        ctx.builder.end_frame()


def _bounds(start: Any, stop: Any, what: str):
    """(min, extent) of `start, stop` loop arguments; `stop=None` means 0..start."""
    if stop is None:
        return 0, start
    return start, extent_between(start, stop)


def _check_step(step: Any, what: str) -> None:
    if step is None:
        return
    if is_ir(step) or step != 1:
        raise CompileError(f"{what} with a step is not supported", hint="loop over the count and scale the index in the body")


def make_serial(kind: str, what: str, start: Any, stop: Any = None, step: Any = None, annotations=None) -> LoopFrame:
    _check_step(step, what)
    lo, extent = _bounds(start, stop, what)
    return LoopFrame(kind, [extent], [lo], annotations=annotations, what=what, loc=context.loc())


class AnnotationFrame(Frame):
    """An Annotate node: `T.annotate_layout({...})`, `T.use_swizzle(...)`, `T.ws(...)`, `T.annotate(k, v)`."""

    def __init__(self, key: str, value: Any, implicit_ok: bool = True):
        self.key = key
        self.value = value
        self.implicit_ok = implicit_ok
        self.loc = context.loc()

    def begin(self, ctx):
        ctx.builder.begin_annotate(self.key, self.value, self.loc)
        return None
