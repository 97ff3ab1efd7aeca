"""Fragments that the program reads and writes as per-thread scalars.

TileLang lets a program index a `T.alloc_fragment` buffer outside `T.Parallel`, e.g.

    D_local = T.alloc_fragment((1,), accum)         # or a mask row: alloc_fragment([n], bool)
    D_local[0] = D[bz]                              # every thread executes this store
    T.copy(Mask[b, :], mask_row)                    # then reads mask_row[k] in a serial loop
    for i, j in T.Parallel(M, N): acc[i, j] *= D_local[0]

Every thread executes code outside T.Parallel, so such a buffer behaves as a copy held by
every thread: a `T.alloc_local` buffer. `scan()` finds the fragments of a function that are
used only in ways for which that is exact, and the front end allocates them as local:

- indexed outside any T.Parallel loop (read or written: every thread does the same), and
- never written inside a T.Parallel loop (that distributes the writes over threads), and
- passed to no tile op other than as the destination of T.copy / T.fill / T.clear (which the
  front end expands to per-thread loops for a local destination, see `copy_into_local`).

Anything else (e.g. the output of T.reduce_* read outside T.Parallel) keeps the fragment
scope, and the verifier says where it is indexed outside T.Parallel.
"""

from __future__ import annotations

import ast
from typing import Any

_TILE_OPS_OK_AS_DST = {"copy", "fill", "clear"}
_TILE_OPS = {"copy", "fill", "clear", "gemm", "gemm_v1", "gemm_v2", "wgmma_gemm", "reduce", "reduce_max",
             "reduce_min", "reduce_sum", "reduce_abssum", "reduce_absmax", "cumsum", "cummax", "atomic_add",
             "atomic_max", "atomic_min", "tma_copy"}


def _call_name(node: ast.AST) -> str:
    f = node.func if isinstance(node, ast.Call) else None
    if isinstance(f, ast.Attribute):
        return f.attr
    if isinstance(f, ast.Name):
        return f.id
    return ""


def _is_parallel_loop(node: ast.For) -> bool:
    return isinstance(node.iter, ast.Call) and _call_name(node.iter) in ("Parallel", "parallel")


def _subscripted_name(node: ast.AST) -> str:
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        return node.value.id
    return ""


class _Scan(ast.NodeVisitor):
    def __init__(self) -> None:
        self.fragments: set = set()
        self.scalar_use: set = set()
        self.blocked: set = set()
        self.parallel_depth = 0
        self.tile_arg_nodes: set = set()  # ids of nodes that are tile-op operands (regions, not loads)

    def visit_Assign(self, node: ast.Assign) -> None:
        if isinstance(node.value, ast.Call) and _call_name(node.value) == "alloc_fragment":
            for t in node.targets:
                if isinstance(t, ast.Name):
                    self.fragments.add(t.id)
        if self.parallel_depth:
            for t in node.targets:
                self._written_in_parallel(t)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if self.parallel_depth:
            self._written_in_parallel(node.target)
        self.generic_visit(node)

    def _written_in_parallel(self, target: ast.AST) -> None:
        for t in (target.elts if isinstance(target, ast.Tuple) else [target]):
            name = _subscripted_name(t)
            if name:
                self.blocked.add(name)

    def visit_For(self, node: ast.For) -> None:
        parallel = _is_parallel_loop(node)
        self.visit(node.iter)
        self.parallel_depth += parallel
        for stmt in node.body + node.orelse:
            self.visit(stmt)
        self.parallel_depth -= parallel

    def visit_Call(self, node: ast.Call) -> None:
        op = _call_name(node)
        if op == "annotate_layout":  # a layout for a buffer fixes its scope
            self.blocked.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
        elif op in _TILE_OPS:
            operands = list(node.args) + [k.value for k in node.keywords]
            for i, a in enumerate(operands):
                name = a.id if isinstance(a, ast.Name) else _subscripted_name(a)
                if not name:
                    continue
                self.tile_arg_nodes.add(id(a))
                as_dst = (op == "copy" and i == 1) or (op in ("fill", "clear") and i == 0)
                if not as_dst or op not in _TILE_OPS_OK_AS_DST:
                    self.blocked.add(name)
        else:
            # A buffer passed whole to a helper (a macro) may be used in any way there.
            for a in list(node.args) + [k.value for k in node.keywords]:
                if isinstance(a, ast.Name):
                    self.blocked.add(a.id)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        name = _subscripted_name(node)
        if name and not self.parallel_depth and id(node) not in self.tile_arg_nodes:
            self.scalar_use.add(name)
        self.generic_visit(node)


def scan(fdef: Any) -> set:
    """Names of the fragments of function `fdef` (an ast.FunctionDef) to allocate as local."""
    s = _Scan()
    for stmt in fdef.body:
        s.visit(stmt)
    return (s.fragments & s.scalar_use) - s.blocked
