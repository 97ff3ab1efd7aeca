"""Warp votes, ballots, counting block barriers and warp reductions on the GPU (the programs of
tests/python/test_warp_vote.py, as upstream's test_tilelang_language_warp_vote.py and
_warp_reduce.py check them): every lane's result against the value the warp computes.

    pytest -m gpu tests/gpu/test_warp_vote_gpu.py
"""
import os
import sys

import pytest

torch = pytest.importorskip("torch")
import tilec  # noqa: E402

pytestmark = pytest.mark.gpu

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from test_warp_vote import VOTES_A, VOTES_B, VOTES_C, votes, warp_reduce  # noqa: E402


def test_votes_ballots_and_counting_barriers():
    kernel = tilec.compile(votes(), target="auto")
    a = torch.full((32,), -1, dtype=torch.int32, device="cuda")
    b = torch.full((3, 32), -1, dtype=torch.int64, device="cuda")
    c = torch.full((32,), -1, dtype=torch.int32, device="cuda")
    kernel(a, b, c)
    torch.cuda.synchronize()
    assert (a == VOTES_A).all(), a
    for row, want in enumerate(VOTES_B):
        assert (b[row] == want).all(), (row, b[row])
    assert (c == VOTES_C).all(), c


@pytest.mark.parametrize("op,dtype", [("sum", torch.float32), ("max", torch.float32), ("min", torch.float16),
                                      ("bitand", torch.int32), ("bitor", torch.int32), ("sum", torch.int64)])
def test_warp_reductions(op, dtype):
    kernel = tilec.compile(warp_reduce(op, str(dtype).replace("torch.", "")), target="auto")
    if dtype.is_floating_point:
        x = torch.randn(64, device="cuda").to(dtype)
    else:
        x = torch.randint(1, 1 << 20, (64,), device="cuda", dtype=dtype)
    want = torch.empty_like(x)
    for w in range(2):
        seg = x[32 * w:32 * (w + 1)]
        if op == "sum":
            r = seg.double().sum().to(dtype) if dtype.is_floating_point else seg.sum()
        elif op == "max":
            r = seg.max()
        elif op == "min":
            r = seg.min()
        else:
            r = seg[0].clone()
            for v in seg[1:]:
                r = (r & v) if op == "bitand" else (r | v)
        want[32 * w:32 * (w + 1)] = r
    kernel(x)
    torch.cuda.synchronize()
    torch.testing.assert_close(x, want, rtol=1e-4 if dtype == torch.float32 else 0, atol=1e-4 if dtype == torch.float32 else 0)


@pytest.mark.parametrize("n", [0, 32, 128])
def test_shuffle_elect(n):
    from test_warp_vote import elect

    kernel = tilec.compile(elect(n), target="auto")
    o = torch.full((256,), -1, dtype=torch.int32, device="cuda")
    kernel(o)
    torch.cuda.synchronize()
    want = torch.zeros(256, dtype=torch.int32)
    want[:: (n or 256)] = 1
    assert torch.equal(o.cpu(), want)
