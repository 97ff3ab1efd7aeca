"""The AST walker: turns the body of a ``@T.prim_func`` (or a T-script text) into builder calls.

Python values are evaluated while parsing — block sizes, dtypes, closure variables and
arithmetic on them fold to constants, and an `if` on a Python value keeps only the taken
branch. Everything that depends on kernel values (block/thread indices, loop variables,
buffer elements, symbolic sizes) becomes IR. Every builder call gets the user's
file:line:col, and errors point there.

Statement mapping:
  `with T.Kernel(...) as (bx, by)` / `with T.ws(i)`        -> a builder frame
  `for ... in T.Parallel/T.Pipelined/T.serial/range(...)`  -> a loop frame
  `for x in [python list]`                                 -> unrolled while parsing
  `if cond` (IR) / `else`                                  -> if frame / else
  `x = expr` (IR value)                                    -> Let (fresh variable)
  `v = expr` where v = T.alloc_var(...)                     -> store v[0]
  `A[i, j] = v`, `A[i, j] += v`                            -> BufferStore
  `T.copy(...)`, `T.gemm(...)`, ...                        -> the primitive's builder call
  `T.annotate_layout(...)` as a statement                  -> Annotate over the rest of the block
"""

from __future__ import annotations

import ast
import builtins
import difflib
import inspect
import operator
from typing import Any, Optional

from .. import _tilec
from ..errors import CompileError
from . import context
from .values import Buffer, BufferAccess, Expr, VAR_SCOPE, Var, describe, extent_between, is_ir, to_expr

_BIN_IR = {
    ast.Add: "Add", ast.Sub: "Sub", ast.Mult: "Mul", ast.Div: "Div", ast.FloorDiv: "FloorDiv",
    ast.Mod: "FloorMod",
}
_BIN_PY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift,
    ast.RShift: operator.rshift, ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
    ast.MatMult: operator.matmul,
}
_CMP_IR = {ast.Eq: "EQ", ast.NotEq: "NE", ast.Lt: "LT", ast.LtE: "LE", ast.Gt: "GT", ast.GtE: "GE"}
_CMP_PY = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}

_UNSUPPORTED_STMT_HINTS = {
    "While": ("a `while` loop", "use a for loop with a known trip count (T.serial(n)) and an `if` inside"),
    "Try": ("`try`", "errors are reported when the kernel is compiled; remove the try/except"),
    "TryStar": ("`try`", "remove the try/except"),
    "Raise": ("`raise`", "check conditions in the jit factory, outside the kernel"),
    "Break": ("`break`", "use an `if` around the rest of the loop body"),
    "Continue": ("`continue`", "use an `if` around the rest of the loop body"),
    "Delete": ("`del`", "remove it"),
    "Global": ("`global`", "pass values as factory parameters"),
    "Nonlocal": ("`nonlocal`", "pass values as factory parameters"),
    "FunctionDef": ("a nested `def`", "define it outside the kernel and decorate it with @T.macro"),
    "AsyncFunctionDef": ("a nested `async def`", "define it outside the kernel with @T.macro"),
    "ClassDef": ("a class definition", "define it outside the kernel"),
    "Import": ("`import`", "import at module level"),
    "ImportFrom": ("`import`", "import at module level"),
    "AsyncFor": ("`async for`", "use T.serial / T.Parallel / T.Pipelined"),
    "AsyncWith": ("`async with`", "use `with T.Kernel(...)`"),
    "Match": ("`match`", "use if / elif"),
}

_UNSUPPORTED_EXPR_HINTS = {
    "Lambda": ("a lambda", "lambdas are only allowed as arguments of T.Layout / T.Fragment; use @T.macro for reusable code"),
    "ListComp": ("a list comprehension", "build the list in the jit factory, outside the kernel"),
    "SetComp": ("a set comprehension", "build it in the jit factory, outside the kernel"),
    "DictComp": ("a dict comprehension", "build it in the jit factory, outside the kernel"),
    "GeneratorExp": ("a generator expression", "build the values in the jit factory, outside the kernel"),
    "Await": ("`await`", "remove it"),
    "Yield": ("`yield`", "remove it"),
    "YieldFrom": ("`yield from`", "remove it"),
    "NamedExpr": ("`:=`", "assign on its own line"),
}

