"""`tilelang.utils`: tensor helpers (`tilelang.utils.tensor`)."""

from . import tensor  # noqa: F401
