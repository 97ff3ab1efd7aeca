"""Expression evaluation for the AST walker (frontend/parser.py): Python values fold while
parsing, kernel values (indices, loop variables, buffer elements) become IR. Split out of
the parser so each file stays readable; `Parser` mixes this class in."""

from __future__ import annotations

import ast
import builtins
import difflib
import inspect
import operator
from typing import Any

from .. import _tilec
from ..errors import CompileError
from .values import Buffer, BufferAccess, Expr, describe, extent_between, is_ir, to_expr
from .parser_tables import _BIN_IR, _BIN_PY, _CMP_IR, _CMP_PY, _UNSUPPORTED_EXPR_HINTS, _Scope, _py_int, _t_name


class _KernelLambda:
    """A lambda written in the kernel, passed to T.Layout / T.Fragment: calling it
    evaluates its body with the parameters bound."""

    def __init__(self, parser: Any, node: ast.Lambda):
        args = node.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.posonlyargs:
            raise parser.error(node, "a layout lambda takes plain positional parameters only")
        self.parser = parser
        self.node = node
        self.param_names = [a.arg for a in args.args]

    def __call__(self, *values):
        if len(values) != len(self.param_names):
            raise CompileError(f"lambda takes {len(self.param_names)} argument(s), got {len(values)}")
        scope = _Scope(ir_frame=False)
        scope.update(zip(self.param_names, values))
        self.parser.scopes.append(scope)
        try:
            return self.parser.eval(self.node.body)
        finally:
            self.parser.scopes.pop()