_MAX_MACRO_DEPTH = 64


class Env:
    """Where names not defined in the kernel come from: closure cells, the locals of the
    frame that applied the decorator, the function's globals, then builtins."""

    def __init__(self, *layers: Optional[dict]):
        self.layers = [layer for layer in layers if layer is not None]

    @staticmethod
    def of_function(fn, frame_locals: Optional[dict] = None) -> "Env":
        closure = {}
        code = getattr(fn, "__code__", None)
        cells = getattr(fn, "__closure__", None) or ()
        if code is not None:
            for name, cell in zip(code.co_freevars, cells):
                try:
                    closure[name] = cell.cell_contents
                except ValueError:  # an empty cell: assigned later in the enclosing function
                    pass
        return Env(closure, frame_locals, getattr(fn, "__globals__", {}))

    _MISSING = object()

    def lookup(self, name: str) -> Any:
        for layer in self.layers:
            if name in layer:
                return layer[name]
        return getattr(builtins, name, Env._MISSING)

    def names(self) -> set:
        out = set(dir(builtins))
        for layer in self.layers:
            out.update(layer.keys())
        return out


class _Scope(dict):
    """Names bound in one block of the kernel. `ir_frame`: the block is the body of an IR
    loop / if / with (its bindings end with it)."""

    def __init__(self, ir_frame: bool):
        super().__init__()
        self.ir_frame = ir_frame


class _KernelLambda:
    """A lambda written in the kernel, passed to T.Layout / T.Fragment: calling it
    evaluates its body with the parameters bound."""

    def __init__(self, parser: "Parser", node: ast.Lambda):
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


