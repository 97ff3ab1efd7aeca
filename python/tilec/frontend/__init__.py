"""The Python front end: walks a kernel's AST and builds tile IR through the C++ builder."""

from .function import build_function, parse_python_function, prim_func
from .macro import Macro, macro
from .parser import Env, Parser

__all__ = ["prim_func", "macro", "Macro", "build_function", "parse_python_function", "Env", "Parser"]
