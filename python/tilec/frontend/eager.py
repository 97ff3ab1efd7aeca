"""Eager-style `@tilec.jit`: the decorated function *is* the kernel body (TileLang's eager JIT).

    @tilec.jit
    def add(A, B, block=128, dtype=T.float32):
        N = T.const("N")                 # a size taken from the tensors at the call
        A: T.Tensor((N,), dtype)         # A and B are runtime tensors ...
        B: T.Tensor((N,), dtype)
        C = T.empty((N,), dtype)         # ... C is an output, allocated by the call
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            ...
        return C

    c = add(a, b)                        # compiles for a.shape (cached), runs, returns C
    k = add.compile(N=4096, block=256)   # a kernel without tensors: sizes by keyword

Which parameters are runtime values: those annotated as a tensor or a scalar, in the signature
or by a bare annotation statement at the top of the body (`A: T.Tensor(...)`). Every other
parameter is a compile-time value, folded while parsing, as in a jit factory.

`T.const` sizes are specialised: a kernel is compiled per distinct value. Their values come
from keyword arguments of the call (`M=1024`) or from the tensors: a first, short parse
(discovery) declares the sizes as variables and stops once every runtime parameter is
declared; each size is then found as the extent (or stride) of some tensor parameter. The
real parse sees them as Python ints, so they fold like factory arguments.

Parameters keep the signature's order; `T.empty` outputs follow, in the order of `return`.
"""

from __future__ import annotations

import ast
import inspect
import re
from typing import Any, Optional

from .. import _tilec
from ..errors import CompileError
from . import context, scalar_fragments
from .function import SourceInfo, finish_outputs, read_source
from .parser import Env, Parser

_CONST_SPLIT = re.compile(r"[\s,]+")


def split_const_names(names: str) -> list:
    if not isinstance(names, str) or not names.strip():
        raise CompileError("T.const takes names in one string, e.g. T.const(\"M, N, K\")")
    out = [n for n in _CONST_SPLIT.split(names.strip()) if n]
    for n in out:
        if not n.isidentifier():
            raise CompileError(f"T.const: {n!r} is not a Python identifier")
    return out


class EagerState:
    """Per-parse state of an eager function (ParseContext.eager)."""

    def __init__(self, runtime_params: list, const_values: Optional[dict], discovering: bool):
        self.runtime_params = list(runtime_params)  # signature order
        self.const_values = const_values  # None while discovering unknown sizes
        self.discovering = discovering
        self.const_vars: dict = {}  # name -> Var (discovery)
        self.declared: dict = {}  # param name -> Buffer / Var

    def const(self, name: str, dtype: str):
        if self.const_values is not None and name in self.const_values:
            return self.const_values[name]
        if not self.discovering:
            raise CompileError(f"no value for the size T.const(\"{name}\")",
                               hint=f"pass a tensor whose shape has it, or give it by keyword: {name}=...")
        v = self.const_vars.get(name)
        if v is None:
            v = _tilec.var(name, dtype, context.loc())
            self.const_vars[name] = v
        return v

    def all_declared(self) -> bool:
        return all(n in self.declared for n in self.runtime_params)


class _DiscoveryDone(Exception):
    pass


# ----------------------------------------------------------------------------- the source


def _is_prim_func_decorator(node: ast.AST) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return (isinstance(target, ast.Attribute) and target.attr == "prim_func") or \
        (isinstance(target, ast.Name) and target.id == "prim_func")


def _walk_top(stmts: list):
    """The statements of a body, nested blocks included, but not nested definitions."""
    for s in stmts:
        yield s
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(s, field, None)
            if isinstance(inner, list):
                yield from _walk_top(inner)


def _calls_t(node: ast.AST, names: set) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in names:
            return True
    return False


class EagerSource:
    """What the AST of a jit function says about its style and its runtime parameters."""

    def __init__(self, fn: Any):
        self.fn = fn
        self.src: Optional[SourceInfo] = None
        self.is_eager = False
        self.body_annotated: list = []  # params annotated by a bare statement in the body
        self.uses_const = False
        try:
            self.src = read_source(fn, "tilec.jit")
        except (CompileError, OSError, TypeError, SyntaxError):
            return
        fdef = self.src.fdef
        params = {a.arg for a in fdef.args.args + fdef.args.kwonlyargs}
        stmts = list(_walk_top(fdef.body))
        if any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and
               any(_is_prim_func_decorator(d) for d in s.decorator_list) for s in stmts):
            return  # a factory that defines a T.prim_func: lazy
        for s in fdef.body:
            if isinstance(s, ast.AnnAssign) and s.value is None and isinstance(s.target, ast.Name) and \
                    s.target.id in params and s.target.id not in self.body_annotated:
                self.body_annotated.append(s.target.id)
        opens_kernel = any(isinstance(s, ast.With) and any(_calls_t(i.context_expr, {"Kernel"}) for i in s.items)
                           for s in stmts)
        self.uses_const = any(_calls_t(s, {"const"}) for s in stmts if not isinstance(s, ast.FunctionDef))
        self.is_eager = bool(self.body_annotated) or opens_kernel or self.uses_const or \
            any(_calls_t(s, {"empty"}) for s in stmts if not isinstance(s, ast.FunctionDef))


