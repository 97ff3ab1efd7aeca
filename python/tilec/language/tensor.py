"""Parameter annotations: ``T.Tensor((M, K), "float16")`` (alias ``T.Buffer``),
``T.StridedTensor(shape, strides, dtype)``, and symbolic dimensions ``T.dynamic("m")``
(alias ``T.symbolic``)."""

from __future__ import annotations

import os
import sys
from typing import Any, Optional, Sequence

from .. import _tilec
from ..errors import CompileError
from ..frontend import context
from .dtypes import dtype_str


class TensorSpec:
    """What a tensor parameter annotation says: shape, dtype, optional strides."""

    __slots__ = ("shape", "dtype", "strides")

    def __init__(self, shape: Sequence[Any], dtype: Any, strides: Optional[Sequence[Any]] = None):
        if isinstance(shape, (int, _tilec.Expr)):
            shape = (shape,)
        if not isinstance(shape, (list, tuple)):
            raise CompileError(f"a tensor shape must be a tuple, got a {type(shape).__name__}",
                               hint="write T.Tensor((M, N), dtype)")
        self.shape = tuple(shape)
        self.dtype = dtype_str(dtype, "tensor dtype")
        self.strides = tuple(strides) if strides is not None else None
        if self.strides is not None and len(self.strides) != len(self.shape):
            raise CompileError(f"a tensor of {len(self.shape)} dimensions got {len(self.strides)} strides",
                               hint="give one stride per dimension")

    def __repr__(self) -> str:
        if self.strides is not None:
            return f"T.StridedTensor({self.shape}, {self.strides}, {self.dtype!r})"
        return f"T.Tensor({self.shape}, {self.dtype!r})"


_NO_DTYPE = object()  # T.Tensor(shape) with no dtype: an error for parameters (no silent float32)
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _caller_loc() -> tuple:
    """(file, line) of the innermost frame outside tilec: where the user wrote the
    annotation (Python evaluates a def's annotations before tilec parses the body)."""
    f = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_PACKAGE_DIR):
        f = f.f_back
    return (f.f_code.co_filename, f.f_lineno) if f is not None else ("", 0)


def _missing_dtype(what: str, shape: Any) -> CompileError:
    file, line = _caller_loc()
    shape_text = repr(tuple(shape)) if isinstance(shape, (list, tuple)) else f"({shape!r},)"
    return CompileError(f"{what} needs a dtype: the element type of the tensor is not assumed",
                        file, line, 0, f'write {what}({shape_text}, "float16") (or T.float32, "bfloat16", ...)')


class _TensorType:
    """``T.Tensor(shape, dtype)`` and ``T.Tensor[shape, dtype]``."""

    _tilec_primitive = True

    def __init__(self, name: str):
        self.__name__ = name

    def __call__(self, shape: Sequence[Any], dtype: Any = _NO_DTYPE, strides: Optional[Sequence[Any]] = None,
                 **unsupported) -> TensorSpec:
        if unsupported:
            raise CompileError(f"T.{self.__name__} got unsupported keyword(s): {', '.join(unsupported)}",
                               hint="T.Tensor(shape, dtype) or T.StridedTensor(shape, strides, dtype)")
        from .views import BufferData, make_view

        dtype = self._dtype(dtype, shape)
        if isinstance(strides, BufferData):  # T.Tensor(shape, dtype, A.data): a view of A
            return make_view(shape, dtype, strides)
        return TensorSpec(shape, dtype, strides)

    def __getitem__(self, key) -> TensorSpec:
        # T.Tensor[(M, N), dtype]; also T.Tensor[(M), dtype], where (M) is just M
        if isinstance(key, tuple) and len(key) == 2 and _is_dtype(key[1]):
            return TensorSpec(key[0], key[1])
        return TensorSpec(key, self._dtype(_NO_DTYPE, key))

    def _dtype(self, dtype: Any, shape: Any) -> Any:
        if dtype is not _NO_DTYPE:
            return dtype
        if self.__name__ in ("Tensor", "Buffer"):
            raise _missing_dtype(f"T.{self.__name__}", shape)
        return "float32"  # T.SharedBuffer & co. annotate macro parameters only (documentation)

    def __repr__(self) -> str:
        return f"T.{self.__name__}"


Tensor = _TensorType("Tensor")
Buffer = _TensorType("Buffer")
# Annotations of T.macro parameters (documentation only: macro arguments are bound as given).
SharedBuffer = _TensorType("SharedBuffer")
FragmentBuffer = _TensorType("FragmentBuffer")
LocalBuffer = _TensorType("LocalBuffer")


def StridedTensor(shape: Sequence[Any], strides: Sequence[Any], dtype: Any = _NO_DTYPE) -> TensorSpec:
    if dtype is _NO_DTYPE:
        raise _missing_dtype("T.StridedTensor", shape)
    return TensorSpec(shape, dtype, strides)


StridedTensor._tilec_primitive = True  # type: ignore[attr-defined]


def _is_dtype(v: Any) -> bool:
    try:
        dtype_str(v)
        return True
    except CompileError:
        return False


def dynamic(name: str, dtype: Any = "int32") -> "_tilec.Var":
    """A symbolic dimension, bound from the tensors' shapes when the kernel is launched.
    Several at once: `b, s = T.dynamic("b, s")`."""
    names = [n for n in name.replace(",", " ").split()] if isinstance(name, str) else []
    if not names or not all(n.isidentifier() for n in names):
        raise CompileError(f"T.dynamic needs a name that is a Python identifier (or several, \"a, b\"), got {name!r}")
    made = tuple(_tilec.var(n, dtype_str(dtype), context.loc()) for n in names)
    return made[0] if len(made) == 1 else made


dynamic._tilec_primitive = True  # type: ignore[attr-defined]
symbolic = dynamic