class Parser:
    def __init__(self, ctx: context.ParseContext, env: Env, filename: str, line_offset: int = 0,
                 col_offset: int = 0, macro_depth: int = 0):
        self.ctx = ctx
        self.builder = ctx.builder
        self.env = env
        self.filename = filename
        self.line_offset = line_offset
        self.col_offset = col_offset
        self.scopes: list[_Scope] = [_Scope(ir_frame=False)]
        self.implicit_frames: list[int] = []
        self.ir_depth = 0
        self.macro_depth = macro_depth
        self.in_macro = macro_depth > 0
        self.returned = False
        self.return_value: Any = None

    # ------------------------------------------------------------------ locations, errors

    def loc(self, node: ast.AST) -> "_tilec.SourceLoc":
        line = getattr(node, "lineno", 0)
        col = getattr(node, "col_offset", -1)
        return _tilec.SourceLoc(self.filename, line + self.line_offset if line else 0,
                                col + self.col_offset + 1 if col >= 0 else 0)

    def error(self, node: ast.AST, message: str, hint: str = "") -> CompileError:
        loc = self.loc(node)
        return CompileError(message, loc.file, loc.line, loc.col, hint)

    def _stamp(self, err: CompileError, node: ast.AST) -> None:
        if not err.loc_known:
            loc = self.loc(node)
            err.set_loc_if_unknown(loc.file, loc.line, loc.col)

    # ------------------------------------------------------------------------ names

    def lookup(self, name: str, node: ast.AST) -> Any:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        v = self.env.lookup(name)
        if v is Env._MISSING:
            known = set(self.env.names())
            for scope in self.scopes:
                known.update(scope.keys())
            close = difflib.get_close_matches(name, sorted(known), n=1)
            hint = f"did you mean '{close[0]}'?" if close else \
                "define it before the kernel (a jit factory parameter or a module-level name)"
            raise self.error(node, f"name '{name}' is not defined", hint)
        return v

    def _find_scope(self, name: str) -> Optional[int]:
        for i in range(len(self.scopes) - 1, -1, -1):
            if name in self.scopes[i]:
                return i
        return None

    def bind(self, name: str, value: Any) -> None:
        self.scopes[-1][name] = value

    def _is_kernel_index(self, v: Any) -> bool:
        if not isinstance(v, Var):
            return False
        candidates = list(self.builder.thread_vars()) if self.ctx.kernels else []
        for block_vars in self.ctx.kernels:
            candidates.extend(block_vars)
        return any(v.same_as(c) for c in candidates)

    def assign_name(self, name: str, value: Any, node: ast.AST) -> None:
        where = self._find_scope(name)
        current = self.scopes[where][name] if where is not None else None
        if isinstance(current, Buffer) and current.scope == VAR_SCOPE and not isinstance(value, Buffer):
            self.builder.store(current, [0], to_expr(value), self.loc(node))
            return
        if isinstance(value, BufferAccess) and value.is_point():
            value = value.to_load()
        if isinstance(value, Expr) and not self._is_kernel_index(value):
            crosses_frame = where is not None and any(s.ir_frame for s in self.scopes[where + 1:])
            if crosses_frame and isinstance(current, Expr):
                raise self.error(
                    node, f"'{name}' is assigned inside a loop or if, but was defined outside it",
                    f"the new value would not be visible after the block; declare {name} = T.alloc_var(dtype) "
                    f"before it for a mutable variable")
            self.bind(name, self.builder.let(name, value, self.loc(node)))
            return
        self.bind(name, value)

    # --------------------------------------------------------------------- statements

    def visit_body(self, stmts: list, new_scope: bool, ir_frame: bool = False) -> None:
        if new_scope:
            self.scopes.append(_Scope(ir_frame))
        self.implicit_frames.append(0)
        for stmt in stmts:
            if self.returned:
                raise self.error(stmt, "code after `return` in a T.macro", "remove it")
            self.visit_stmt(stmt)
        for _ in range(self.implicit_frames.pop()):
            self.builder.end_frame()
        if new_scope:
            self.scopes.pop()

    def visit_stmt(self, node: ast.stmt) -> None:
        self.ctx.loc = self.loc(node)
        kind = type(node).__name__
        method = getattr(self, "stmt_" + kind, None)
        if method is None:
            what, hint = _UNSUPPORTED_STMT_HINTS.get(kind, (f"this statement ({kind})", ""))
            raise self.error(node, f"{what} is not supported in a kernel body", hint)
        try:
            method(node)
        except CompileError as e:
            self._stamp(e, node)
            raise

    def stmt_Pass(self, node: ast.Pass) -> None:
        pass

    def stmt_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring or a string used as a comment
        value = self.eval(node.value)
        self._use_statement_value(value, node)

    def _use_statement_value(self, value: Any, node: ast.AST) -> None:
        from ..language.frames import Frame

        if isinstance(value, Frame):
            if not value.implicit_ok:
                raise self.error(node, "this T construct opens a block; use it with `with` / `for`",
                                 "e.g. `with T.Kernel(...) as (bx, by):`, `with T.ws(0):`")
            value.begin(self.ctx)
            self.implicit_frames[-1] += 1
        elif isinstance(value, (Expr, BufferAccess)):
            self.builder.evaluate(to_expr(value), self.loc(node))

    def stmt_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) != 1:
            raise self.error(node, "chained assignment (a = b = ...) is not supported in a kernel",
                             "assign each name on its own line")
        target = node.targets[0]
        if isinstance(target, ast.Name):
            self.ctx.pending_name = target.id
            try:
                value = self.eval(node.value)
            finally:
                self.ctx.pending_name = None
            self.assign_name(target.id, value, target)
            return
        value = self.eval(node.value)
        self.assign_target(target, value, node)

    def assign_target(self, target: ast.AST, value: Any, node: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self.assign_name(target.id, value, target)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if is_ir(value) or not isinstance(value, (list, tuple)):
                raise self.error(node, f"cannot unpack {describe(value)} into {len(target.elts)} names")
            if len(value) != len(target.elts):
                raise self.error(node, f"cannot unpack {len(value)} values into {len(target.elts)} names")
            for t, v in zip(target.elts, value):
                self.assign_target(t, v, node)
        elif isinstance(target, ast.Subscript):
            obj = self.eval(target.value)
            if isinstance(obj, Buffer):
                access = self.subscript_buffer(obj, target.slice, target)
                if not access.is_point():
                    raise self.error(target, "assignment to a slice is not supported",
                                     "use T.fill(A[...], value) or a T.Parallel loop")
                access.check_rank()
                self.builder.store(obj, [to_expr(i[1]) for i in access.items], to_expr(value), self.loc(target))
            elif isinstance(obj, (list, dict)) and not is_ir(value):
                obj[self.eval(target.slice)] = value
            else:
                raise self.error(target, f"cannot assign to an element of {describe(obj)}")
        else:
            raise self.error(target, f"cannot assign to {type(target).__name__} in a kernel")

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        target = node.target
        rhs = self.eval(node.value)
        if isinstance(target, ast.Subscript):
            obj = self.eval(target.value)
            if not isinstance(obj, Buffer):
                raise self.error(target, f"cannot update an element of {describe(obj)}")
            access = self.subscript_buffer(obj, target.slice, target)
            current = access.to_load()
            self.builder.store(obj, [to_expr(i[1]) for i in access.items],
                               self.binop(node.op, current, rhs, node), self.loc(target))
        elif isinstance(target, ast.Name):
            current = self.lookup(target.id, target)
            self.assign_name(target.id, self.binop(node.op, current, rhs, node), target)
        else:
            raise self.error(target, f"cannot update {type(target).__name__} in a kernel")

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None or not isinstance(node.target, ast.Name):
            raise self.error(node, "a declaration without a value is not supported in a kernel",
                             "write `x: T.int32 = value`, or x = T.alloc_var(T.int32) for a mutable variable")
        from ..language.dtypes import dtype_str

        dtype = dtype_str(self.eval(node.annotation), "the annotation")
        value = _tilec.cast(dtype, to_expr(self.eval(node.value)), self.loc(node))
        self.assign_name(node.target.id, value, node.target)

    def stmt_If(self, node: ast.If) -> None:
        cond = self.eval(node.test)
        if isinstance(cond, BufferAccess):
            cond = cond.to_load()
        if not is_ir(cond):
            # Python value: keep only the taken branch (its names stay visible, as in Python).
            taken = node.body if cond else node.orelse
            for stmt in taken:
                if self.returned:
                    raise self.error(stmt, "code after `return` in a T.macro", "remove it")
                self.visit_stmt(stmt)
            return
        self.builder.begin_if(to_expr(cond), self.loc(node))
        self.ir_depth += 1
        self.visit_body(node.body, new_scope=True, ir_frame=True)
        if node.orelse:
            self.builder.begin_else(self.loc(node.orelse[0]))
            self.visit_body(node.orelse, new_scope=True, ir_frame=True)
        self.ir_depth -= 1
        self.builder.end_frame()

    def _target_names(self, target: ast.AST) -> list:
        if isinstance(target, ast.Name):
            return [target.id]
        if isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in target.elts):
            return [e.id for e in target.elts]
        raise self.error(target, "a loop target must be a name or a tuple of names")

    def stmt_For(self, node: ast.For) -> None:
        from ..language.frames import LoopFrame
        from ..language.ops import range_loop

        if node.orelse:
            raise self.error(node, "`for ... else` is not supported in a kernel", "remove the else block")
        if isinstance(node.iter, ast.Call) and self._evals_to(node.iter.func, builtins.range):
            args, kwargs = self.eval_call_args(node.iter, None)
            if kwargs:
                raise self.error(node.iter, "range() takes no keyword arguments")
            self.ctx.loc = self.loc(node.iter)
            try:
                it = range_loop(*args)
            except CompileError as e:
                self._stamp(e, node.iter)
                raise
        else:
            it = self.eval(node.iter)
        if isinstance(it, LoopFrame):
            names = self._target_names(node.target)
            self.ctx.loc = self.loc(node.iter)
            try:
                loop_vars = it.begin_loops(self.ctx, names)
            except CompileError as e:
                self._stamp(e, node.iter)
                raise
            self.ir_depth += 1
            self.scopes.append(_Scope(ir_frame=True))
            for n, v in zip(names, loop_vars):
                self.bind(n, v)
            self.visit_body(node.body, new_scope=False)
            self.scopes.pop()
            self.ir_depth -= 1
            self.builder.end_frame()
            return
        if isinstance(it, (list, tuple, range)):
            for value in it:  # a Python sequence: unrolled while parsing
                self.assign_target(node.target, value, node)
                self.visit_body(node.body, new_scope=False)
            return
        raise self.error(node.iter, f"cannot loop over {describe(it)} in a kernel",
                         "loop over T.serial(n), T.Parallel(...), T.Pipelined(...), range(...) or a Python list")

    def _evals_to(self, node: ast.AST, target: Any) -> bool:
        if isinstance(node, ast.Name):
            try:
                return self.lookup(node.id, node) is target
            except CompileError:
                return False
        return False

    def stmt_With(self, node: ast.With) -> None:
        from ..language.frames import Frame

        frames = []
        for item in node.items:
            frame = self.eval(item.context_expr)
            if not isinstance(frame, Frame):
                raise self.error(item.context_expr, f"`with` cannot use {describe(frame)}",
                                 "use `with T.Kernel(...) as (bx, by):` or `with T.ws(i):`")
            self.ctx.loc = self.loc(item.context_expr)
            try:
                result = frame.begin(self.ctx)
            except CompileError as e:
                self._stamp(e, item.context_expr)
                raise
            frames.append(frame)
            self.scopes.append(_Scope(ir_frame=True))
            if item.optional_vars is not None:
                self._bind_with_target(item.optional_vars, result)
        self.ir_depth += 1
        self.visit_body(node.body, new_scope=False)
        self.ir_depth -= 1
        for frame in reversed(frames):
            self.scopes.pop()
            frame.end(self.ctx)

    def _bind_with_target(self, target: ast.AST, result: Any) -> None:
        values = list(result) if isinstance(result, (list, tuple)) else [result]
        if isinstance(target, ast.Name):
            self.bind(target.id, values[0] if len(values) == 1 else tuple(values))
        elif isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in target.elts):
            if len(target.elts) != len(values):
                raise self.error(target, f"`as` names {len(target.elts)} variables but the frame has {len(values)}",
                                 "T.Kernel(gx, gy, ...) binds one block index per grid extent: as (bx, by)")
            for e, v in zip(target.elts, values):
                self.bind(e.id, v)
        else:
            raise self.error(target, "`as` takes a name or a tuple of names")

    def stmt_Return(self, node: ast.Return) -> None:
        if not self.in_macro:
            raise self.error(node, "a T.prim_func does not return a value",
                             "write results into a tensor parameter (and list it in out_idx)")
        if self.ir_depth > 0:
            raise self.error(node, "`return` inside a loop, if or with block of a T.macro is not supported",
                             "return at the end of the macro")
        self.return_value = self.eval(node.value) if node.value is not None else None
        self.returned = True

    def stmt_Assert(self, node: ast.Assert) -> None:
        cond = self.eval(node.test)
        if is_ir(cond):
            raise self.error(node, "`assert` on a kernel value is not supported",
                             "assert on Python values (block sizes, ...) only")
        if not cond:
            msg = self.eval(node.msg) if node.msg is not None else "assertion failed"
            raise self.error(node, str(msg))

    # -------------------------------------------------------------------- expressions

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
        return _tilec.select(to_expr(cond), to_expr(self.eval(node.body)), to_expr(self.eval(node.orelse)),
                             self.loc(node))

    def expr_Subscript(self, node: ast.Subscript) -> Any:
        obj = self.eval(node.value)
        if isinstance(obj, Buffer):
            return self.subscript_buffer(obj, node.slice, node)
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
        return BufferAccess(buf, items, self.loc(node))

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


def _t_name(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    if isinstance(node, ast.Name):
        return node.id
    return "call"


def _py_int(e: Any) -> Any:
    """An IntImm as a Python int (so shapes fold), anything else unchanged."""
    if isinstance(e, Expr):
        i = e.as_int()
        if i is not None and e.dtype == "int32":
            return i
    return e