# ----------------------------------------------------------------------------- the signature


def _freeze(v: Any) -> Any:
    if isinstance(v, dict):
        return (dict, tuple(sorted(((repr(k), _freeze(x)) for k, x in v.items()))))
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_freeze(x) for x in v))
    if isinstance(v, set):
        return (set, tuple(sorted(repr(x) for x in v)))
    try:
        hash(v)
        return v
    except TypeError:
        return ("id", id(v))


class EagerFunction:
    """An eager jit function: binds calls, discovers sizes, parses per specialisation."""

    def __init__(self, fn: Any, source: EagerSource):
        from ..language.dtypes import DType
        from ..language.pointers import is_pointer_annotation
        from ..language.tensor import TensorSpec

        self.fn = fn
        self.source = source
        self.signature = inspect.signature(fn)
        annotations = dict(getattr(fn, "__annotations__", {}) or {})
        self.sig_specs = {k: v for k, v in annotations.items()
                          if isinstance(v, (TensorSpec, DType, _tilec.DataType)) or is_pointer_annotation(v)}
        self.runtime_params = [n for n in self.signature.parameters
                               if n in self.sig_specs or n in source.body_annotated]
        self._templates: dict = {}  # compile-time key -> {const name: (param, "shape"|"stride", dim)}

    # -- binding a call
    def bind(self, args: tuple, kwargs: dict):
        """(runtime values by name, compile-time values by name, extra keywords = T.const values)."""
        params = self.signature.parameters
        names = list(params)
        if len(args) > len(names):
            raise TypeError(f"{self.fn.__name__}() takes {len(names)} arguments, got {len(args)}")
        values = dict(zip(names, args))
        extra = {}
        for k, v in kwargs.items():
            if k in params:
                if k in values:
                    raise TypeError(f"{self.fn.__name__}() got multiple values for argument '{k}'")
                values[k] = v
            else:
                extra[k] = v
        runtime, compile_args = {}, {}
        for name, p in params.items():
            if name in self.runtime_params:
                if name in values:
                    runtime[name] = values[name]
                continue
            if name in values:
                compile_args[name] = values[name]
            elif p.default is not inspect.Parameter.empty:
                compile_args[name] = p.default
            else:
                raise TypeError(f"{self.fn.__name__}() missing the compile-time argument '{name}'")
        return runtime, compile_args, extra

    # -- parsing
    def parse(self, compile_args: dict, const_values: Optional[dict], discovering: bool = False):
        src = self.source.src
        fdef = src.fdef
        state = EagerState(self.runtime_params, const_values, discovering)
        builder = _tilec.Builder(fdef.name, _tilec.SourceLoc(src.filename, fdef.lineno + src.line_offset,
                                                              fdef.col_offset + src.col_offset + 1))
        ctx = context.ParseContext(builder, src.filename)
        ctx.eager = state
        ctx.scalar_fragments = scalar_fragments.scan(fdef)
        parser = Parser(ctx, Env.of_function(self.fn), src.filename, src.line_offset, src.col_offset)
        ctx.parser = parser
        context.push(ctx)
        try:
            for name, value in compile_args.items():
                parser.bind(name, value)
            for name in self.runtime_params:  # annotated in the signature: declared up front
                if name in self.sig_specs:
                    ctx.loc = parser.loc(fdef)
                    parser.bind(name, declare_param(ctx, name, self.sig_specs[name]))
            if discovering:
                if state.all_declared():
                    raise _DiscoveryDone
                parser.implicit_frames.append(0)
                for stmt in fdef.body:
                    parser.visit_stmt(stmt)
                    if state.all_declared():
                        raise _DiscoveryDone
                return state, None
            parser.visit_body(fdef.body, new_scope=False)
            ctx.loc = parser.loc(fdef)
            missing = [n for n in self.runtime_params if n not in state.declared]
            if missing:
                raise CompileError(f"parameter '{missing[0]}' of {fdef.name} was never given a type",
                                   hint=f"annotate it in the body: {missing[0]}: T.Tensor((M, N), dtype)")
            if not ctx.outputs:  # nothing returned: the parameters are already in order
                builder.reorder_params(self.runtime_params, ctx.loc)
            finish_outputs(ctx, self.runtime_params)
            func = builder.finish(ctx.func_attrs or None)
            _tilec.verify(func)
            return state, func
        except _DiscoveryDone:
            return state, None
        except CompileError as e:
            e.set_loc_if_unknown(ctx.loc.file, ctx.loc.line, ctx.loc.col)
            raise
        finally:
            context.pop()

    # -- sizes
    def _const_sources(self, compile_args: dict, extra: dict) -> dict:
        key = (_freeze(compile_args), _freeze(sorted(extra.items())))
        found = self._templates.get(key)
        if found is None:
            found = {}
            if self.source.uses_const:
                state, _ = self.parse(compile_args, dict(extra), discovering=True)
                for cname, var in state.const_vars.items():
                    found[cname] = _find_in_params(var, state.declared, self.runtime_params)
            self._templates[key] = found
        return found

    def const_values(self, runtime: dict, compile_args: dict, extra: dict) -> dict:
        values = dict(extra)
        for cname, where in self._const_sources(compile_args, extra).items():
            if cname in values:
                continue
            if where is None:
                raise CompileError(f"T.const(\"{cname}\") is not the extent of any tensor parameter, so its value "
                                   "cannot be taken from the tensors",
                                   hint=f"give it by keyword ({cname}=...), or use it directly as an extent in a "
                                        "T.Tensor annotation")
            pname, kind, dim = where
            if pname not in runtime:
                raise CompileError(f"no value for T.const(\"{cname}\"): pass the tensor '{pname}' or give "
                                   f"{cname}=... by keyword")
            values[cname] = _size_of(runtime[pname], kind, dim, pname)
        return values

    def prim_func(self, args: tuple, kwargs: dict):
        runtime, compile_args, extra = self.bind(args, kwargs)
        consts = self.const_values(runtime, compile_args, extra)
        _, func = self.parse(compile_args, consts)
        return func

    def cache_key(self, args: tuple, kwargs: dict):
        runtime, compile_args, extra = self.bind(args, kwargs)
        consts = self.const_values(runtime, compile_args, extra)
        return (_freeze(compile_args), _freeze(sorted(consts.items()))), runtime, compile_args, consts

    def runtime_args(self, runtime: dict) -> list:
        missing = [n for n in self.runtime_params if n not in runtime]
        if missing:
            raise TypeError(f"{self.fn.__name__}() needs the tensor argument '{missing[0]}' to run; "
                            f"use {self.fn.__name__}.compile(...) for a kernel without running it")
        return [runtime[n] for n in self.runtime_params]


