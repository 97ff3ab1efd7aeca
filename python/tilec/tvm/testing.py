"""`tvm.testing`: the skip decorators TileLang programs use, from tilec.testing."""

from ..testing import requires_cuda, requires_package  # noqa: F401
