"""T.Parallel loops that update a T.alloc_reducer buffer (language/reducer.py has the semantics).

    for i, j in T.Parallel(M, N):         part = T.alloc_fragment((M, N), dtype)
        o[i] += f(i, j)            ->     T.fill(part, identity)
                                          for i, j in T.Parallel(M, N):
                                              part[i, j] += f(i, j)
                                          T.reduce_sum(part, o, dim=1, clear=False)

Every access of the reducer in the loop must index it with the loop variables, in loop order,
one of them left out (the dimension that is reduced), or be `r[0]` of a one-element reducer in a
one-dimensional loop; with none left out the loop updates each element from one iteration and is
kept as written. Other forms are a CompileError.
"""

from __future__ import annotations

import ast
import copy
from typing import Any, Optional

from ..errors import CompileError
from .values import is_ir


class ReducerLoop:
    """The rewrite of one T.Parallel loop: `body` to parse instead of the loop's, `before()` and
    `after()` around the loop."""

    def __init__(self, parser, body: list, parts: list):
        self.parser = parser
        self.body = body
        self.parts = parts  # (reducer buffer, op, part name, reduced dim, reducer's name)

    def before(self, extents: list) -> None:
        from ..language.ops import alloc_fragment, fill, infinity

        for buf, op, name, _, var_name in self.parts:
            self.parser.ctx.pending_name = f"{var_name}_part"  # the buffer's name in the IR
            try:
                part = alloc_fragment(list(extents), buf.dtype)
            finally:
                self.parser.ctx.pending_name = None
            if op == "sum":
                identity = 0
            elif not str(buf.dtype).startswith(("float", "bfloat")):
                raise CompileError(f"T.alloc_reducer(op={op!r}) on {buf.dtype}: tilec supports max / min reducers "
                                   "of floating-point types", hint="use op='sum', or a float reducer")
            else:
                identity = -infinity(buf.dtype) if op == "max" else infinity(buf.dtype)
            fill(part, identity)
            self.parser.bind(name, part)

    def after(self) -> None:
        from ..language.reductions import reduce_max, reduce_min, reduce_sum

        fold = {"sum": reduce_sum, "max": reduce_max, "min": reduce_min}
        for buf, op, name, dim, _ in self.parts:
            fold[op](self.parser.lookup(name, None), buf, dim=dim, clear=False)


def plan_reducer_loop(parser, node: ast.For, kind: str, names: list) -> Optional[ReducerLoop]:
    """The rewrite of a T.Parallel loop whose body updates reducers, or None."""
    reducer_ops = getattr(parser.ctx, "reducer_ops", None)
    if not reducer_ops or kind != "Parallel":
        return None
    body = _desugar_updates(parser, node.body, reducer_ops)  # T.reducer_update(r[i], v) -> r[i] += v, ...
    unchanged = None if body is node.body else ReducerLoop(parser, body, [])
    live = [n for stmt in body for n in _live_nodes(parser, stmt)]  # each if-test evaluated once
    written = _written_reducers(parser, live, reducer_ops)
    if not written:
        return unchanged
    parts, renames = [], {}
    for k, (var_name, (buf, op)) in enumerate(written.items()):
        index = _reducer_index(parser, live, var_name, names)
        if len(index) == len(names):
            continue  # one iteration per element: nothing to combine
        dim = next(d for d, n in enumerate(names) if n not in index)
        part_name = f"_reducer_part_{len(parser.scopes)}_{k}"
        parts.append((buf, op, part_name, dim, var_name))
        renames[var_name] = part_name
    if not parts:
        return unchanged
    body = [_Rename(renames, names).visit(copy.deepcopy(stmt)) for stmt in body]
    return ReducerLoop(parser, [ast.fix_missing_locations(s) for s in body], parts)


def _desugar_updates(parser, body: list, reducer_ops: dict) -> list:
    """TileLang's reducer v2 `T.reducer_update(r[idx], value)` statements as the updates this module
    folds: `r[idx] += value` (sum), `r[idx] = T.max(r[idx], value)` (max; min alike). `body` itself
    when there are none."""
    rewriter = _UpdateRewriter(parser, reducer_ops)
    out = [rewriter.visit(copy.deepcopy(stmt)) for stmt in body]
    return [ast.fix_missing_locations(s) for s in out] if rewriter.changed else body


