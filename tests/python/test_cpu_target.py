"""target="cpu": the tile-level interpreter runs real programs (the examples' builders)
against numpy references, and reports out-of-bounds accesses and thread-level code.

Shapes are small: the interpreter is slow (it walks the IR per element)."""
import math
import os
import sys

import numpy as np
import pytest

import tilec
import tilec.language as T

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))

from cumsum import row_cumsum  # noqa: E402
from elementwise_add import elementwise_add  # noqa: E402
from flash_attention import flash_attention  # noqa: E402
from gemm import matmul  # noqa: E402
from reduction import row_reduce  # noqa: E402
from rmsnorm import rmsnorm  # noqa: E402
from softmax import softmax  # noqa: E402

rng = np.random.default_rng(0)


def cpu(func, **kwargs):
    return tilec.compile(func, target="cpu", **kwargs)


def test_elementwise_add_ragged():
    kernel = cpu(elementwise_add("float32", block=256), out_idx=[-1])
    a, b = (rng.standard_normal(1000).astype(np.float32) for _ in range(2))
    c = kernel(a, b)
    assert c.shape == (1000,) and c.dtype == np.float32
    np.testing.assert_array_equal(c, a + b)  # float32 addition is exact in both


def test_softmax_fp16():
    kernel = cpu(softmax(64, "float16", block_M=2), out_idx=[1])
    x = (rng.standard_normal((5, 64)) * 4).astype(np.float16)  # 5 rows: a partial block
    y = kernel(x)
    xd = x.astype(np.float64)
    ref = np.exp(xd - xd.max(1, keepdims=True))
    ref /= ref.sum(1, keepdims=True)
    np.testing.assert_allclose(y.astype(np.float64), ref, atol=2e-3, rtol=1e-2)


