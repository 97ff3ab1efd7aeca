"""Lines of `T` code per program (issue 10: "each example stays short: report its lines of T code
next to its throughput").

A program is a top-level builder function (e.g. `flash_attention(...)`); its T code is every
function inside it decorated with `@T.prim_func` or `@T.macro`: the `def` line and the body,
without blank lines, comment-only lines and docstrings. Host-side Python around the kernels
(shape arithmetic, block-size choice) is not counted.

    python bench/t_lines.py                      # the attention programs
    python bench/t_lines.py examples/gemm.py     # any files
"""
from __future__ import annotations

import ast
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
ATTENTION = ["python/tilec/ops/attention_kernels.py", "examples/flash_attention_varlen.py",
             "examples/flash_decoding.py", "examples/mla_decode.py", "examples/flash_attention_fp8.py"]
T_DECORATORS = {"prim_func", "macro"}


def _is_t_function(node: ast.AST) -> bool:
    if not isinstance(node, ast.FunctionDef):
        return False
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if isinstance(target, ast.Attribute) and target.attr in T_DECORATORS:
            return True
    return False


def _docstring_lines(fn: ast.FunctionDef) -> set:
    first = fn.body[0] if fn.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return set(range(first.lineno, first.end_lineno + 1))
    return set()


def count_function(fn: ast.FunctionDef, lines: list) -> int:
    skip = _docstring_lines(fn)
    n = 0
    for ln in range(fn.lineno, fn.end_lineno + 1):
        text = lines[ln - 1].strip()
        if text and not text.startswith("#") and ln not in skip:
            n += 1
    return n


def programs(path: str) -> list:
    """[(builder name, T lines, [kernel names])] for the top-level functions of `path` that hold T code."""
    src = open(path).read()
    lines = src.splitlines()
    out = []
    for top in ast.parse(src).body:
        if not isinstance(top, ast.FunctionDef):
            continue
        kernels = [n for n in ast.walk(top) if n is not top and _is_t_function(n)]
        if kernels:
            out.append((top.name, sum(count_function(k, lines) for k in kernels), [k.name for k in kernels]))
    return out


def main(argv: list) -> None:
    paths = argv or [os.path.join(ROOT, p) for p in ATTENTION]
    print("| program | file | lines of T | kernels |")
    print("|---|---|---|---|")
    for path in paths:
        for name, n, kernels in programs(path):
            print(f"| `{name}` | {os.path.relpath(path, ROOT)} | {n} | {', '.join(kernels)} |")


if __name__ == "__main__":
    main(sys.argv[1:])
