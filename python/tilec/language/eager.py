"""The T primitives of eager-style jit functions (frontend/eager.py): `T.const` sizes,
`T.empty` outputs, and the options a body can set for its own compilation
(`T.annotate_pass_configs`, `T.annotate_compile_flags`). `T.empty` also works in a
`@T.prim_func`: the function then returns its outputs (`return C`)."""

from __future__ import annotations

from typing import Any

from ..errors import CompileError
from ..frontend import context
from .dtypes import dtype_str
from .ops import primitive


@primitive
def const(names: str, dtype: Any = "int32"):
    """`M, N = T.const("M, N")`: sizes of an eager jit function, specialised per call."""
    from ..frontend.eager import split_const_names

    ctx = context.current()
    if ctx is None or ctx.eager is None:
        raise CompileError("T.const can only be used in the body of an eager @tilelang.jit function",
                           hint="in a T.prim_func use a jit factory parameter, or T.dynamic(\"M\") for a size "
                                "bound at launch")
    split = split_const_names(names)
    values = tuple(ctx.eager.const(n, dtype_str(dtype)) for n in split)
    return values[0] if len(values) == 1 else values


@primitive
def empty(*shape, dtype: Any = "float32"):
    """`C = T.empty((M, N), dtype)`: an output tensor, allocated by the call and returned."""
    ctx = context.require("T.empty")
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = tuple(shape[0])
    elif len(shape) == 2 and isinstance(shape[0], (list, tuple)):
        shape, dtype = tuple(shape[0]), shape[1]
    if not shape:
        raise CompileError("T.empty needs a shape", hint="C = T.empty((M, N), dtype)")
    if ctx.builder.depth != 1:
        raise CompileError("T.empty declares an output of the function: use it at the top of the body, "
                           "outside T.Kernel and loops")
    name = ctx.take_name(f"out{len(ctx.outputs)}")
    buf = ctx.builder.tensor(name, list(shape), dtype_str(dtype), None, ctx.loc)
    ctx.outputs.append(buf)
    return buf


@primitive
def annotate_pass_configs(configs: dict):
    """Pass configs for this function's compilation (options given to jit/compile win)."""
    ctx = context.require("T.annotate_pass_configs")
    if not isinstance(configs, dict):
        raise CompileError("T.annotate_pass_configs takes a dict {key: value}")
    for k, v in configs.items():
        if not isinstance(v, (bool, int, float, str)):
            raise CompileError(f"pass config {k!r}: a value must be a bool, int, float or str, got {type(v).__name__}")
        ctx.pass_configs[str(getattr(k, "value", k))] = v


@primitive
def annotate_compile_flags(flags: Any):
    """Extra device compiler flags for this function (added to those given to jit/compile)."""
    ctx = context.require("T.annotate_compile_flags")
    flags = [flags] if isinstance(flags, str) else list(flags)
    ctx.compile_flags.extend(str(f) for f in flags)
