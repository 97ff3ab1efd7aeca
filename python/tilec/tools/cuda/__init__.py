"""`tilelang.tools.cuda`: iket (in-kernel event tracing), accepted and ignored (iket.py)."""

from . import iket  # noqa: F401
