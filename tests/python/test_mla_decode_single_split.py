"""examples/mla_decode.py with one split: one kernel writes the output in its dtype (no float32
partials, no combine launch); whole head blocks load Q by tile copies (TMA on sm_90). Checked on the CPU target against a float64 reference and against
the two-split form (split kernel + combine) on the same inputs; on sm_90a it stays warp-specialized
and spill-free."""
import math
import os
import sys

import numpy as np
import pytest

import tilec

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from mla_decode import mla_decode  # noqa: E402

BATCH, PAGE, MAX_PAGES = 2, 64, 3
NUM_PAGES = BATCH * MAX_PAGES + 1


def _inputs(lens, h_q):
    rng = np.random.default_rng(7)
    q = rng.standard_normal((BATCH, h_q, 576)).astype(np.float32)
    kv = rng.standard_normal((NUM_PAGES, PAGE, 576)).astype(np.float32)
    table = rng.permutation(NUM_PAGES)[:BATCH * MAX_PAGES].astype(np.int32).reshape(BATCH, MAX_PAGES)
    return q, kv, table, np.array(lens, np.int32)


def _reference(q, kv, table, lens):
    out = np.zeros((BATCH, q.shape[1], 512))
    for b in range(BATCH):
        rows = kv[table[b, :math.ceil(lens[b] / PAGE)]].reshape(-1, 576)[:lens[b]].astype(np.float64)
        s = q[b].astype(np.float64) @ rows.T / math.sqrt(576)
        p = np.exp(s - s.max(1, keepdims=True))
        out[b] = (p / p.sum(1, keepdims=True)) @ rows[:, :512]
    return out


# h_q 16: padded head rows (Q loaded element-wise); 64: a whole head block (Q by tile copies,
# the producer's TMA loads on sm_90).
@pytest.mark.parametrize("lens,H_Q", [([150, 64], 16), ([1, 192], 16), ([130, 5], 64)])
def test_one_split_writes_the_output_itself(lens, H_Q):
    args = _inputs(lens, H_Q)
    (main,) = mla_decode(BATCH, H_Q, NUM_PAGES, MAX_PAGES, 1, dtype="float32", num_stages=1)
    out = np.full((BATCH, H_Q, 512), np.nan, np.float32)
    tilec.compile(main, target="cpu")(*args, out)
    np.testing.assert_allclose(out, _reference(*args), rtol=1e-5, atol=1e-5)
    split, combine = (tilec.compile(f, target="cpu") for f in
                      mla_decode(BATCH, H_Q, NUM_PAGES, MAX_PAGES, 2, dtype="float32", num_stages=1))
    o_part = np.full((BATCH, H_Q, 2, 512), np.nan, np.float32)
    lse_part = np.full((BATCH, H_Q, 2), np.nan, np.float32)
    split(*args, o_part, lse_part)
    two = np.full((BATCH, H_Q, 512), np.nan, np.float32)
    combine(o_part, lse_part, two)
    np.testing.assert_allclose(out, two, rtol=1e-5, atol=1e-5)


def test_one_split_on_sm90_has_no_partials():
    (main,) = mla_decode(4, 128, 4 * 16, 16, 1, dtype="bfloat16", num_stages=2)
    kernel = tilec.compile(main, target="sm_90a")
    src = kernel.get_kernel_source()
    assert "O_partial" not in src and "LSE_partial" not in src and "Output[" in src, src
    assert "tl::setmaxnreg_dec<24>();" in src  # still warp-specialized
    assert "tl::tma_load(&Q_pe_shared[0], tma_Q, &head_full[0]" in src  # Q by the producer's TMA, once per tile
    assert kernel.ptxas_info["spill_stores_bytes"] == 0
