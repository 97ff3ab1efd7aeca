"""`tilelang.tools.cuda`: not part of tilec (see tools/__init__.py)."""

from . import iket  # noqa: F401
