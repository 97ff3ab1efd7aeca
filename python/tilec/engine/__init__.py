"""`tilelang.engine`: only the callback registry programs import."""

from . import callback  # noqa: F401
