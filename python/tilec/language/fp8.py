"""`tilelang.language.fp8`: the FP8 dtype names of the GPU (CUDA: E4M3FN / E5M2)."""

from __future__ import annotations

from typing import Any

from .dtypes import DTYPES, as_torch


def determine_fp8_type(fp8_format: str = "e4m3"):
    if fp8_format not in ("e4m3", "e5m2"):
        raise ValueError(f"unsupported FP8 format {fp8_format!r}: use \"e4m3\" or \"e5m2\"")
    return DTYPES["float8_e4m3fn"] if fp8_format == "e4m3" else DTYPES["float8_e5m2"]


def determine_torch_fp8_type(fp8_format: str = "e4m3") -> Any:
    return as_torch(determine_fp8_type(fp8_format))