def _find_in_params(var: Any, declared: dict, order: list):
    for pname in order:
        value = declared.get(pname)
        if not isinstance(value, _tilec.Buffer):
            continue
        for kind, dims in (("shape", value.shape), ("stride", value.strides)):
            for i, d in enumerate(dims):
                if isinstance(d, _tilec.Expr) and d.same_as(var):
                    return (pname, kind, i)
    return None


def _size_of(tensor: Any, kind: str, dim: int, pname: str) -> int:
    try:
        if kind == "shape":
            return int(tensor.shape[dim])
        return int(tensor.stride()[dim] if callable(getattr(tensor, "stride", None)) else tensor.strides[dim])
    except (AttributeError, IndexError, TypeError):
        raise CompileError(f"argument '{pname}' has no {kind} {dim} (a {type(tensor).__name__})",
                           hint="pass a tensor of the annotated rank") from None


# ------------------------------------------------------------------------ parser hooks


def declare_param(ctx: context.ParseContext, name: str, spec: Any):
    """Declares a runtime parameter of an eager function from its annotation."""
    from ..language.dtypes import DType, dtype_str
    from ..language.pointers import is_pointer_annotation
    from ..language.tensor import TensorSpec

    state = ctx.eager
    if name in state.declared:
        raise CompileError(f"parameter '{name}' is annotated twice")
    if isinstance(spec, TensorSpec):
        value = ctx.builder.tensor(name, list(spec.shape), spec.dtype,
                                   list(spec.strides) if spec.strides is not None else None, ctx.loc)
    elif is_pointer_annotation(spec):
        value = ctx.builder.scalar_param(name, "handle", ctx.loc)
    elif isinstance(spec, (DType, str, _tilec.DataType)):
        value = ctx.builder.scalar_param(name, dtype_str(spec), ctx.loc)
    else:
        raise CompileError(f"parameter '{name}' has an unsupported annotation {spec!r}",
                           hint="T.Tensor((M, N), dtype) for a tensor, T.int32 / T.float32 for a scalar")
    state.declared[name] = value
    return value
