"""`tilec compile FILE.py::NAME --target TARGET [--args ARGS] [-o DIR]`: compiles one kernel
of a Python file from the command line (the C++ CLI runs this module with the same arguments).

NAME is a `T.prim_func`, a function that returns one (a factory: `--args` are its arguments,
written as in a Python call: `--args "1024, 1024, 1024, dtype='bfloat16'"`), or a
`@tilec.jit` object (lazy mode). The file is imported as a module (not run as `__main__`),
with its folder on sys.path so that its own imports work.

Without `-o`, the CUDA C source is printed. With `-o DIR`, DIR/<kernel>.cu, .ptx and
.<target>.cubin are written, then the ahead-of-time export that `kernel.export(DIR)` writes:
<kernel>.tkc (cubin + launch plan) and <kernel>.h (a typed C++ launch function, docs/CPP.md);
the paths of all five are printed. Exit codes as the CLI's: 1 for an error
in the program (a CompileError, printed with file:line and hint), 2 for bad usage.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import sys
from typing import Any, List, Optional, Tuple


def parse_call_args(text: str) -> Tuple[list, dict]:
    """'1024, 64, dtype="float16"' -> ([1024, 64], {"dtype": "float16"}); literals only."""
    if not text.strip():
        return [], {}
    try:
        call = ast.parse(f"f({text})", mode="eval").body
        args = [ast.literal_eval(a) for a in call.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
    except (SyntaxError, ValueError) as e:
        raise UsageError(f"--args must be Python literals as in a call, e.g. \"1024, 1024, dtype='float16'\" ({e})")
    return args, kwargs


class UsageError(Exception):
    pass


def load_module(path: str):
    if not os.path.isfile(path):
        raise UsageError(f"no such file: {path}")
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = "_tilec_cli_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def prim_func_of(obj: Any, name: str, args: list, kwargs: dict):
    from ..jit import JITImpl
    from .._tilec import PrimFunc

    if isinstance(obj, PrimFunc):
        if args or kwargs:
            raise UsageError(f"'{name}' is a T.prim_func: it takes no --args")
        return obj, None, None
    if isinstance(obj, JITImpl):
        if obj.mode == "eager":
            raise UsageError(f"'{name}' is an eager @tilec.jit kernel (it needs tensors); use a factory")
        return obj.get_tir(*args, **kwargs), obj.out_idx, obj.pass_configs
    if callable(obj):
        made = obj(*args, **kwargs)
        if isinstance(made, PrimFunc):
            return made, None, None
        raise UsageError(f"'{name}(...)' returned a {type(made).__name__}, not a T.prim_func")
    raise UsageError(f"'{name}' is a {type(obj).__name__}, not a T.prim_func or a function that returns one")


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="tilec compile", description=__doc__.split("\n\n")[0])
    p.add_argument("spec", metavar="FILE.py::NAME")
    p.add_argument("--target", default="auto", help="sm_80, sm_86, sm_89, sm_90, sm_90a or auto (default)")
    p.add_argument("--args", default="", help="the factory's arguments, as in a Python call")
    p.add_argument("-o", "--output-dir", default=None,
                   help="write <kernel>.cu/.ptx/.<target>.cubin and the AOT export (<kernel>.tkc, <kernel>.h) there")
    ns = p.parse_args(argv)

    from ..errors import CompileError

    try:
        path, sep, name = ns.spec.rpartition("::")
        if not sep or not path or not name:
            raise UsageError(f"expected FILE.py::NAME, got '{ns.spec}'")
        args, kwargs = parse_call_args(ns.args)
        module = load_module(path)
        if not hasattr(module, name):
            raise UsageError(f"{path} has no '{name}'")
        func, out_idx, configs = prim_func_of(getattr(module, name), name, args, kwargs)
        import tilec

        kernel = tilec.compile(func, out_idx=out_idx, target=ns.target, pass_configs=configs)
    except UsageError as e:
        print(f"tilec compile: {e}", file=sys.stderr)
        return 2
    except CompileError as e:
        print(e, file=sys.stderr)
        return 1
    if ns.output_dir is None:
        sys.stdout.write(kernel.get_kernel_source())
        return 0
    os.makedirs(ns.output_dir, exist_ok=True)
    base = os.path.join(ns.output_dir, kernel.kernel_name)
    written = [(base + ".cu", kernel.get_kernel_source().encode()),
               (base + ".ptx", kernel.get_ptx().encode()),
               (f"{base}.{kernel.target}.cubin", bytes(kernel.get_cubin()))]
    for file, data in written:
        if data:
            with open(file, "wb") as f:
                f.write(data)
            print(file)
    # The C++ export (kernel.export): the artifact and its typed launch header.
    for file in kernel.export(ns.output_dir):
        print(os.path.join(ns.output_dir, os.path.basename(file)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
