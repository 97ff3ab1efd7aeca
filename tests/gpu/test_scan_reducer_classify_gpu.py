"""T.cummax / T.cumsum over swizzled shared tiles and fragments (insert_syncs now proves the swizzled
same-thread accesses private: 3 barriers instead of one per element), TileLang's reducer v2,
T.isnan / isinf / isfinite and T.atomic_load / atomic_store on the GPU, against numpy, outputs
poisoned — the programs of tests/python/test_cummax.py, test_reducers.py,
test_float_classification.py and test_atomic_order.py.

    pytest -m gpu tests/gpu/test_scan_reducer_classify_gpu.py
"""
import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import tilec  # noqa: E402

pytestmark = pytest.mark.gpu

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from test_cummax import running_max, scan  # noqa: E402
from test_float_classification import VALUES, classify  # noqa: E402
from test_reducers import _v2_rows, _v2_scalar_sum  # noqa: E402


@pytest.mark.parametrize("scope", ["shared", "fragment"])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("threads", [128, 32])
def test_cummax(scope, reverse, threads):
    x = np.random.default_rng(1).standard_normal((8, 256)).astype(np.float32)
    kernel = tilec.compile(scan(scope, reverse=reverse, threads=threads, in_place=threads == 128), target="auto")
    a = torch.from_numpy(x).cuda()
    b = torch.full_like(a, float("nan"))
    kernel(a, b)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(b.cpu().numpy(), running_max(x, reverse))


@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_reducer_v2_rows(op):
    x = np.random.default_rng(2).standard_normal((32, 512)).astype(np.float32)
    kernel = tilec.compile(_v2_rows(op), target="auto")
    a = torch.from_numpy(x).cuda()
    b = torch.full((32,), float("nan"), device="cuda")
    kernel(a, b)
    torch.cuda.synchronize()
    np.testing.assert_allclose(b.cpu().numpy(), getattr(np, op)(x, axis=1), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("seed, want", [(None, 36.0), (100.0, 136.0)])
def test_reducer_v2_scalar_sum(seed, want):
    kernel = tilec.compile(_v2_scalar_sum(seed), target="auto")
    a = torch.arange(1, 9, dtype=torch.float32, device="cuda")
    b = torch.full((1,), float("nan"), device="cuda")
    kernel(a, b)
    torch.cuda.synchronize()
    assert b.item() == want


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_classification(dtype):
    kernel = tilec.compile(classify(dtype), target="auto")
    x = torch.tensor(VALUES, dtype=torch.float64).to(getattr(torch, dtype)).cuda()
    y = torch.full((3, 8), -1, dtype=torch.int32, device="cuda")
    kernel(x, y)
    torch.cuda.synchronize()
    xf = x.float().cpu()
    want = torch.stack([torch.isnan(xf), torch.isinf(xf), torch.isfinite(xf)]).int()
    assert torch.equal(y.cpu(), want), (y, want)


def test_atomic_load_and_store_with_orders():
    from test_atomic_order import flags

    for load_order, store_order, dtype in (("acquire", "release", torch.int32), ("relaxed", "seq_cst", torch.float64)):
        kernel = tilec.compile(flags(load_order, store_order, str(dtype).replace("torch.", "")), target="auto")
        f = torch.tensor([1, 7, 0, 0], dtype=dtype, device="cuda")
        o = torch.zeros(4, dtype=dtype, device="cuda")
        kernel(f, o)
        torch.cuda.synchronize()
        assert f.tolist() == [1, 7, 12, 0] and o[0].item() == 12