class _UpdateRewriter(ast.NodeTransformer):
    def __init__(self, parser, reducer_ops: dict):
        self.parser, self.reducer_ops, self.changed = parser, reducer_ops, False

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        call = node.value
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "reducer_update"):
            return node
        if len(call.args) != 2 or call.keywords:
            raise self.parser.error(node, "T.reducer_update takes the reducer element and the value",
                                    "write T.reducer_update(acc[i], value)")
        target, value = call.args
        reducer = _lookup(self.parser, target.value.id) if isinstance(target, ast.Subscript) and \
            isinstance(target.value, ast.Name) else None
        if reducer is None or id(reducer) not in self.reducer_ops:
            raise self.parser.error(node, "T.reducer_update's first argument must be an element of a "
                                          "T.alloc_reducer buffer", "write T.reducer_update(acc[i], value)")
        op = self.reducer_ops[id(reducer)][1]
        store = ast.Subscript(value=copy.deepcopy(target.value), slice=copy.deepcopy(target.slice), ctx=ast.Store())
        self.changed = True
        if op == "sum":
            return ast.copy_location(ast.AugAssign(target=store, op=ast.Add(), value=value), node)
        combine = ast.Call(func=ast.Attribute(value=copy.deepcopy(call.func.value), attr=op, ctx=ast.Load()),
                           args=[copy.deepcopy(target), value], keywords=[])
        return ast.copy_location(ast.Assign(targets=[store], value=combine), node)


def _written_reducers(parser, live: list, reducer_ops: dict) -> dict:
    """name -> (buffer, op) of the reducers the loop body (its `live` nodes) stores into; each store
    must be the reducer's own update (a CompileError otherwise: folding it with another op would be
    wrong)."""
    found = {}
    for n in live:
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AugAssign) else []
        for t in targets:
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                value = _lookup(parser, t.value.id)
                if value is not None and id(value) in reducer_ops:
                    found[t.value.id] = reducer_ops[id(value)]
                    _check_update(parser, n, t, found[t.value.id][1])
    return found


def _check_update(parser, stmt: ast.AST, target: ast.Subscript, op: str) -> None:
    """`r[i] += v` for a sum reducer, `r[i] = T.max(r[i], v)` (either order) for max, T.min for min."""
    if op == "sum":
        ok = isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add)
        form = f"{target.value.id}[...] += value"
    else:
        call = stmt.value if isinstance(stmt, ast.Assign) else None
        ok = (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == op
              and len(call.args) == 2 and any(ast.unparse(a) == ast.unparse(target) for a in call.args))
        form = f"{target.value.id}[...] = T.{op}({target.value.id}[...], value)"
    if not ok:
        raise parser.error(stmt, f"a store into the {op} reducer '{target.value.id}' that is not its update",
                           f"write {form} (T.alloc_reducer(..., op={op!r}))")


def _live_nodes(parser, node: ast.AST):
    """The nodes under `node` that parsing can reach: of an `if` on a Python value (e.g. a jit
    factory's `if op == "sum":`) only the taken branch; everything else, both branches."""
    if isinstance(node, ast.If):
        try:
            test = parser.eval(node.test)
            taken = None if is_ir(test) else (node.body if test else node.orelse)
        except Exception:  # noqa: BLE001 - e.g. a loop variable not bound yet: an IR condition
            taken = None
        if taken is not None:
            yield node
            for stmt in taken:
                yield from _live_nodes(parser, stmt)
            return
    yield node
    for child in ast.iter_child_nodes(node):
        yield from _live_nodes(parser, child)


def _lookup(parser, name: str) -> Any:
    try:
        return parser.lookup(name, None)
    except CompileError:
        return None


def _reducer_index(parser, live: list, var_name: str, names: list) -> list:
    """The loop variables that index the reducer, the same at every access (else a CompileError)."""
    seen = None
    for n in live:
        if not (isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == var_name):
            continue
        elts = n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]
        if len(names) == 1 and len(elts) == 1 and isinstance(elts[0], ast.Constant) and elts[0].value == 0:
            index = []  # a one-element reducer summed over a one-dimensional loop: r[0] += x[j]
        else:
            index = [e.id if isinstance(e, ast.Name) else None for e in elts]
        ok = None not in index and index == [v for v in names if v in index] and len(index) >= len(names) - 1
        if not ok or (seen is not None and index != seen):
            raise parser.error(n, f"reducer '{var_name}' indexed with {ast.unparse(n.slice)} in a T.Parallel loop "
                                  f"over ({', '.join(names)})",
                               "index a reducer with the loop variables in loop order, all of them or all but "
                               "the one it reduces over (e.g. o[i] in `for i, j in T.Parallel(M, N)`)")
        seen = index
    return seen or []


class _Rename(ast.NodeTransformer):
    """Reducer accesses -> the loop's partial buffer, indexed with every loop variable."""

    def __init__(self, renames: dict, names: list):
        self.renames = renames
        self.names = names

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.value, ast.Name) and node.value.id in self.renames:
            index = ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Load()) for n in self.names], ctx=ast.Load())
            return ast.copy_location(ast.Subscript(value=ast.Name(id=self.renames[node.value.id], ctx=ast.Load()),
                                                   slice=index, ctx=node.ctx), node)
        return node
