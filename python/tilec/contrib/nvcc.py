"""`tilelang.contrib.nvcc`: the compute version of the GPU (an H200's when none is visible)."""

from __future__ import annotations


def get_target_compute_version(target=None) -> str:
    from ..carver.arch import driver

    major, minor = driver.get_device_capability()
    return f"{major}.{minor}"


def parse_compute_version(compute_version: str) -> tuple:
    major, minor = str(compute_version).split(".")[:2]
    return int(major), int(minor)


def have_tensorcore(compute_version=None, target=None) -> bool:
    major, _ = parse_compute_version(compute_version or get_target_compute_version())
    return major >= 7


def is_hopper(compute_version=None) -> bool:
    return parse_compute_version(compute_version or get_target_compute_version())[0] == 9
