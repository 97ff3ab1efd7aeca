"""`tilelang.tileop`: the GEMM warp policy enum (`tilelang.tileop.base.GemmWarpPolicy`)."""

from . import base  # noqa: F401
