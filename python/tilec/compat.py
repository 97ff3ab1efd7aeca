"""`import tilec.compat` makes `import tilelang` and `import tilelang.language as T` (and any
`tilelang.X` for which a `tilec.X` exists) resolve to tilec, so an upstream TileLang program
runs unmodified after that one import. `install(alias_tvm=True)` (what `python -m tilec.run`
does) also makes `import tvm` resolve to `tilec.tvm`, tilec's small stand-in for the few TVM
names TileLang programs use, unless a real TVM is installed."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

import tilec
import tilec.language

_PREFIX = "tilelang"


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `<alias>[.X]` as the module object `<real>[.X]` (the same object, not a copy)."""

    def __init__(self, alias: str = _PREFIX, real: str = "tilec"):
        self.alias = alias
        self.real = real

    def _real_name(self, fullname: str) -> str:
        return self.real + fullname[len(self.alias):]

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.alias and not fullname.startswith(self.alias + "."):
            return None
        real = self._real_name(fullname)
        try:
            if real not in sys.modules and importlib.util.find_spec(real) is None:
                return None
        except ModuleNotFoundError:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        module = importlib.import_module(self._real_name(spec.name))
        self._saved = (module.__spec__, getattr(module, "__loader__", None))
        return module

    def exec_module(self, module):
        # Keep the real module's identity: restore what the import system overwrote.
        spec, loader = self._saved
        module.__spec__ = spec
        module.__loader__ = loader


def _has_real_tvm() -> bool:
    if "tvm" in sys.modules:
        return not getattr(sys.modules["tvm"], "__tilec_stand_in__", False)
    try:
        return importlib.util.find_spec("tvm") is not None
    except (ImportError, ValueError):
        return False


def install(alias_tvm: bool = False) -> None:
    """Registers the alias finder (idempotent) and the two modules every program imports."""
    if not any(isinstance(f, _AliasFinder) and f.alias == _PREFIX for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())
    if alias_tvm and not _has_real_tvm() and \
            not any(isinstance(f, _AliasFinder) and f.alias == "tvm" for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder("tvm", "tilec.tvm"))
    # Modules already loaded are aliased directly: importing them again under the alias then
    # finds them in sys.modules and does not rebind attributes of the package (`tilelang.jit`
    # stays the decorator, not the module of the same name).
    for name, module in list(sys.modules.items()):
        if name == "tilec" or name.startswith("tilec."):
            sys.modules.setdefault(_PREFIX + name[len("tilec"):], module)


install()
