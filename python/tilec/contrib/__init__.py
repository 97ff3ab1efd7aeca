"""`tilelang.contrib`: the `nvcc` helpers programs use."""

from . import nvcc  # noqa: F401