def test_rmsnorm_fp16():
    kernel = cpu(rmsnorm(64, "float16", block_M=2), out_idx=[2])
    x = rng.standard_normal((3, 64)).astype(np.float16)
    w = rng.standard_normal(64).astype(np.float16)
    y = kernel(x, w)
    xd = x.astype(np.float64)
    ref = xd / np.sqrt((xd * xd).mean(1, keepdims=True) + 1e-6) * w.astype(np.float64)
    np.testing.assert_allclose(y.astype(np.float64), ref, atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("trans_A,trans_B", [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_fp16_partial_tiles(trans_A, trans_B):
    M, N, K = 40, 24, 40  # partial tiles in M, N and K
    func = matmul(M, N, K, block_M=32, block_N=16, block_K=16, trans_A=trans_A, trans_B=trans_B, num_stages=2)
    kernel = cpu(func, out_idx=[2])
    a = rng.standard_normal((K, M) if trans_A else (M, K)).astype(np.float16)
    b = rng.standard_normal((N, K) if trans_B else (K, N)).astype(np.float16)
    c = kernel(a, b)
    ad, bd = a.astype(np.float64), b.astype(np.float64)
    ref = (ad.T if trans_A else ad) @ (bd.T if trans_B else bd)
    # fp32 accumulation, then one rounding to fp16: within half an fp16 ulp.
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=1e-3, atol=1e-3)
    np.testing.assert_array_equal(c, ref.astype(np.float32).astype(np.float16))


def test_reduce_rows():
    kernel = cpu(row_reduce(32, block_M=4), out_idx=[1, 2])
    x = rng.standard_normal((6, 32)).astype(np.float32)
    s, mx = kernel(x)
    np.testing.assert_allclose(s, x.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(mx, x.max(1))


def column_reduce(M, N, op, block_N=8):
    @T.prim_func
    def reduce_cols(X: T.Tensor((M, N), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), threads=64) as bx:
            x = T.alloc_fragment((M, block_N), "float32")
            y = T.alloc_fragment((block_N,), "float32")
            T.copy(X[0, bx * block_N], x)
            getattr(T, op)(x, y, dim=0)
            T.copy(y, Y[bx * block_N])

    return reduce_cols


@pytest.mark.parametrize("op,ref", [("reduce_sum", np.sum), ("reduce_max", np.max), ("reduce_min", np.min),
                                    ("reduce_abssum", lambda x, axis: np.abs(x).sum(axis))])
def test_reduce_columns(op, ref):
    kernel = cpu(column_reduce(6, 20, op), out_idx=[1])  # 20 columns: a partial block
    x = rng.standard_normal((6, 20)).astype(np.float32)
    np.testing.assert_allclose(kernel(x), ref(x.astype(np.float64), axis=0), rtol=1e-5, atol=1e-5)


def test_cumsum_rows():
    kernel = cpu(row_cumsum(16, block_M=4), out_idx=[1])
    x = rng.standard_normal((5, 16)).astype(np.float32)
    np.testing.assert_allclose(kernel(x), np.cumsum(x.astype(np.float64), 1), rtol=1e-5, atol=1e-5)


def test_flash_attention_forward():
    batch, heads, seq, dim = 1, 2, 128, 64
    kernel = cpu(flash_attention(batch, heads, seq, dim), out_idx=[3])
    q, k, v = (rng.standard_normal((batch, seq, heads, dim)).astype(np.float16) for _ in range(3))
    out = kernel(q, k, v)
    qd, kd, vd = (x.astype(np.float64).transpose(0, 2, 1, 3) for x in (q, k, v))
    s = qd @ kd.transpose(0, 1, 3, 2) / math.sqrt(dim)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    ref = (p @ vd).transpose(0, 2, 1, 3)
    # P is rounded to fp16 before P V, and O to fp16: a few fp16 ulps.
    np.testing.assert_allclose(out.astype(np.float64), ref, atol=5e-3, rtol=1e-2)


def test_casts_round_to_nearest_even():
    @T.prim_func
    def narrow(X: T.Tensor((1024,), "float32"), Y: T.Tensor((1024,), "float16")):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(1024):
                Y[i] = T.cast(X[i], "float16")

    x = (rng.standard_normal(1024) * np.exp2(rng.integers(-20, 17, 1024))).astype(np.float32)
    y = cpu(narrow, out_idx=[1])(x)
    with np.errstate(over="ignore"):  # some values overflow to inf, on purpose
        np.testing.assert_array_equal(y, x.astype(np.float16))


def test_scalars_atomics_and_control_flow():
    @T.prim_func
    def count(X: T.Tensor((100,), "float32"), Total: T.Tensor((1,), "float32"), scale: T.float32):
        with T.Kernel(T.ceildiv(100, 32), threads=32) as bx:
            acc = T.alloc_var("float32")
            acc = 0
            for i in T.serial(32):
                if bx * 32 + i < 100:
                    acc += T.if_then_else(X[bx * 32 + i] > 0, X[bx * 32 + i], 0) * scale
            T.atomic_add(Total[0], acc)

    x = rng.standard_normal(100).astype(np.float32)
    total = np.zeros(1, np.float32)
    assert cpu(count)(x, total, 2.0) is None
    np.testing.assert_allclose(total[0], 2 * x[x > 0].sum(), rtol=1e-5)


def test_outputs_passed_explicitly_and_symbolic_sizes():
    kernel = cpu(elementwise_add("float32", block=64), out_idx=[2])
    for n in (1, 64, 65):
        a, b = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
        c = np.full(n, np.nan, np.float32)
        assert kernel(a, b, c) is c
        np.testing.assert_array_equal(c, a + 1)


def test_torch_cpu_tensors_bfloat16():
    torch = pytest.importorskip("torch")
    kernel = cpu(rmsnorm(32, "bfloat16", block_M=1), out_idx=[2])
    x, w = torch.randn(2, 32, dtype=torch.bfloat16), torch.randn(32, dtype=torch.bfloat16)
    y = kernel(x, w)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.bfloat16
    xd = x.double()
    ref = xd / torch.sqrt((xd * xd).mean(1, keepdim=True) + 1e-6) * w.double()
    torch.testing.assert_close(y.double(), ref, atol=3e-2, rtol=2e-2)


def test_bfloat16_numpy_without_ml_dtypes_is_a_clear_error():
    try:
        import ml_dtypes  # noqa: F401
        pytest.skip("ml_dtypes is installed")
    except ImportError:
        pass
    kernel = cpu(rmsnorm(32, "bfloat16"), out_idx=[2])
    with pytest.raises(tilec.CompileError, match="numpy has no bfloat16"):
        kernel(np.zeros((1, 32), np.float32), np.zeros(32, np.float32))


def test_out_of_bounds_on_chip_names_kernel_buffer_index_and_line():
    @T.prim_func
    def bad(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            s = T.alloc_shared((32,), "float32")
            for i in T.Parallel(64):
                s[i] = A[i]  # the line the error names
            T.copy(s, B[0:32])

    with pytest.raises(tilec.CompileError) as info:
        cpu(bad)(np.zeros(64, np.float32), np.zeros(64, np.float32))
    err = info.value
    assert "kernel 'bad'" in err.message and "out-of-bounds write of 's'" in err.message
    assert "at index (32,)" in err.message
    assert err.file == __file__ and "the line the error names" in err.source_line()


def test_global_partial_tiles_are_guarded_unless_strict():
    @T.prim_func
    def tail(A: T.Tensor((40,), "float32"), B: T.Tensor((40,), "float32")):
        with T.Kernel(2, threads=32) as bx:
            s = T.alloc_shared((32,), "float32")
            T.copy(A[bx * 32:(bx + 1) * 32], s)
            T.copy(s, B[bx * 32:(bx + 1) * 32])

    a = np.arange(40, dtype=np.float32)
    np.testing.assert_array_equal(cpu(tail, out_idx=[1])(a), a)
    strict = cpu(tail, out_idx=[1], pass_configs={"tl.disable_safe_memory_legalize": True})
    with pytest.raises(tilec.CompileError, match=r"out-of-bounds read of 'A' .* at index \(40,\)"):
        strict(a)


def test_thread_level_code_is_not_supported():
    @T.prim_func
    def per_thread(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            A[tx] = 1.0

    with pytest.raises(tilec.CompileError, match="not supported on target=cpu"):
        cpu(per_thread)(np.zeros(128, np.float32))


def test_argument_errors():
    kernel = cpu(elementwise_add("float32", block=64), out_idx=[2])
    with pytest.raises(tilec.kernel.KernelArgumentError, match="takes 2 .inputs. or 3"):
        kernel(np.zeros(4, np.float32))
    with pytest.raises(tilec.CompileError, match="must be float32, got float64"):
        kernel(np.zeros(4), np.zeros(4))


@pytest.mark.parametrize("seq,blocks,options", [
    (80, (32, 32, 128), {}), (200, (128, 64, 256), {}), (200, (128, 64, 256), {"ds_to_shared_first": True}),
    (200, (128, 64, 256), {"rows_in_shared": False, "overlap_softmax": False}),
    (80, (32, 32, 128), {"rows_in_shared": False, "overlap_softmax": True}),
    (200, (128, 64, 256), {"dv_before_ds": True}), (200, (128, 64, 256), {"dkv_in_flight": True})])
def test_flash_attention_backward_with_atomics(seq, blocks, options):
    """The three backward programs (dQ accumulated with T.atomic_add), causal, partial blocks; also
    the 128 keys x 64 queries x 256 threads blocks the example checks on the GPU, and the
    variants (dS to shared memory before the dK gemm; the earlier default without LSE / Delta
    rows in shared memory and with the two gemms waited for one by one)."""
    torch = pytest.importorskip("torch")
    import flash_attention as fwd
    import flash_attention_bwd as fab

    batch, heads, dim, causal = 1, 2, 64, True
    block_M, block_N, threads = blocks
    forward = cpu(fwd.flash_attention(batch, heads, seq, dim, causal, return_lse=True, block_M=32, block_N=32))
    prep, bwd, post = (cpu(f) for f in fab.flash_attention_bwd(batch, heads, seq, dim, causal, block_M=block_M,
                                                               block_N=block_N, threads=threads, **options))
    shape = (batch, seq, heads, dim)
    gen = torch.Generator().manual_seed(0)
    q, k, v, do = (torch.randn(shape, generator=gen).half() for _ in range(4))
    o, lse, delta = torch.empty(shape, dtype=torch.float16), torch.empty(batch, heads, seq), torch.empty(batch, heads, seq)
    forward(q, k, v, o, lse)
    prep(o, do, delta)
    dq_acc, dq = torch.zeros(shape), torch.empty(shape, dtype=torch.float16)
    dk, dv = torch.empty(shape, dtype=torch.float16), torch.empty(shape, dtype=torch.float16)
    bwd(q, k, v, do, lse, delta, dq_acc, dk, dv)
    post(dq_acc, dq)
    for got, want in zip((dq, dk, dv), fab.reference(*(x.double() for x in (q, k, v, do)), causal)):
        assert (got.double() - want).abs().max().item() <= 5e-3 * want.abs().max().item()
