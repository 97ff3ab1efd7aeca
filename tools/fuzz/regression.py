"""What a test under tests/fuzz_regressions/ calls: the kept program must now pass."""

from __future__ import annotations

import pytest

from .render import render
from .worker import Worker


def check_regression(spec: dict, source: str, mode: str = "cpu", timeout: float = 300.0):
    assert render(spec) == source, "the fuzzer now renders SPEC differently: regenerate SOURCE"
    if mode == "gpu":
        torch = pytest.importorskip("torch")
        if not torch.cuda.is_available():
            pytest.skip("a GPU-mode regression needs a GPU")
    worker = Worker(mode)
    try:
        outcome = worker.check(spec, timeout)
    finally:
        worker.close()
    assert outcome.status in ("ok", "reject"), f"{outcome.kind()}: {outcome.message}"
