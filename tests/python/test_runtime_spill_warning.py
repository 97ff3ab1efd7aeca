"""A kernel whose registers spill compiles with a PerformanceWarning that says why it will be slow."""
import os
import sys
import warnings

import pytest

import tilec
from tilec.kernel import PerformanceWarning

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")


def test_spilling_gemm_tile_warns(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    tilec._tilec.clear_memory_cache()
    from gemm import matmul

    # 128x256 accumulator tile on 4 warps: 256 fp32 accumulators per thread -> spills.
    func = matmul(1024, 1024, 1024, 128, 256, 32, dtype="bfloat16", num_stages=2, threads=128)
    with pytest.warns(PerformanceWarning, match="spills registers on sm_90a"):
        tilec.compile(func, target="sm_90a")


def test_well_sized_gemm_does_not_warn(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    tilec._tilec.clear_memory_cache()
    from gemm import matmul

    with warnings.catch_warnings():
        warnings.simplefilter("error", PerformanceWarning)
        tilec.compile(matmul(1024, 1024, 1024, dtype="bfloat16"), target="sm_90a")
