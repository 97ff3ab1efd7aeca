"""Modules of upstream TileLang that tilec deliberately leaves out: importing a name from them
raises NotImplementedError with what to use instead, rather than ModuleNotFoundError."""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types

MACRO_HINT = ("the MMA / MFMA macro generators (tilelang.cuda / tilelang.rocm intrinsics emitters, hand-scheduled "
              "ldmatrix + mma) are not part of tilec: write the tile with T.gemm, which selects the instructions")

# module prefix (under tilec) -> why it is not there
_LEFT_OUT = {
    "tilec.cuda.intrinsics.macro": MACRO_HINT,
    "tilec.rocm": "tilelang.rocm (AMD CDNA intrinsics and MFMA macro generators) is not part of tilec: tilec targets "
                  "NVIDIA GPUs; write the tile with T.gemm",
}


def _reason(fullname: str):
    for prefix, why in _LEFT_OUT.items():
        if fullname == prefix or fullname.startswith(prefix + "."):
            return why
    return None


class _LeftOutModule(types.ModuleType):
    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotImplementedError(f"{self.__name__.replace('tilec', 'tilelang', 1)}.{name}: {self.__why__}")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if _reason(fullname) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        module = _LeftOutModule(spec.name)
        module.__why__ = _reason(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


def install() -> None:
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
