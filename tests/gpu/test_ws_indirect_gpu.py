"""tilec.ws_indirect_copies on the GPU: the paged and varlen attention examples (MLA decoding,
flash decoding, varlen FlashAttention) warp-specialized with the producer reading the block
table / sequence offsets, every case of each example against its float64 reference, under the
hang detector (a wrong barrier traps instead of hanging)."""
import importlib
import os
import sys

import pytest

torch = pytest.importorskip("torch")
import tilec  # noqa: E402

pytestmark = pytest.mark.gpu
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))


@pytest.mark.parametrize("example", ["mla_decode", "flash_decoding", "flash_attention_varlen"])
def test_example_cases_with_indirect_copies(example, monkeypatch):
    module = importlib.import_module(example)
    real = tilec.compile
    compiled = []

    def with_config(func, *args, pass_configs=None, **kwargs):
        configs = dict(pass_configs or {}, **{"tilec.ws_indirect_copies": True, "tilec.debug_sync": True})
        kernel = real(func, *args, pass_configs=configs, **kwargs)
        compiled.append(kernel)
        return kernel

    import _harness

    monkeypatch.setattr(_harness.tilec, "compile", with_config)
    for case in module.CASES:
        module.run_case(*case)  # raises on a mismatch
    assert any("setmaxnreg" in k.get_kernel_source() for k in compiled), "no kernel was warp-specialized"
