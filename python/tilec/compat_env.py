"""TileLang's process-wide switches at the top of the package (`tilelang.disable_cache()`,
`tilelang.set_log_level(...)`, `tilelang.env.TILELANG_CACHE_DIR`), mapped onto tilec's."""

from __future__ import annotations

import logging
from typing import Union

from . import _tilec

__all__ = ["disable_cache", "enable_cache", "is_cache_enabled", "set_log_level", "env"]

_cache_enabled = True


def disable_cache() -> None:
    """Empties the in-process kernel cache. tilec's caches are keyed by the IR text, target,
    options and compiler, so they never return a stale kernel; TILEC_DISABLE_CACHE=1 turns
    them off for a whole process."""
    global _cache_enabled
    _cache_enabled = False
    _tilec.clear_memory_cache()


def enable_cache() -> None:
    global _cache_enabled
    _cache_enabled = True


def is_cache_enabled() -> bool:
    return _cache_enabled


def set_log_level(level: Union[int, str]) -> None:
    """The level of tilec's Python loggers (autotuner, pass configs, ...)."""
    logging.getLogger("tilec").setLevel(level.upper() if isinstance(level, str) else level)


class _Env:
    """`tilelang.env`: read-only facts about the installation."""

    @property
    def TILELANG_CACHE_DIR(self) -> str:  # noqa: N802 - TileLang's name
        return _tilec.default_cache_dir()

    @property
    def CUDA_HOME(self) -> str:  # noqa: N802
        from . import knobs

        return knobs.raw("TILEC_CUDA_HOME") or ""


env = _Env()
