"""`tilelang.carver.arch.driver`: device queries through torch when it sees a GPU; an H200's
figures otherwise (so programs that size grids by the SM count still build their kernels)."""

from __future__ import annotations

import sys
from typing import Any

_H200 = {"sms": 132, "smem_optin": 232448, "l2": 60 * 1024 * 1024, "capability": (9, 0)}


def _props(device: int = 0) -> Any:
    torch = sys.modules.get("torch")
    if torch is None:
        try:
            import torch
        except ImportError:
            return None
    if not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_properties(device)


def get_num_sms(device_id: int = 0) -> int:
    p = _props(device_id)
    return int(p.multi_processor_count) if p is not None else _H200["sms"]


def get_device_capability(device_id: int = 0) -> tuple:
    p = _props(device_id)
    return (int(p.major), int(p.minor)) if p is not None else _H200["capability"]


def get_max_dynamic_shared_size_bytes(device_id: int = 0, format: str = "bytes") -> int:  # noqa: A002
    p = _props(device_id)
    value = int(getattr(p, "shared_memory_per_block_optin", _H200["smem_optin"])) if p is not None \
        else _H200["smem_optin"]
    return value // 1024 if format == "kb" else value


def get_shared_memory_per_block(device_id: int = 0, format: str = "bytes") -> int:  # noqa: A002
    return get_max_dynamic_shared_size_bytes(device_id, format)


def get_l2_cache_size(device_id: int = 0) -> int:
    p = _props(device_id)
    return int(getattr(p, "L2_cache_size", _H200["l2"])) if p is not None else _H200["l2"]


def get_device_name(device_id: int = 0) -> str:
    p = _props(device_id)
    return str(p.name) if p is not None else "NVIDIA H200 (assumed: no GPU visible)"
