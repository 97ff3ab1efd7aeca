"""Operator tables and small helpers shared by the parser's statement and expression halves."""

from __future__ import annotations

import ast
import operator
from typing import Any

from .values import Expr

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

_UNSUPPORTED_EXPR_HINTS = {
    "Lambda": ("a lambda", "lambdas are only allowed as arguments of T.Layout / T.Fragment; use @T.macro for reusable code"),
    "Await": ("`await`", "remove it"),
    "Yield": ("`yield`", "remove it"),
    "YieldFrom": ("`yield from`", "remove it"),
    "NamedExpr": ("`:=`", "assign on its own line"),
}

class _Scope(dict):
    """Names bound in one block of the kernel. `ir_frame`: the block is the body of an IR
    loop / if / with (its bindings end with it)."""

    def __init__(self, ir_frame: bool):
        super().__init__()
        self.ir_frame = ir_frame
