"""tilec: a tile-level GPU kernel compiler implementing the TileLang programming model.

    import tilec
    import tilec.language as T

    @tilec.jit(out_idx=[-1])
    def matmul(M, N, K, block_M=128, block_N=128, block_K=32): ...
"""

from .errors import CompileError, InternalError

try:
    from . import _tilec
except ImportError as _e:  # pragma: no cover - a broken install
    raise ImportError(
        "tilec's C++ extension (_tilec) is not built: install with `pip install --no-build-isolation .` "
        f"in the tilec checkout ({_e})"
    ) from None

_tilec._set_error_types(CompileError, InternalError)

from . import language  # noqa: E402
from .jit import JITImpl, compile, jit, normalize_target  # noqa: E402
from .script import from_script  # noqa: E402

__version__ = "0.1.0"

__all__ = ["CompileError", "InternalError", "JITImpl", "compile", "from_script", "jit", "language"]
