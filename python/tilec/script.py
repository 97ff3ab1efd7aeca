"""T-script text back to IR: ``from_script(prim_func.script())`` gives a structurally equal
function. The text is what the printer writes (docs/TSCRIPT.md): module-level lines such as
``m = T.dynamic("m")``, then one ``@T.prim_func`` definition."""

from __future__ import annotations

import ast
import builtins
import itertools
import linecache
from typing import Optional

from .errors import CompileError
from .frontend.function import build_function
from .frontend.parser import Env

_counter = itertools.count(1)


def from_script(text: str, filename: Optional[str] = None):
    """Parses T-script text into a PrimFunc."""
    __tracebackhide__ = True  # pytest and IPython leave this frame out of tracebacks
    from . import language

    filename = filename or f"<tscript-{next(_counter)}>"
    lines = text.splitlines(True)
    linecache.cache[filename] = (len(text), None, lines, filename)
    try:
        tree = ast.parse(text, filename=filename)
    except SyntaxError as e:
        raise CompileError(f"invalid T-script: {e.msg}", filename, e.lineno or 0, e.offset or 0) from None
    namespace = {"T": language, "__builtins__": builtins, "__name__": "__tscript__"}
    funcs = []
    try:
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef):
                funcs.append(build_function(stmt, Env(namespace), filename))
            else:
                exec(compile(ast.Module(body=[stmt], type_ignores=[]), filename, "exec"), namespace)
    except CompileError as e:
        raise e.with_traceback(None) from None
    if len(funcs) != 1:
        raise CompileError(f"a T-script text must define exactly one function, found {len(funcs)}", filename, 1, 1)
    return funcs[0]
