"""tilec: a tile-level GPU kernel compiler implementing the TileLang programming model.

    import tilec
    import tilec.language as T

    @tilec.jit(out_idx=[-1])
    def matmul(M, N, K, block_M=128, block_N=128, block_K=32): ...
"""

from .errors import CompileError, InternalError, TilecNote, TilecWarning, install_excepthook

try:
    from . import _tilec
except ImportError as _e:  # pragma: no cover - a broken install
    raise ImportError(
        "tilec's C++ extension (_tilec) is not built: install with `pip install --no-build-isolation .` "
        f"in the tilec checkout ({_e})"
    ) from None

_tilec._set_error_types(CompileError, InternalError)
install_excepthook()

from . import language  # noqa: E402
from .jit import JITImpl, compile, jit, normalize_target, par_compile, resolve_target  # noqa: E402
from .layout_plot import plot_layout  # noqa: E402  (matplotlib is imported on first use)
from .script import from_script  # noqa: E402

# TileLang's top-level names (`import tilelang`), so upstream programs find them.
from . import autotuner, layout, math, profiler, testing, transform, tvm  # noqa: E402
from . import _unsupported  # noqa: E402

_unsupported.install()  # tilelang.rocm, the MMA macro generators: a clear NotImplementedError
from .autotuner import autotune  # noqa: E402
from .kernel import Kernel as JITKernel  # noqa: E402
from .tvm import DataType  # noqa: E402
from .math import cdiv, next_power_of_2, prev_power_of_2  # noqa: E402
from .profiler import TensorSupplyType  # noqa: E402
from .transform import PassConfigKey  # noqa: E402
from .compat_env import disable_cache, enable_cache, env, is_cache_enabled, set_log_level  # noqa: E402

__version__ = "0.1.0"

__all__ = ["CompileError", "InternalError", "TilecNote", "TilecWarning", "JITImpl", "JITKernel", "PassConfigKey", "TensorSupplyType",
           "autotune", "cdiv", "compile", "from_script", "jit", "language", "next_power_of_2", "par_compile", "plot_layout", "resolve_target"]
