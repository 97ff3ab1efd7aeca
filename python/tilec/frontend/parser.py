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
  `while cond` (IR; Python values: unrolled)               -> while frame (WhileNode)
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
from typing import Any, Optional

from .. import _tilec
from ..errors import CompileError
from . import context
from .values import Buffer, BufferAccess, Expr, VAR_SCOPE, Var, describe, is_ir, stored_value, to_expr

from .expressions import ExpressionEvaluator
from .parser_tables import _Scope
from .loop_exits import EXIT_KINDS, LoopExit, exits_of, first_exit, jump_word, may_exit
from .reducers import plan_reducer_loop

_UNSUPPORTED_STMT_HINTS = {
    "Try": ("`try`", "errors are reported when the kernel is compiled; remove the try/except"),
    "TryStar": ("`try`", "remove the try/except"),
    "Raise": ("`raise`", "check conditions in the jit factory, outside the kernel"),
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





class Parser(ExpressionEvaluator):
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
        # One entry per enclosing loop of this kernel: its LoopExit, or None when it has no
        # break / continue of its own (frontend/loop_exits.py).
        self.loop_exits: list = []

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

    @staticmethod
    def _is_plain_var(v: Any) -> bool:
        # A name for a variable (a T.dynamic size, a T.const size, a parameter) is an alias: a
        # let would hide the size from the tensor shapes that use it.
        return isinstance(v, Var) and v.kind == "Var"

    def _thread_index_of(self, value: Any, node: ast.AST) -> Any:
        """`tx = T.thread_binding(0, threads, thread="threadIdx.x")` (not a loop): the thread index."""
        from ..language.frames import LoopFrame

        if not (isinstance(value, LoopFrame) and value.kind == "thread_binding"):
            return value
        dims = {"threadIdx.x": 0, "threadIdx.y": 1, "threadIdx.z": 2}
        tvars = list(self.builder.thread_vars()) if self.ctx.kernels else []
        dim = dims.get(value.thread_tag)
        if dim is None or dim >= len(tvars):
            raise self.error(node, f"T.thread_binding(thread={value.thread_tag!r}) as a value needs a T.Kernel "
                                   "with that thread dimension", "use it as `for tx in T.thread_binding(...)`")
        return tvars[dim]

    def assign_name(self, name: str, value: Any, node: ast.AST) -> None:
        where = self._find_scope(name)
        current = self.scopes[where][name] if where is not None else None
        if isinstance(current, Buffer) and current.scope == VAR_SCOPE and \
                (not isinstance(value, Buffer) or self._is_other_named_var(value, current)):
            # `x = v` (x a T.alloc_var): a store. `x = y` with y another named T.alloc_var stores
            # y's value too (as TileLang does); `x = T.alloc_var(...)` declares x anew.
            self.builder.store(current, [0], stored_value(current, value, self.loc(node)), self.loc(node))
            return
        if isinstance(value, BufferAccess) and value.is_point():
            value = value.to_load()
        value = self._thread_index_of(value, node)
        if isinstance(value, Expr) and not self._is_kernel_index(value) and not self._is_plain_var(value):
            crosses_frame = where is not None and any(s.ir_frame for s in self.scopes[where + 1:])
            if crosses_frame and isinstance(current, Expr):
                raise self.error(
                    node, f"'{name}' is assigned inside a loop or if, but was defined outside it",
                    f"the new value would not be visible after the block; declare {name} = T.alloc_var(dtype) "
                    f"before it for a mutable variable")
            var = self.builder.let(name, value, self.loc(node))
            self.ctx.let_values.append((var, value))
            self.bind(name, var)
            return
        self.bind(name, value)

    def _is_other_named_var(self, value: Any, current: Buffer) -> bool:
        return isinstance(value, Buffer) and value.scope == VAR_SCOPE and value is not current and \
            any(value is v for scope in self.scopes for v in scope.values())

    # --------------------------------------------------------------------- statements

    def visit_body(self, stmts: list, new_scope: bool, ir_frame: bool = False) -> None:
        if new_scope:
            self.scopes.append(_Scope(ir_frame))
        self.implicit_frames.append(0)
        exits = self.loop_exits[-1] if self.loop_exits else None
        for k, stmt in enumerate(stmts):
            if self.returned:
                raise self.error(stmt, "code after `return` in a T.macro", "remove it")
            self.visit_stmt(stmt)
            if exits is not None and k + 1 < len(stmts) and may_exit(stmt):
                exits.guard_rest(self.loc(stmts[k + 1]))  # the rest of the block, unless it left
                self.implicit_frames[-1] += 1
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

    def _loop_exit_for(self, node: ast.stmt, word: str) -> LoopExit:
        exits = self.loop_exits[-1] if self.loop_exits else None
        if exits is None:
            raise self.error(node, f"`{word}` outside a T.serial / range / T.unroll loop of the kernel",
                             "use an `if` around the rest of the loop body")
        return exits

    def stmt_Break(self, node: ast.Break) -> None:
        self._loop_exit_for(node, "break").on_break(self.loc(node))

    def stmt_Continue(self, node: ast.Continue) -> None:
        self._loop_exit_for(node, "continue").on_continue(self.loc(node))

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
        if len(node.targets) != 1:  # a = b = value: the value once, then each target
            value = self.eval(node.value)
            if isinstance(value, BufferAccess) and value.is_point():
                value = value.to_load()
            for target in node.targets:
                self.assign_target(target, value, node)
            return
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

    def _target_writes_memory(self, target: ast.AST) -> bool:
        """Whether assigning to `target` stores into a buffer (an element, or a T.alloc_var name)
        rather than binding a name."""
        if isinstance(target, ast.Subscript):
            return True
        if isinstance(target, (ast.Tuple, ast.List)):
            return any(self._target_writes_memory(t) for t in target.elts)
        if isinstance(target, ast.Name):
            where = self._find_scope(target.id)
            current = self.scopes[where][target.id] if where is not None else None
            return isinstance(current, Buffer) and current.scope == VAR_SCOPE
        return False

    def _value_read_now(self, value: Any, k: int, node: ast.AST) -> Any:
        """A value of a tuple assignment that reads memory, bound to a new variable here, so that
        the targets written after it do not change it (Python evaluates the right side first)."""
        if isinstance(value, BufferAccess) and value.is_point():
            value = value.to_load()
        if isinstance(value, Buffer) and value.scope == VAR_SCOPE:  # `a, b = b, a`: b's value now
            value = to_expr(value)
        if isinstance(value, Expr) and not self._is_kernel_index(value) and not self._is_plain_var(value) \
                and value.kind not in ("IntImm", "FloatImm"):
            return self.builder.let(f"unpacked_{k}", value, self.loc(node))
        return value

    def assign_target(self, target: ast.AST, value: Any, node: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self.assign_name(target.id, value, target)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if is_ir(value) or not isinstance(value, (list, tuple)):
                raise self.error(node, f"cannot unpack {describe(value)} into {len(target.elts)} names")
            if len(value) != len(target.elts):
                raise self.error(node, f"cannot unpack {len(value)} values into {len(target.elts)} names")
            if len(value) > 1 and any(self._target_writes_memory(t) for t in target.elts):
                # `a[0], a[1] = a[1], a[0]`: every value is read before any target is written
                value = [self._value_read_now(v, k, node) for k, v in enumerate(value)]
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
                self.builder.store(obj, [to_expr(i[1]) for i in access.items], stored_value(obj, value, self.loc(target)),
                                   self.loc(target))
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
                               stored_value(obj, self.binop(node.op, current, rhs, node), self.loc(target)),
                               self.loc(target))
        elif isinstance(target, ast.Name):
            current = self.lookup(target.id, target)
            self.assign_name(target.id, self.binop(node.op, current, rhs, node), target)
        else:
            raise self.error(target, f"cannot update {type(target).__name__} in a kernel")

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        eager = self.ctx.eager
        if node.value is None and eager is not None and isinstance(node.target, ast.Name) and \
                node.target.id in eager.runtime_params and self.macro_depth == 0 and self.ir_depth == 0:
            from .eager import declare_param

            spec = self.eval(node.annotation)
            self.ctx.loc = self.loc(node)
            self.bind(node.target.id, declare_param(self.ctx, node.target.id, spec))
            return
        if node.value is None or not isinstance(node.target, ast.Name):
            raise self.error(node, "a declaration without a value is not supported in a kernel",
                             "write `x: T.int32 = value`, or x = T.alloc_var(T.int32) for a mutable variable")
        from ..language.dtypes import DType, dtype_str

        annotation = self.eval(node.annotation)
        value = self.eval(node.value)
        if isinstance(annotation, type) and not is_ir(value):  # `n: int = 4`, `dtype: str = "float16"`
            self.assign_name(node.target.id, value, node.target)
            return
        if not isinstance(annotation, (DType, str, _tilec.DataType, type)):
            self.assign_name(node.target.id, value, node.target)  # a typing hint Python ignores too
            return
        dtype = dtype_str(annotation, "the annotation")
        value = _tilec.cast(dtype, to_expr(value), self.loc(node))
        self.assign_name(node.target.id, value, node.target)

    def _condition(self, test: ast.expr) -> Any:
        """The value of an `if` / `while` test: a Python value, or IR (an element read loaded)."""
        cond = self.eval(test)
        return cond.to_load() if isinstance(cond, BufferAccess) else cond

    def stmt_If(self, node: ast.If) -> None:
        cond = self._condition(node.test)
        if not is_ir(cond):
            # Python value: keep only the taken branch (its names stay visible, as in Python).
            taken = node.body if cond else node.orelse
            for k, stmt in enumerate(taken):
                if self.returned:
                    raise self.error(stmt, "code after `return` in a T.macro", "remove it")
                if k and self.loop_exits and self.loop_exits[-1] is not None and may_exit(taken[k - 1]):
                    raise self.error(stmt, "code after `break` / `continue` never runs", "remove it")
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
            exits = self._loop_exits_of(node, it)
            reducers = plan_reducer_loop(self, node, it.kind, names)  # frontend/reducers.py
            if reducers is not None:
                reducers.before(it.extents)
            try:
                loop_vars = it.begin_loops(self.ctx, names)
            except CompileError as e:
                self._stamp(e, node.iter)
                raise
            self._visit_loop_body(reducers.body if reducers is not None else node.body, exits,
                                  zip(names, loop_vars))
            it.end_loops(self.ctx)
            if reducers is not None:
                self.ctx.loc = self.loc(node)
                reducers.after()
            return
        if isinstance(it, (list, tuple, range)):
            jump = first_exit(node.body)
            if jump is not None:
                raise self.error(jump, f"`{jump_word(jump)}` in a loop over "
                                       "a Python sequence "
                                       "(unrolled while parsing)",
                                 "loop with T.serial(n) / range(n) over a count instead")
            self.loop_exits.append(None)
            try:
                for value in it:  # a Python sequence: unrolled while parsing
                    self.assign_target(node.target, value, node)
                    self.visit_body(node.body, new_scope=False)
            finally:
                self.loop_exits.pop()
            return
        raise self.error(node.iter, f"cannot loop over {describe(it)} in a kernel",
                         "loop over T.serial(n), T.Parallel(...), T.Pipelined(...), range(...) or a Python list")

    # Iterations of a `while` over Python values (unrolled while parsing) before it is an error.
    PYTHON_WHILE_LIMIT = 4096

    def stmt_While(self, node: ast.While) -> None:
        """`while cond:` on kernel values: a loop of unknown trip count (the condition is evaluated
        before every iteration). On Python values: unrolled while parsing, like a `for` over a list."""
        if node.orelse:
            raise self.error(node, "`while ... else` is not supported in a kernel", "remove the else block")
        cond = self._condition(node.test)
        if not is_ir(cond):
            self._unroll_python_while(node, cond)
            return
        has_break, has_continue = exits_of(node.body)
        exits = LoopExit(self.builder, self.loc(node), has_break, has_continue) if has_break or has_continue else None
        if exits is not None and exits.broke is not None:  # leaves once the flag is set, cond unevaluated
            cond = _tilec.binary("And", exits.not_broken(self.loc(node)), to_expr(cond), self.loc(node))
        self.builder.begin_while(to_expr(cond), self.loc(node))
        self._visit_loop_body(node.body, exits)
        self.builder.end_frame()

    def _visit_loop_body(self, body: list, exits: Optional[LoopExit], bindings=()) -> None:
        """The body of an IR loop (its frame already open): a scope of its own with `bindings`
        (name, loop variable), and the per-iteration guard of its break / continue flags."""
        self.ir_depth += 1
        self.scopes.append(_Scope(ir_frame=True))
        for name, var in bindings:
            self.bind(name, var)
        guards = exits.begin_iteration(self.loc(body[0])) if exits is not None else 0
        self.loop_exits.append(exits)
        try:
            self.visit_body(body, new_scope=False)
        finally:
            self.loop_exits.pop()
        for _ in range(guards):
            self.builder.end_frame()
        self.scopes.pop()
        self.ir_depth -= 1

    def _unroll_python_while(self, node: ast.While, cond: Any) -> None:
        jump = first_exit(node.body)
        if jump is not None:
            raise self.error(jump, f"`{jump_word(jump)}` in a `while` over "
                                   "Python values (unrolled while parsing)",
                             "put the exit into the condition, or loop over kernel values")
        self.loop_exits.append(None)
        try:
            for _ in range(self.PYTHON_WHILE_LIMIT):
                if not cond:
                    return
                self.visit_body(node.body, new_scope=False)
                cond = self._condition(node.test)
                if is_ir(cond):
                    raise self.error(node.test, "this while-condition was a Python value on entry and became a "
                                                "kernel value inside the loop",
                                     "make it a kernel value from the start (e.g. a T.alloc_var counter)")
        finally:
            self.loop_exits.pop()
        raise self.error(node, f"a `while` over Python values ran {self.PYTHON_WHILE_LIMIT} times while parsing "
                               "(it is unrolled, like a `for` over a Python list)",
                         "loop over kernel values (e.g. a T.alloc_var counter), or over T.serial(n)")

    def _loop_exits_of(self, node: ast.For, it: Any) -> Optional[LoopExit]:
        """The flags of a loop whose body has its own break / continue (None: it has none)."""
        has_break, has_continue = exits_of(node.body)
        if not (has_break or has_continue):
            return None
        jump = first_exit(node.body)
        word = jump_word(jump)
        if it.kind not in EXIT_KINDS:
            raise self.error(jump, f"`{word}` in a {it.what} loop: its iterations do not run one after another",
                             "leave early only from T.serial / range / T.unroll loops; in a T.Parallel or "
                             "T.Pipelined loop, use an `if` around the rest of the body")
        return LoopExit(self.builder, self.loc(node), has_break, has_continue)

    def _evals_to(self, node: ast.AST, target: Any) -> bool:
        if isinstance(node, ast.Name):
            try:
                return self.lookup(node.id, node) is target
            except CompileError:
                return False
        return False

    def stmt_With(self, node: ast.With) -> None:
        from ..language.frames import Frame, KernelFrame

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
            if isinstance(frame, KernelFrame):
                self._declare_pending_tensors()
            if item.optional_vars is not None:
                self._bind_with_target(item.optional_vars, result)
        self.ir_depth += 1
        self.visit_body(node.body, new_scope=False)
        self.ir_depth -= 1
        for frame in reversed(frames):
            self.scopes.pop()
            frame.end(self.ctx)

    def _declare_pending_tensors(self) -> None:
        """T.make_tensor over a pointer parameter written before the kernel: the kernel's own
        buffer, bound to the same name inside it (language/pointers.py)."""
        from ..language.pointers import PendingTensor

        for scope in self.scopes[:-1]:
            for name, value in list(scope.items()):
                if isinstance(value, PendingTensor):
                    self.bind(name, value.declare(self.ctx))

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
            self._return_outputs(node)
            return
        if self.ir_depth > 0:
            raise self.error(node, "`return` inside a loop, if or with block of a T.macro is not supported",
                             "return at the end of the macro")
        self.return_value = self.eval(node.value) if node.value is not None else None
        self.returned = True

    def _return_outputs(self, node: ast.Return) -> None:
        """`return C` / `return C, D` in a kernel: the T.empty tensors are its outputs."""
        value = self.eval(node.value) if node.value is not None else None
        values = list(value) if isinstance(value, (list, tuple)) else ([] if value is None else [value])
        for v in values:
            if not (isinstance(v, Buffer) and any(v.same_as(o) for o in self.ctx.outputs)):
                raise self.error(node, "a kernel can only return tensors made with T.empty",
                                 "write results into a tensor parameter (and list it in out_idx), or declare "
                                 "the output with C = T.empty(shape, dtype) and return C")
        if self.ir_depth > 0 or self.ctx.returned_outputs is not None:
            raise self.error(node, "`return` of a kernel's outputs must be its last statement, at the top level")
        self.ctx.returned_outputs = values

    def stmt_Assert(self, node: ast.Assert) -> None:
        cond = self.eval(node.test)
        if is_ir(cond):
            raise self.error(node, "`assert` on a kernel value is not supported",
                             "assert on Python values (block sizes, ...) only")
        if not cond:
            msg = self.eval(node.msg) if node.msg is not None else "assertion failed"
            raise self.error(node, str(msg))

    # -------------------------------------------------------------------- expressions
