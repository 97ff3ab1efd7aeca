"""Parsing whole functions: `@T.prim_func` on a Python function, and function definitions in
T-script text. Both end in `build_function`, which declares the parameters, walks the body
and verifies the result."""

from __future__ import annotations

import ast
import inspect
import sys
from typing import Any, Optional

from .. import _tilec
from ..errors import CompileError
from . import context, scalar_fragments
from .parser import Env, Parser


class SourceInfo:
    """The parsed source of a Python function and how to map its positions back to the file."""

    def __init__(self, fdef: ast.FunctionDef, filename: str, line_offset: int, col_offset: int):
        self.fdef = fdef
        self.filename = filename
        self.line_offset = line_offset
        self.col_offset = col_offset


def read_source(fn: Any, what: str) -> SourceInfo:
    try:
        lines, start = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    except (OSError, TypeError):
        raise CompileError(
            f"cannot read the source of {what} '{getattr(fn, '__name__', fn)}'",
            hint="define kernels in a file (not in an interactive prompt), or use tilec.from_script(text)",
        ) from None
    first = lines[0]
    indent = first[: len(first) - len(first.lstrip())]
    dedented = [line[len(indent):] if line.startswith(indent) else line for line in lines]
    tree = ast.parse("".join(dedented), filename=filename)
    fdef = tree.body[0]
    if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise CompileError(f"{what} must decorate a function definition")
    return SourceInfo(fdef, filename, start - 1, len(indent))


def build_function(fdef: ast.FunctionDef, env: Env, filename: str, line_offset: int = 0, col_offset: int = 0,
                   annotations: Optional[dict] = None) -> "_tilec.PrimFunc":
    """Parses one function definition into a PrimFunc. `annotations`: the function's evaluated
    parameter annotations (from `fn.__annotations__`); None evaluates them from the AST."""
    from ..language.dtypes import DType, dtype_str
    from ..language.pointers import is_pointer_annotation
    from ..language.tensor import TensorSpec

    builder = _tilec.Builder(fdef.name, _tilec.SourceLoc(filename, fdef.lineno + line_offset, fdef.col_offset + col_offset + 1))
    ctx = context.ParseContext(builder, filename)
    ctx.scalar_fragments = scalar_fragments.scan(fdef)
    parser = Parser(ctx, env, filename, line_offset, col_offset)
    ctx.parser = parser
    context.push(ctx)
    try:
        args = fdef.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or args.defaults:
            raise parser.error(fdef, "a T.prim_func takes plain parameters (no *args, **kwargs, defaults)",
                               "put options in a jit factory around the kernel")
        for a in args.args:
            ctx.loc = parser.loc(a)
            if annotations is not None and a.arg in annotations:
                spec = annotations[a.arg]
            elif a.annotation is not None:
                spec = parser.eval(a.annotation)
            else:
                raise parser.error(a, f"parameter '{a.arg}' needs an annotation",
                                   "T.Tensor((M, N), dtype) for a tensor, T.int32 / T.float32 for a scalar")
            if isinstance(spec, TensorSpec):
                value = builder.tensor(a.arg, list(spec.shape), spec.dtype,
                                       list(spec.strides) if spec.strides is not None else None, ctx.loc)
            elif is_pointer_annotation(spec):
                value = builder.scalar_param(a.arg, "handle", ctx.loc)
            elif isinstance(spec, (DType, str, _tilec.DataType)):
                value = builder.scalar_param(a.arg, dtype_str(spec), ctx.loc)
            else:
                raise parser.error(a, f"parameter '{a.arg}' has an unsupported annotation {spec!r}",
                                   "T.Tensor((M, N), dtype) for a tensor, T.int32 / T.float32 for a scalar, "
                                   "T.ptr for an address")
            parser.bind(a.arg, value)
        parser.visit_body(fdef.body, new_scope=False)
        ctx.loc = parser.loc(fdef)
        finish_outputs(ctx, [a.arg for a in args.args])
        func = builder.finish(ctx.func_attrs or None)
        _tilec.verify(func)
        return func
    except CompileError as e:
        e.set_loc_if_unknown(ctx.loc.file, ctx.loc.line, ctx.loc.col)
        raise
    finally:
        context.pop()


OUT_IDX_ATTR = "tilec.out_idx"
PASS_CONFIG_ATTR_PREFIX = "tilec.pass_config."
COMPILE_FLAGS_ATTR = "tilec.compile_flags"


def finish_outputs(ctx: context.ParseContext, input_names: list) -> None:
    """Puts the T.empty outputs after the inputs, in the order of `return`, and records
    them (and T.annotate_pass_configs / T.annotate_compile_flags) as function attributes."""
    returned = ctx.returned_outputs or []
    if len(returned) != len(ctx.outputs):
        missing = [b.name for b in ctx.outputs if not any(b.same_as(r) for r in returned)]
        raise CompileError(f"the output tensor '{missing[0]}' (T.empty) is not returned",
                           hint="return every T.empty tensor at the end: return C (or return C, D)")
    if returned:
        ctx.builder.reorder_params(list(input_names) + [b.name for b in returned], ctx.loc)
        ctx.func_attrs[OUT_IDX_ATTR] = list(range(-len(returned), 0))
    for key, value in ctx.pass_configs.items():
        ctx.func_attrs[PASS_CONFIG_ATTR_PREFIX + key] = value
    if ctx.compile_flags:
        ctx.func_attrs[COMPILE_FLAGS_ATTR] = "\n".join(ctx.compile_flags)


def compile_options_from_attrs(func: Any) -> tuple:
    """(out_idx or None, pass configs, compile flags) that the function's body declared."""
    attrs = func.attrs
    out_idx = attrs.get(OUT_IDX_ATTR)
    configs = {k[len(PASS_CONFIG_ATTR_PREFIX):]: v for k, v in attrs.items() if k.startswith(PASS_CONFIG_ATTR_PREFIX)}
    flags = attrs.get(COMPILE_FLAGS_ATTR)
    return (list(out_idx) if out_idx is not None else None), configs, (flags.split("\n") if flags else [])


def parse_python_function(fn: Any, frame_locals: Optional[dict] = None) -> "_tilec.PrimFunc":
    src = read_source(fn, "T.prim_func")
    env = Env.of_function(fn, frame_locals)
    annotations = dict(getattr(fn, "__annotations__", {}) or {})
    # Postponed annotations (`from __future__ import annotations`) are strings: evaluate them.
    for k, v in list(annotations.items()):
        if isinstance(v, str):
            annotations.pop(k)
    return build_function(src.fdef, env, src.filename, src.line_offset, src.col_offset, annotations)


def prim_func(fn: Any = None, **options: Any):
    """Decorator: parses the function into a tile-IR PrimFunc (`.script()` prints it)."""
    __tracebackhide__ = True  # pytest and IPython leave this frame out of tracebacks
    if options:
        unknown = ", ".join(options)
        raise TypeError(f"T.prim_func got unsupported option(s): {unknown}")
    if fn is None:
        return prim_func
    frame_locals = dict(sys._getframe(1).f_locals)
    try:
        return parse_python_function(fn, frame_locals)
    except CompileError as e:
        raise e.with_traceback(None) from None
