"""Pointer parameters on the GPU (`a_ptr: T.ptr` + T.make_tensor before the kernel, TIR's T.handle
+ T.match_buffer, the eager form): upstream's pointer GEMM called with CUDA tensors and with their
data pointers as integers, against torch in float32, outputs poisoned first.

    pytest -m gpu tests/gpu/test_pointer_params_gpu.py
"""
import os
import sys

import pytest

torch = pytest.importorskip("torch")
import tilec  # noqa: E402
import tilec.language as T  # noqa: E402

pytestmark = pytest.mark.gpu

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from test_pointer_params import _matmul_ptr, _scale_tir_style  # noqa: E402


@pytest.mark.parametrize("as_integers", [False, True])
@pytest.mark.parametrize("m,n,k", [(1024, 1024, 1024), (1000, 1024, 992)])
def test_pointer_gemm_matches_torch(as_integers, m, n, k):
    torch.manual_seed(0)
    kernel = tilec.compile(_matmul_ptr(M=m, N=n), target="auto")
    a = torch.randn(m, k, dtype=torch.float16, device="cuda")
    b = torch.randn(n, k, dtype=torch.float16, device="cuda")
    c = torch.full((m, n), float("nan"), dtype=torch.float32, device="cuda")
    ptrs = (a.data_ptr(), b.data_ptr(), c.data_ptr()) if as_integers else (a, b, c)
    kernel(*ptrs, m, n, k)
    torch.cuda.synchronize()
    ref = a.float() @ b.float().T
    torch.testing.assert_close(c, ref, atol=1e-2, rtol=1e-2)


def test_match_buffer_over_handles_runs():
    kernel = tilec.compile(_scale_tir_style(256), target="auto")
    x = torch.randn(256, device="cuda")
    y = torch.full((256,), float("nan"), device="cuda")
    kernel(x, y)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, 2 * x)
