"""`import tilec.compat` makes `import tilelang` and `import tilelang.language as T` (and any
`tilelang.X` for which a `tilec.X` exists) resolve to tilec, so an upstream TileLang program
runs unmodified after that one import."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

import tilec
import tilec.language

_PREFIX = "tilelang"


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `tilelang[.X]` as the module object `tilec[.X]` (the same object, not a copy)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _PREFIX and not fullname.startswith(_PREFIX + "."):
            return None
        real = "tilec" + fullname[len(_PREFIX):]
        if real not in sys.modules and importlib.util.find_spec(real) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        module = importlib.import_module("tilec" + spec.name[len(_PREFIX):])
        self._saved = (module.__spec__, getattr(module, "__loader__", None))
        return module

    def exec_module(self, module):
        # Keep the real module's identity: restore what the import system overwrote.
        spec, loader = self._saved
        module.__spec__ = spec
        module.__loader__ = loader


def install() -> None:
    """Registers the alias finder (idempotent) and the two modules every program imports."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())
    # Modules already loaded are aliased directly: importing them again under the alias then
    # finds them in sys.modules and does not rebind attributes of the package (`tilelang.jit`
    # stays the decorator, not the module of the same name).
    for name, module in list(sys.modules.items()):
        if name == "tilec" or name.startswith("tilec."):
            sys.modules.setdefault(_PREFIX + name[len("tilec"):], module)


install()
