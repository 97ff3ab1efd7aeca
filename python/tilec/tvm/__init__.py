"""A stand-in for the few TVM names TileLang programs use (`from tilelang import tvm`,
`from tvm import DataType, tirx`): `DataType(dtype).bits`, `tirx.const`, `tirx.PrimExpr`,
`tirx.reinterpret`, `target.Target` for CUDA strings. tilec is not built on TVM; anything
else raises an AttributeError that says so (docs/LANGUAGE.md, "TVM names")."""

from __future__ import annotations

from . import target, testing, tirx
from .tirx import DataType

__tilec_stand_in__ = True
tir = tirx

__all__ = ["DataType", "tirx", "tir", "target", "testing"]


def __getattr__(name: str):
    raise AttributeError(f"tvm.{name} is not available: tilec is not built on TVM and provides only "
                         "tvm.DataType, tvm.tirx (const, PrimExpr, reinterpret, Cast), tvm.target.Target and "
                         "tvm.testing.requires_package")
