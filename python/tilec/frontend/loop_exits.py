"""`break` and `continue` in the kernel's sequential loops, as flags (upstream's top-k selector).

The IR has no jump statements; a loop that leaves early becomes a loop whose iterations do
nothing once a flag is set, which keeps every pass's view of loops unchanged:

    for i in T.serial(n):          broke = 0                       (a local.var, per thread)
        A                          for i in T.serial(n):
        if c:                          if broke == 0:
            break          ->              skip = 0                (only with `continue`)
        B                                  A
                                           if c: broke = 1
                                           if broke == 0 and skip == 0:
                                               B

After every statement that may leave the loop (one holding a `break` / `continue` that
belongs to this loop, not to a nested one), the rest of its block runs under the guard. The
iterations after a `break` still run their (empty) bodies: the trip count stays what the
loop says, which is what `T.serial` promises the passes.

Only loops that run their iterations one after another may leave early: `T.serial`,
`range`, `T.unroll`. T.Parallel / T.Pipelined / T.vectorized iterations are not ordered
(or are reordered by the compiler), so a `break` there is a clear error.
"""

from __future__ import annotations

import ast
from typing import Optional

from .. import _tilec

EXIT_KINDS = ("serial", "unroll")


def exits_of(stmts: list) -> tuple:
    """(has_break, has_continue) for jumps in `stmts` that belong to the enclosing loop."""
    found = {ast.Break: None, ast.Continue: None}
    _walk_exits(stmts, found)
    return found[ast.Break] is not None, found[ast.Continue] is not None


def first_exit(stmts: list) -> Optional[ast.stmt]:
    """The first `break` / `continue` in `stmts` that belongs to the enclosing loop."""
    found = {ast.Break: None, ast.Continue: None}
    _walk_exits(stmts, found)
    nodes = [n for n in found.values() if n is not None]
    return min(nodes, key=lambda n: (n.lineno, n.col_offset)) if nodes else None


def _walk_exits(stmts: list, found: dict) -> None:
    def walk(node: ast.AST) -> None:
        if isinstance(node, (ast.Break, ast.Continue)):
            found[type(node)] = found[type(node)] or node
            return
        if isinstance(node, (ast.For, ast.While, ast.AsyncFor, ast.FunctionDef, ast.AsyncFunctionDef,
                             ast.ClassDef, ast.Lambda)):
            return  # jumps in there belong to that loop (or function)
        for child in ast.iter_child_nodes(node):
            walk(child)

    for s in stmts:
        walk(s)


def jump_word(jump: ast.stmt) -> str:
    """'break' or 'continue', for messages."""
    return "break" if isinstance(jump, ast.Break) else "continue"


def may_exit(stmt: ast.stmt) -> bool:
    b, c = exits_of([stmt])
    return b or c


class LoopExit:
    """The flags of one loop that leaves early; None entries on the parser's stack stand for
    loops without jumps (a jump inside belongs to a nested loop of its own)."""

    def __init__(self, builder, loc, has_break: bool, has_continue: bool):
        self.builder = builder
        self.broke = self._flag("loop_broke", loc) if has_break else None
        self.skipped = self._flag("loop_skipped", loc) if has_continue else None
        if self.broke is not None:
            self._set(self.broke, 0, loc)

    def _flag(self, name: str, loc):
        return self.builder.alloc(name, [1], "int32", "local.var", loc)

    def _set(self, flag, value: int, loc) -> None:
        self.builder.store(flag, [_tilec.int_imm(0, "int32", loc)], _tilec.int_imm(value, "int32", loc), loc)

    def _clear(self, flag, loc):
        load = _tilec.buffer_load(flag, [_tilec.int_imm(0, "int32", loc)], loc)
        return _tilec.binary("EQ", load, _tilec.int_imm(0, "int32", loc), loc)

    def not_broken(self, loc):
        """`broke == 0`: the condition a `while` with a `break` adds to its own."""
        return self._clear(self.broke, loc)

    def begin_iteration(self, loc) -> int:
        """Opens the per-iteration guard; returns the number of frames opened."""
        frames = 0
        if self.broke is not None:
            self.builder.begin_if(self._clear(self.broke, loc), loc)
            frames += 1
        if self.skipped is not None:
            self._set(self.skipped, 0, loc)
        return frames

    def on_break(self, loc) -> None:
        self._set(self.broke, 1, loc)

    def on_continue(self, loc) -> None:
        self._set(self.skipped, 1, loc)

    def guard_rest(self, loc) -> None:
        """Opens `if` over the rest of a block after a statement that may leave."""
        cond: Optional[object] = None
        for flag in (self.broke, self.skipped):
            if flag is None:
                continue
            c = self._clear(flag, loc)
            cond = c if cond is None else _tilec.binary("And", cond, c, loc)
        self.builder.begin_if(cond, loc)
