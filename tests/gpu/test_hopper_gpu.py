"""The Hopper path on the GPU (pytest -m gpu): every case of hopper_cases.py in its own
process under a time limit with the hang detector on, so a hang or a trap fails one case
instead of the run. Skipped off sm_90."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import hopper_cases  # noqa: E402
from hopper_check import run_case  # noqa: E402

pytestmark = pytest.mark.gpu


def _is_hopper():
    try:
        import torch

        return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)
    except ImportError:
        return False


@pytest.mark.skipif(not _is_hopper(), reason="needs an sm_90 GPU (H100 / H200)")
@pytest.mark.parametrize("case", sorted(hopper_cases.CASES))
def test_hopper_case(case):
    result = run_case(case, timeout=180)
    assert result.get("ok"), result