class ExpressionEvaluator:
    """Methods `Parser` uses to evaluate expressions (needs self.lookup, self.error, self.loc, ...)."""

    def eval(self, node: ast.AST) -> Any:
        kind = type(node).__name__
        method = getattr(self, "expr_" + kind, None)
        if method is None:
            what, hint = _UNSUPPORTED_EXPR_HINTS.get(kind, (f"this expression ({kind})", ""))
            raise self.error(node, f"{what} is not supported in a kernel body", hint)
        try:
            return method(node)
        except CompileError as e:
            self._stamp(e, node)
            raise

    def expr_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def expr_Name(self, node: ast.Name) -> Any:
        return self.lookup(node.id, node)

    def expr_Attribute(self, node: ast.Attribute) -> Any:
        obj = self.eval(node.value)
        attr = node.attr
        if isinstance(obj, Buffer):
            if attr == "shape":
                return tuple(_py_int(e) for e in obj.shape)
            if attr == "dtype":
                return str(obj.dtype)
            if attr in ("name", "scope", "ndim", "strides"):
                return getattr(obj, attr)
            if attr == "data":  # T.Tensor(shape, dtype, A.data): a view (language/views.py)
                from ..language.views import BufferData

                return BufferData(obj)
        try:
            return getattr(obj, attr)
        except AttributeError:
            owner = getattr(obj, "__name__", None) or type(obj).__name__
            names = [n for n in dir(obj) if not n.startswith("_")]
            close = difflib.get_close_matches(attr, names, n=1)
            if owner in ("tilec.language", "tilelang.language"):
                msg = f"T.{attr} is not a tilec primitive"
                hint = f"did you mean T.{close[0]}?" if close else "docs/LANGUAGE.md lists the T primitives"
            else:
                msg = f"{owner} has no attribute '{attr}'"
                hint = f"did you mean '{close[0]}'?" if close else ""
            raise self.error(node, msg, hint) from None

    def expr_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self._eval_elts(node.elts))

    def expr_List(self, node: ast.List) -> list:
        return self._eval_elts(node.elts)

    def _eval_elts(self, elts: list) -> list:
        out = []
        for e in elts:
            if isinstance(e, ast.Starred):
                out.extend(self._starred(e))
            else:
                out.append(self.eval(e))
        return out

    def _starred(self, node: ast.Starred) -> list:
        v = self.eval(node.value)
        if is_ir(v) or not hasattr(v, "__iter__"):
            raise self.error(node, f"cannot unpack {describe(v)} with *")
        return list(v)

    def _comprehension(self, node: ast.AST, make: Any) -> Any:
        """A comprehension over Python iterables (evaluated while parsing, like a Python list)."""
        out = []

        def walk(generators: list) -> None:
            if not generators:
                out.append(self.eval(node.elt) if not isinstance(node, ast.DictComp)
                           else (self.eval(node.key), self.eval(node.value)))
                return
            gen = generators[0]
            iterable = self.eval(gen.iter)
            if is_ir(iterable) or not hasattr(iterable, "__iter__") or gen.is_async:
                raise self.error(gen.iter, f"a comprehension can only loop over Python values, not {describe(iterable)}",
                                 "loop over kernel values with T.serial / T.Parallel")
            for value in iterable:
                self.scopes.append(_Scope(ir_frame=False))
                try:
                    self.assign_target(gen.target, value, node)
                    conds = [self.eval(c) for c in gen.ifs]
                    if any(is_ir(c) for c in conds):
                        raise self.error(gen.ifs[0], "a comprehension condition must be a Python value")
                    if all(conds):
                        walk(generators[1:])
                finally:
                    self.scopes.pop()

        walk(node.generators)
        return make(out)

    def expr_ListComp(self, node: ast.ListComp) -> list:
        return self._comprehension(node, list)

    def expr_GeneratorExp(self, node: ast.GeneratorExp) -> list:
        return self._comprehension(node, list)

    def expr_SetComp(self, node: ast.SetComp) -> set:
        return self._comprehension(node, set)

    def expr_DictComp(self, node: ast.DictComp) -> dict:
        return self._comprehension(node, dict)

    def expr_Dict(self, node: ast.Dict) -> dict:
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                out.update(self.eval(v))
            else:
                key = self.eval(k)
                if isinstance(key, Expr):
                    raise self.error(k, "a kernel expression cannot be a dict key")
                out[key] = self.eval(v)
        return out

    def expr_JoinedStr(self, node: ast.JoinedStr) -> str:
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            else:
                x = self.eval(v.value)
                if is_ir(x):
                    raise self.error(v, "an f-string can only format Python values in a kernel",
                                     "print kernel values with T.print(value, msg=\"...\")")
                spec = self.eval(v.format_spec) if v.format_spec is not None else ""
                conv = {115: str, 114: repr, 97: ascii}.get(v.conversion, lambda s: s)
                parts.append(format(conv(x), spec))
        return "".join(parts)

    def expr_BinOp(self, node: ast.BinOp) -> Any:
        return self.binop(node.op, self.eval(node.left), self.eval(node.right), node)

    def binop(self, op: ast.operator, a: Any, b: Any, node: ast.AST) -> Any:
        if not is_ir(a) and not is_ir(b):
            fn = _BIN_PY[type(op)]
            try:
                return fn(a, b)
            except Exception as e:  # user arithmetic on Python values
                raise self.error(node, f"{type(e).__name__}: {e}") from None
        kind = _BIN_IR.get(type(op))
        if kind is None:
            if isinstance(op, (ast.BitAnd, ast.BitOr)):
                ea, eb = to_expr(a), to_expr(b)
                if ea.dtype.is_bool() and eb.dtype.is_bool():
                    return _tilec.binary("And" if isinstance(op, ast.BitAnd) else "Or", ea, eb, self.loc(node))
            bit = {ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor", ast.LShift: "shl",
                   ast.RShift: "shr"}.get(type(op))
            if bit is not None:
                from ..language.ops import bitwise

                self.ctx.loc = self.loc(node)
                return bitwise(bit, a, b)
            sym = {ast.Pow: "**", ast.MatMult: "@"}.get(type(op), type(op).__name__)
            raise self.error(node, f"the operator '{sym}' on kernel values is not supported",
                             "for powers use T.pow(x, y), T.exp2 or T.exp")
        return _tilec.binary(kind, to_expr(a), to_expr(b), self.loc(node))

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Any:
        v = self.eval(node.operand)
        if not is_ir(v):
            return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
                    ast.Invert: operator.invert}[type(node.op)](v)
        e = to_expr(v)
        if isinstance(node.op, ast.UAdd):
            return e
        if isinstance(node.op, ast.USub):
            if e.kind == "FloatImm":
                return _tilec.float_imm(-e.value, e.dtype, self.loc(node))
            if e.kind == "IntImm" and not e.dtype.is_bool():
                return _tilec.int_imm(-e.value, e.dtype, self.loc(node))
            return _tilec.binary("Sub", 0, e, self.loc(node))
        if isinstance(node.op, ast.Not) or e.dtype.is_bool():
            return _tilec.logical_not(e, self.loc(node))
        from ..language.ops import bitwise_not

        self.ctx.loc = self.loc(node)
        return bitwise_not(e)

    def expr_BoolOp(self, node: ast.BoolOp) -> Any:
        is_and = isinstance(node.op, ast.And)
        acc = None  # IR part
        for value_node in node.values:
            v = self.eval(value_node)
            if isinstance(v, BufferAccess):
                v = v.to_load()
            if not is_ir(v):
                if is_and and not v:
                    return v if acc is None else _tilec.bool_imm(False, self.loc(node))
                if not is_and and v:
                    return v if acc is None else _tilec.bool_imm(True, self.loc(node))
                if acc is None and value_node is node.values[-1]:
                    return v
                continue
            e = to_expr(v)
            acc = e if acc is None else _tilec.binary("And" if is_and else "Or", acc, e, self.loc(node))
        return acc

    def expr_Compare(self, node: ast.Compare) -> Any:
        left = self.eval(node.left)
        result = None
        for op, right_node in zip(node.ops, node.comparators):
            right = self.eval(right_node)
            if not is_ir(left) and not is_ir(right):
                r = _CMP_PY[type(op)](left, right)
                if not r:
                    return False
                part = None
            else:
                kind = _CMP_IR.get(type(op))
                if kind is None:
                    raise self.error(node, "`is` / `in` cannot compare kernel values", "use == or !=")
                part = _tilec.binary(kind, to_expr(left), to_expr(right), self.loc(node))
            if part is not None:
                result = part if result is None else _tilec.binary("And", result, part, self.loc(node))
            left = right
        return True if result is None else result

    def expr_IfExp(self, node: ast.IfExp) -> Any:
        cond = self.eval(node.test)
        if isinstance(cond, BufferAccess):
            cond = cond.to_load()
        if not is_ir(cond):
            return self.eval(node.body) if cond else self.eval(node.orelse)
        from ..language.ops import select_values

        body, orelse = self.eval(node.body), self.eval(node.orelse)
        self.ctx.loc = self.loc(node)
        return select_values(cond, body, orelse)

    def expr_Subscript(self, node: ast.Subscript) -> Any:
        obj = self.eval(node.value)
        if isinstance(obj, Buffer):
            return self.subscript_buffer(obj, node.slice, node)
        from ..language.views import GlobalView, subscript

        if isinstance(obj, GlobalView):
            self.ctx.loc = self.loc(node)
            return subscript(obj, self.subscript_buffer(obj, node.slice, node).items)
        if is_ir(obj):
            raise self.error(node, f"cannot index {describe(obj)}")
        key = self.eval(node.slice) if not isinstance(node.slice, ast.Slice) else self.expr_Slice(node.slice)
        if is_ir(key):
            raise self.error(node.slice, "a Python list or tuple cannot be indexed by a kernel value",
                             "index it with Python values, or keep the data in a buffer")
        try:
            return obj[key]
        except Exception as e:
            raise self.error(node, f"{type(e).__name__}: {e}") from None

    def expr_Slice(self, node: ast.Slice) -> slice:
        return slice(*(self.eval(p) if p is not None else None for p in (node.lower, node.upper, node.step)))

    def subscript_buffer(self, buf: Buffer, index: ast.AST, node: ast.AST) -> BufferAccess:
        elts = index.elts if isinstance(index, ast.Tuple) else [index]
        items = []
        for dim, e in enumerate(elts):
            if isinstance(e, ast.Slice):
                items.append(self._slice_item(buf, dim, e))
            else:
                v = self.eval(e)
                if isinstance(v, (list, tuple)) and not isinstance(index, ast.Tuple):
                    # A[idx] where idx is a Python tuple of indices
                    items.extend(("index", x) for x in v)
                    continue
                if isinstance(v, BufferAccess):
                    v = v.to_load()
                items.append(("index", v))
        access = BufferAccess(buf, items, self.loc(node))
        if isinstance(buf, Buffer) and buf.scope == "global" and getattr(self.ctx, "global_layouts", None):
            from ..language.global_layout import remap_access

            self.ctx.loc = self.loc(node)
            access = remap_access(access)  # a tensor given a T.Layout (language/global_layout.py)
        return access

    def _slice_item(self, buf: Buffer, dim: int, s: ast.Slice):
        if s.step is not None:
            step = self.eval(s.step)
            if is_ir(step) or step != 1:
                raise self.error(s, "strided slices are not supported", "use a T.Parallel loop")
        lo = self.eval(s.lower) if s.lower is not None else 0
        if s.upper is None:
            if dim >= buf.ndim:
                raise self.error(s, f"buffer '{buf.name}' has {buf.ndim} dimensions")
            return ("slice", lo, extent_between(lo, _py_int(buf.shape[dim])))
        up = s.upper
        # The printer writes `lo:lo + extent`; take the extent as written.
        if s.lower is not None and isinstance(up, ast.BinOp) and isinstance(up.op, ast.Add) and \
                ast.dump(up.left) == ast.dump(s.lower):
            return ("slice", lo, self.eval(up.right))
        return ("slice", lo, extent_between(lo, self.eval(up)))

    # ------------------------------------------------------------------------- calls

    def eval_call_args(self, node: ast.Call, func: Any):
        takes_callables = getattr(func, "_tilec_takes_callables", False)

        def arg(a):
            if isinstance(a, ast.Lambda) and takes_callables:
                return _KernelLambda(self, a)
            return self.eval(a)

        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(self._starred(a))
            else:
                args.append(arg(a))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                v = self.eval(kw.value)
                if not isinstance(v, dict):
                    raise self.error(kw.value, f"cannot unpack {describe(v)} with **")
                kwargs.update(v)
            else:
                kwargs[kw.arg] = arg(kw.value)
        return args, kwargs

    def expr_Call(self, node: ast.Call) -> Any:
        from .macro import Macro

        func = self.eval(node.func)
        args, kwargs = self.eval_call_args(node, func)
        loc = self.loc(node)
        if func is builtins.range:
            if any(is_ir(a) for a in args):
                raise self.error(node, "range() over kernel values can only be the iterable of a for loop")
            return range(*args)
        if isinstance(func, Macro):
            return func.inline(self, args, kwargs, node)
        if func in (builtins.min, builtins.max, builtins.abs) and any(is_ir(a) for a in args):
            from ..language import ops

            self.ctx.loc = loc
            return {builtins.min: ops.min, builtins.max: ops.max, builtins.abs: ops.abs}[func](*args, **kwargs)
        if getattr(func, "_tilec_primitive", False):
            self._check_arity(func, args, kwargs, node)
            self.ctx.loc = loc
            return func(*args, **kwargs)
        if not callable(func):
            raise self.error(node.func, f"{describe(func)} is not callable")
        if func is builtins.print:
            from ..errors import warn_at

            warn_at("print(...) in a kernel body runs once, in Python, while tilec parses the kernel; "
                    "it prints nothing on the GPU", loc.file, loc.line,
                    "T.print(value) prints from the GPU; or move the print out of the kernel")
        if isinstance(func, type) and func in (int, float, bool) and any(is_ir(a) for a in args):
            raise self.error(node, f"{func.__name__}() of a kernel value is not supported",
                             f"use T.cast(value, \"{ {int: 'int32', float: 'float32', bool: 'bool'}[func] }\")")
        self.ctx.loc = loc
        try:
            return func(*args, **kwargs)
        except CompileError:
            raise
        except Exception as e:  # an error in a user helper called from the kernel
            name = getattr(func, "__qualname__", None) or getattr(func, "__name__", type(func).__name__)
            raise self.error(node, f"{name}(...) raised {type(e).__name__}: {e}") from None

    def _check_arity(self, func: Any, args: list, kwargs: dict, node: ast.Call) -> None:
        try:
            sig = inspect.signature(func)
        except (TypeError, ValueError):
            return
        try:
            sig.bind(*args, **kwargs)
        except TypeError as e:
            name = _t_name(node.func)
            raise self.error(node, f"{name}: {e}", f"signature: {name}{sig}") from None
