"""copy_stmatrix on the GPU (sm_90): a wgmma accumulator, cast to bf16, to shared memory by
stmatrix.x4 and out; the backward with its dS stored so (tilec.stmatrix)."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))  # tests/python: test_copy_stmatrix's program
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))

pytestmark = pytest.mark.gpu


def _hopper():
    import torch
    return torch.cuda.get_device_capability() >= (9, 0)


@pytest.mark.parametrize("N", [128, 64])
def test_accumulator_through_stmatrix(N):
    import torch

    import tilec
    from test_copy_stmatrix import _program

    if not _hopper():
        pytest.skip("stmatrix needs sm_90")
    k = tilec.compile(_program(N=N), target="auto", pass_configs={"tilec.stmatrix": True})
    assert "tl::stmatrix_x4(" in k.get_kernel_source()
    a = torch.randn(128, 64, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(N, 64, dtype=torch.bfloat16, device="cuda")
    c = torch.full((128, N), float("nan"), dtype=torch.bfloat16, device="cuda")
    k(a, b, c)
    want = (a.double() @ b.double().T)
    torch.testing.assert_close(c.double(), want, rtol=1e-2, atol=5e-2)


def test_backward_with_stmatrix_matches_the_default():
    import flash_attention_bwd as ex

    if not _hopper():
        pytest.skip("stmatrix needs sm_90")
    configs = {**ex.BACKWARD_PASS_CONFIGS, "tilec.stmatrix": True}
    for case in ((1, 4, 300, 64, True, "bfloat16", 2, 300), (1, 6, 401, 128, False, "float16", 3, 390)):
        ex.run_case(*case, configs=configs)
