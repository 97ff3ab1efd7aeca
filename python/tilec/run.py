"""`python -m tilec.run PROGRAM.py [args...]`: runs an upstream TileLang program unmodified,
with `import tilelang` (and `tilelang.X`, and `tvm` where no real TVM is installed) resolving to
tilec. The program runs as `__main__` with its own folder first on sys.path, as `python
PROGRAM.py` would run it."""

from __future__ import annotations

import os
import runpy
import sys


def run_program(path: str, argv: list) -> None:
    from . import compat

    compat.install(alias_tvm=True)
    program = os.path.abspath(path)
    sys.argv = [program, *argv]
    sys.path.insert(0, os.path.dirname(program))
    runpy.run_path(program, run_name="__main__")


def main(argv: list = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    if not os.path.isfile(argv[0]):
        print(f"tilec.run: no such program: {argv[0]}", file=sys.stderr)
        return 2
    run_program(argv[0], argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
