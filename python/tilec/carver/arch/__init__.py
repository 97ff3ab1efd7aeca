"""The GPU a program runs on: `CUDA(target)` and the `driver` queries (number of SMs, ...)."""

from __future__ import annotations

from typing import Any

from . import driver  # noqa: F401

__all__ = ["CUDA", "CDNA", "driver", "auto_infer_current_arch", "is_hopper_arch", "is_ampere_arch"]


class CUDA:
    """A CUDA GPU: compute capability, SM count and memory sizes (of device 0, or of an H200
    when no GPU is visible)."""

    def __init__(self, target: Any = "cuda"):
        self.target = target
        major, minor = driver.get_device_capability()
        self.sm_version = major * 10 + minor
        self.compute_capability = f"{major}{minor}"
        self.platform = "CUDA"
        self.compute_max_core = driver.get_num_sms()
        self.smem_cap = driver.get_max_dynamic_shared_size_bytes()
        self.warp_size = 32
        self.max_smem_usage = self.smem_cap
        self.reg_cap = 65536
        self.l2_cache_size_bytes = driver.get_l2_cache_size()
        self.transaction_size = [32, 128]
        self.bandwidth = [750, 12080]

    def __repr__(self) -> str:
        return f"CUDA(sm_{self.sm_version})"


class CDNA:
    def __init__(self, *args: Any, **kwargs: Any):
        raise NotImplementedError("tilec targets CUDA GPUs: AMD CDNA (carver.arch.CDNA) is not supported")


def auto_infer_current_arch() -> CUDA:
    return CUDA("cuda")


def is_hopper_arch(arch: Any) -> bool:
    return getattr(arch, "sm_version", 0) == 90


def is_ampere_arch(arch: Any) -> bool:
    return 80 <= getattr(arch, "sm_version", 0) < 90
