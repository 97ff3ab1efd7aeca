"""GPU tests: run with `pytest -m gpu tests/gpu` on a machine with an NVIDIA GPU and torch.

Registers the `gpu` marker and skips `gpu` tests where torch or a CUDA device is missing,
so that collecting this directory on a CPU-only machine reports skips, not failures.
"""
import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU and torch with CUDA (run with -m gpu)")


def _cuda_missing_reason():
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device"
    return None


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    reason = _cuda_missing_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in gpu_items:
        item.add_marker(skip)
