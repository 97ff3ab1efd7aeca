"""Bounds predicates of the GEMM's cp.async copies (no GPU needed, only the generated CUDA).

When the tensor shapes are multiples of the block tile, every chunk of a copy lies inside
its tensor; proving that needs the ranges of the (rasterized) block indices. Then the copies
of the main loop carry only the pipeline's `ko < n` guard. Partial tiles keep their row /
column predicates."""
import importlib
import os
import re
import sys

import pytest

import tilec

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))


def _copy_predicates(src):
    """The predicate (third argument) of every zero-filling cp.async, and the count of all."""
    calls = [line.strip() for line in src.splitlines() if re.search(r"tl::cp_async_(cg|ca)\d+", line)]
    preds = []
    for call in calls:
        if "_zfill(" in call:
            preds.append(call[call.rindex("], ") + 3:call.rindex(");")])
    return calls, preds


def _source(*args, **kwargs):
    func = importlib.import_module("gemm").matmul(*args, **kwargs)
    return tilec.compile(func, target="sm_80").get_kernel_source()  # the cp.async form


@pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_full_tiles_copy_without_bounds_predicates(dtype):
    src = _source(1024, 1024, 1024, 128, 128, 32, dtype=dtype)
    calls, preds = _copy_predicates(src)
    assert len(calls) == 6, src  # A and B: two prologue steps and the main loop
    assert preds, src
    for p in preds:
        assert re.fullmatch(r"ko < \d+", p), f"unexpected bounds predicate {p!r}:\n{src}"


@pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")
def test_partial_tiles_keep_bounds_predicates():
    src = _source(1000, 1030, 520, dtype="float16")
    _, preds = _copy_predicates(src)
    assert any(re.search(r"\bby\b", p) for p in preds), src  # rows of A past M
    assert any(re.search(r"\bbx\b", p) for p in preds), src  # columns of B past N


@pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")
def test_main_loop_unrolled_by_the_stage_count():
    # Unrolled num_stages times, every step's shared-memory versions are constants.
    src = _source(1024, 1024, 1024, 128, 128, 32, dtype="bfloat16", num_stages=3)
    assert "#pragma unroll 3\n  for (int ko" in src, src
    src = _source(1024, 1024, 1024, 128, 128, 32, dtype="bfloat16", num_stages=4)
    assert "#pragma unroll 4\n  for (int ko" in src, src
    # A step copying more than 192 bytes per thread stays rolled (register pressure).
    src = _source(1024, 1024, 1024, 128, 128, 64, dtype="bfloat16", num_stages=3)
    assert "for (int ko" in src and "#pragma unroll 3\n  for (int ko" not in src, src
