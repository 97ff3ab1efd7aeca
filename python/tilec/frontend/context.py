"""The parse context: which builder the T primitives append to, and where in the user's
source the parser currently is (so every IR node gets the user's file:line:col)."""

from __future__ import annotations

import threading
from typing import Optional

from .. import _tilec
from ..errors import CompileError


class ParseContext:
    """State shared by the AST walker and the T primitives while one function is parsed."""

    def __init__(self, builder: "_tilec.Builder", filename: str):
        self.builder = builder
        self.filename = filename
        self.loc = _tilec.SourceLoc(filename, 0, 0)
        # Block variables of the open T.Kernel frames, innermost last.
        self.kernels: list[list] = []
        # The name being assigned (`A_shared = T.alloc_shared(...)` names the buffer).
        self.pending_name: Optional[str] = None
        self.parser = None  # the innermost Parser (set by the parser)
        self.func_attrs: dict = {}  # T.func_attr({...})
        self.eager = None  # frontend.eager.EagerState while an eager jit function is parsed
        self.outputs: list = []  # T.empty tensors, in creation order
        self.returned_outputs: Optional[list] = None  # what the function's `return` names
        self.pass_configs: dict = {}  # T.annotate_pass_configs
        self.compile_flags: list = []  # T.annotate_compile_flags
        self.scalar_fragments: set = set()  # fragments allocated as local (frontend/scalar_fragments.py)
        self.let_values: list = []  # (let variable, its value), so `lo:hi` sees hi = lo + n

    def take_name(self, default: str) -> str:
        name, self.pending_name = self.pending_name, None
        return name or default


_local = threading.local()


def _stack() -> list:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def push(ctx: ParseContext) -> None:
    _stack().append(ctx)


def pop() -> None:
    _stack().pop()


def current() -> Optional[ParseContext]:
    s = _stack()
    return s[-1] if s else None


def require(what: str) -> ParseContext:
    """The active context, or a CompileError saying `what` needs a kernel."""
    ctx = current()
    if ctx is None:
        raise CompileError(
            f"{what} can only be used inside a kernel",
            hint="call it in the body of a @T.prim_func (or a T.macro called from one)",
        )
    return ctx


def let_value(v):
    """The value a let variable was bound to in the kernel being parsed, else None."""
    ctx = current()
    if ctx is None:
        return None
    for var, value in reversed(ctx.let_values):
        if var.same_as(v):
            return value
    return None


def loc() -> "_tilec.SourceLoc":
    ctx = current()
    return ctx.loc if ctx is not None else _tilec.SourceLoc("", 0, 0)
