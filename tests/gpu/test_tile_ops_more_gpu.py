"""Tile ops added for upstream programs, on the GPU: T.reduce_max / min / absmax with and without
nan_propagate (float16, bfloat16, float32; rows reduced across threads and warps, and columns):
NaN rows are NaN exactly when asked, every other value matches torch, outputs poisoned with a
finite sentinel first; T.transpose of shared and fragment tiles against torch."""
import os
import sys

import pytest

torch = pytest.importorskip("torch")
import tilec  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from test_reduce_nan_propagate import M, N, prog  # noqa: E402  (the kernel, shared with the CPU tests)
import test_transpose_op  # noqa: E402

pytestmark = pytest.mark.gpu

TORCH_REF = {"reduce_max": lambda x, d: x.amax(d), "reduce_min": lambda x, d: x.amin(d),
             "reduce_absmax": lambda x, d: x.abs().amax(d)}


@pytest.mark.parametrize("op", sorted(TORCH_REF))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("nan_propagate", [False, True])
def test_matches_torch(op, dtype, dim, nan_propagate):
    tdt = getattr(torch, dtype)
    a = torch.randn(M, N, device="cuda").to(tdt)
    a[3, 7] = float("nan")
    a[10, 0] = float("nan")
    a[20, N - 1] = float("nan")
    kernel = tilec.compile(prog(op, dtype=dtype, dim=dim, nan_propagate=nan_propagate), target="auto")
    b = torch.full((M if dim == 1 else N,), 12345.0, device="cuda").to(tdt)
    kernel(a, b)
    torch.cuda.synchronize()
    # torch's amax / amin propagate NaN; the NaN-ignoring reference replaces NaN by the identity.
    fill = float("-inf") if op != "reduce_min" else float("inf")
    src = a if nan_propagate else torch.where(a.isnan(), torch.full_like(a, fill if op != "reduce_absmax" else 0.0), a)
    want = TORCH_REF[op](src.float(), dim).to(tdt)
    assert torch.equal(b.isnan(), want.isnan()), (b, want)
    assert int(b.isnan().sum()) == (0 if not nan_propagate else (3 if dim == 1 else 3))
    torch.testing.assert_close(b.float(), want.float(), equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("M,N", [(64, 32), (128, 128)])
@pytest.mark.parametrize("src_scope", ["shared", "fragment"])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_transpose(M, N, src_scope, dtype):
    kernel = tilec.compile(test_transpose_op.prog(M, N, dtype, src_scope), target="auto")
    a = torch.randn(M, N, device="cuda").to(getattr(torch, dtype))
    b = torch.full((N, M), float("nan"), device="cuda").to(a.dtype)
    kernel(a, b)
    torch.cuda.synchronize()
    assert torch.equal(b, a.t())
