"""`@T.macro`: a Python function whose body is inlined, statement by statement, where it is
called from a kernel. Arguments are bound as values (buffers, kernel expressions, Python
constants); a `return` at the end of the macro gives the call's value."""

from __future__ import annotations

import functools
import inspect
import sys
from typing import Any, Optional

from ..errors import CompileError
from . import context
from .function import SourceInfo, read_source
from .parser import Env, Parser, _MAX_MACRO_DEPTH, _Scope


class Macro:
    def __init__(self, fn: Any, frame_locals: Optional[dict]):
        self.fn = fn
        self.frame_locals = frame_locals
        self._source: Optional[SourceInfo] = None
        functools.update_wrapper(self, fn)

    def source(self) -> SourceInfo:
        if self._source is None:
            self._source = read_source(self.fn, "T.macro")
        return self._source

    def inline(self, caller: Parser, args: list, kwargs: dict, call_node) -> Any:
        if caller.macro_depth >= _MAX_MACRO_DEPTH:
            raise caller.error(call_node, f"T.macro '{self.__name__}' nests deeper than {_MAX_MACRO_DEPTH} calls",
                               "a macro that calls itself never ends: make the recursion depend on a Python value")
        sig = inspect.signature(self.fn)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise caller.error(call_node, f"T.macro {self.__name__}: {e}", f"signature: {self.__name__}{sig}") from None
        bound.apply_defaults()
        src = self.source()
        sub = Parser(caller.ctx, Env.of_function(self.fn, self.frame_locals), src.filename, src.line_offset,
                     src.col_offset, macro_depth=caller.macro_depth + 1)
        scope = _Scope(ir_frame=False)
        scope.update(bound.arguments)
        sub.scopes = [scope]
        saved_parser, saved_loc = caller.ctx.parser, caller.ctx.loc
        caller.ctx.parser = sub
        try:
            sub.visit_body(src.fdef.body, new_scope=False)
        finally:
            caller.ctx.parser, caller.ctx.loc = saved_parser, saved_loc
        return sub.return_value

    def __call__(self, *args, **kwargs):
        ctx = context.current()
        if ctx is None or ctx.parser is None:
            raise CompileError(f"T.macro '{self.__name__}' can only be called inside a kernel",
                               hint="call it from the body of a @T.prim_func")
        # Called from Python code running during a parse (e.g. a helper function): inline at
        # the current location of the innermost parser.
        parser = ctx.parser
        node = _LocNode(ctx.loc, parser)
        return self.inline(parser, list(args), kwargs, node)

    def __repr__(self) -> str:
        return f"<T.macro {self.__name__}>"


class _LocNode:
    """Stands in for an AST node when a macro is called from Python code during a parse."""

    def __init__(self, loc, parser: Parser):
        self.lineno = max(loc.line - parser.line_offset, 0)
        self.col_offset = max(loc.col - 1 - parser.col_offset, -1)


def macro(fn: Any = None, **options: Any):
    """Decorator: `@T.macro def body(...)` inlines the body where it is called in a kernel."""
    if options:
        raise TypeError(f"T.macro got unsupported option(s): {', '.join(options)}")
    if fn is None:
        return macro
    return Macro(fn, dict(sys._getframe(1).f_locals))
