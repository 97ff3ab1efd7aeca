"""T.print and T.device_assert: device-side output and checks (split from ops.py)."""

from __future__ import annotations

import os
from typing import Any

from .. import _tilec
from ..errors import CompileError
from ..frontend import context
from ..frontend.values import BARRIER_SCOPE, to_expr
from .ops import Buffer, primitive


def _print_buffer(ctx, buf, msg: str) -> None:
    loc = ctx.loc
    if buf.scope == BARRIER_SCOPE:
        raise CompileError(f"T.print cannot print the barriers '{buf.name}'", hint="print values, not mbarriers")
    names = [f"{buf.name}_i{d}" for d in range(buf.ndim)]
    idx = ctx.builder.begin_loop_nest(names, [to_expr(e) for e in buf.shape], "Parallel", loc)
    label = f"{msg + ' ' if msg else ''}{buf.name}[{', '.join('ijklmn'[:buf.ndim])}]"
    args = [_tilec.string_imm(label, loc), *idx, _tilec.string_imm("=", loc), _tilec.buffer_load(buf, list(idx), loc)]
    ctx.builder.evaluate(_tilec.call("void", "print", args, loc), loc)
    ctx.builder.end_frame()


@primitive
def device_assert(cond: Any, msg: str = ""):
    """Checks `cond` on the device (every thread that runs it); when it fails the kernel traps
    after printing the source line, `msg`, and the failing block and thread (the launch then
    reports an error). On target="cpu" a failing check raises."""
    ctx = context.require("T.device_assert")
    if not isinstance(msg, str):
        raise CompileError(f"T.device_assert: msg must be a string, got {type(msg).__name__}",
                           hint='T.device_assert(i < n, "i in range")')
    loc = ctx.loc
    where = f"{os.path.basename(loc.file) if loc.file else '?'}:{loc.line}"
    ctx.builder.evaluate(_tilec.call("void", "device_assert", [to_expr(cond), _tilec.string_imm(msg, loc),
                                                               _tilec.string_imm(where, loc)], loc), loc)


@primitive
def print(*values, msg: str = ""):  # noqa: A001 - the T name
    """Prints values from the device (every thread that runs it). `T.print(buffer)` prints every
    element of a fragment, shared, local or global buffer with its indices, each element by
    the thread that holds it (a T.Parallel nest over the buffer's shape)."""
    ctx = context.require("T.print")
    if len(values) == 1 and isinstance(values[0], Buffer):
        return _print_buffer(ctx, values[0], msg)
    args = [to_expr(v) for v in values]
    if msg:
        args.append(_tilec.string_imm(msg, ctx.loc))
    ctx.builder.evaluate(_tilec.call("void", "print", args, ctx.loc), ctx.loc)
