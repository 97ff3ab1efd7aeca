"""Upstream TileLang constructs of the corpus (issue 9, compat10): T.reshape / T.view of
fragments (DeepSeek v3.2 indexer, HISA pool MQA), fragments read through `j // 2` (dequantize
fp4 / int4 Hopper) and fragments read in blocks or rows fixed by an enclosing serial loop
(mHC pre, GQA decode combine). target="cpu" checks the meaning against numpy; sm_90a checks
that the layouts exist and the kernel compiles. The lowered code is checked against references
on the lowered-IR interpreter in tests/cpp/lower_fragment_reads_test.cc."""
import numpy as np
import pytest

import tilec
import tilec.language as T
from tilec import CompileError

rng = np.random.default_rng(10)


def _grouped_sum(N=64, Q=4, H=16):
    @T.prim_func
    def grouped(A: T.Tensor((N, Q * H), T.float16), W: T.Tensor((Q, H), T.float32), Out: T.Tensor((N, Q), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            a_s = T.alloc_shared((N, Q * H), T.float16)
            s = T.alloc_fragment((N, Q * H), T.float32)
            s3 = T.reshape(s, (N, Q, H))
            w = T.alloc_fragment((Q, H), T.float32)
            sums = T.alloc_fragment((N, Q), T.float32)
            T.copy(A, a_s)
            T.copy(W, w)
            for i, j in T.Parallel(N, Q * H):
                s[i, j] = a_s[i, j]
            for i, q, h in T.Parallel(N, Q, H):
                s3[i, q, h] = T.max(s3[i, q, h], 0) * w[q, h]
            T.reduce_sum(s3, sums, dim=-1, clear=True)
            T.copy(sums, Out)

    return grouped


def test_reshape_of_a_fragment_is_the_same_elements_under_another_shape():
    N, Q, H = 64, 4, 16
    kernel = tilec.compile(_grouped_sum(N, Q, H), target="cpu", out_idx=[-1])
    a = rng.standard_normal((N, Q * H)).astype(np.float16)
    w = rng.standard_normal((Q, H)).astype(np.float32)
    ref = (np.maximum(a.astype(np.float64), 0).reshape(N, Q, H) * w).sum(-1)
    np.testing.assert_allclose(kernel(a, w), ref, rtol=1e-5, atol=1e-5)


def test_reshape_prints_round_trips_and_compiles_to_one_register_array():
    f = _grouped_sum()
    text = f.script()
    assert "s3 = T.reshape(s, (64, 4, 16))" in text, text
    g = tilec.from_script(text)
    assert g.script() == text
    assert tilec._tilec.structural_equal(f, g)
    src = tilec.compile(f, target="sm_90a").get_kernel_source()
    assert "float s[" in src and "s3" not in src, src


def test_view_with_its_own_dtype_is_a_reshape_and_another_dtype_of_registers_is_a_clear_error():
    @T.prim_func
    def viewed(A: T.Tensor((8, 8), T.float32), O: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            f = T.alloc_fragment((8, 8), T.float32)
            flat = T.view(f, shape=[64])
            T.copy(A, f)
            T.copy(flat, O)

    a = rng.standard_normal((8, 8)).astype(np.float32)
    np.testing.assert_array_equal(tilec.compile(viewed, target="cpu", out_idx=[-1])(a), a.reshape(-1))
    tilec.compile(viewed, target="sm_90a")

    with pytest.raises(CompileError, match="tilec reinterprets shared memory only"):
        @T.prim_func
        def retyped(A: T.Tensor((8, 8), T.float16)):
            with T.Kernel(1, threads=64) as bx:
                f = T.alloc_fragment((8, 8), T.float16)
                T.view(f, shape=[4, 8], dtype=T.float32)

    # Shared memory is viewed (tests/python/test_shared_views.py).

    with pytest.raises(CompileError, match=r"\(64 elements\) to a shape of 32 elements"):
        @T.prim_func
        def wrong_size(A: T.Tensor((8, 8), T.float16)):
            with T.Kernel(1, threads=64) as bx:
                f = T.alloc_fragment((8, 8), T.float16)
                T.reshape(f, (4, 8))


def _unpack_halves(N=64, K=64, threads=128):
    # B_local holds two 4-bit values per byte: element j of a row is nibble j % 2 of byte j // 2.
    @T.prim_func
    def unpack(B: T.Tensor((N, K // 2), T.uint8), Out: T.Tensor((N, K), T.float16)):
        with T.Kernel(1, threads=threads) as bx:
            B_shared = T.alloc_shared((N, K // 2), T.uint8)
            B_local = T.alloc_fragment((N, K // 2), T.uint8)
            B_dequant = T.alloc_fragment((N, K), T.float16)
            T.copy(B, B_shared)
            T.copy(B_shared, B_local)
            for i, j in T.Parallel(N, K):
                B_dequant[i, j] = T.cast((T.cast(B_local[i, j // 2], T.int32) >> (4 * (j % 2))) & 15, T.float16)
            T.copy(B_dequant, Out)

    return unpack


def test_fragment_read_through_half_the_index():
    N, K = 64, 64
    b = rng.integers(0, 256, (N, K // 2)).astype(np.uint8)
    out = tilec.compile(_unpack_halves(N, K), target="cpu", out_idx=[-1])(b)
    ref = np.stack([b & 15, b >> 4], axis=-1).reshape(N, K).astype(np.float16)
    np.testing.assert_array_equal(out, ref)
    tilec.compile(_unpack_halves(N, K), target="sm_90a")


def _block_sums(rows=32, cols=256, threads=128):
    @T.prim_func
    def block_sums(X: T.Tensor((rows, cols), T.float32), Out: T.Tensor((rows, 4), T.float32)):
        with T.Kernel(1, threads=threads) as bx:
            x16 = T.alloc_fragment((rows, cols), T.float32)
            x = T.alloc_fragment((rows, cols), T.float32)
            part = T.alloc_fragment((rows, 4), T.float32)
            T.copy(X, x16)
            T.copy(x16, x)
            T.clear(part)
            for jj in T.serial(cols // 4):
                for i, j in T.Parallel(rows, 4):
                    part[i, j] += x[i, jj * 4 + j] * x[i, jj * 4 + j]
            T.copy(part, Out)

    return block_sums


def test_fragment_read_in_blocks_of_an_outer_serial_loop():
    x = rng.standard_normal((32, 256)).astype(np.float32)
    out = tilec.compile(_block_sums(), target="cpu", out_idx=[-1])(x)
    ref = (x.astype(np.float64) ** 2).reshape(32, 64, 4).sum(1)
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    tilec.compile(_block_sums(), target="sm_90a")


def _combine(num_split=16, threads=128):
    @T.prim_func
    def combine(Lse: T.Tensor((num_split, 128), T.float16), Out: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=threads) as bx:
            lse = T.alloc_fragment((num_split, 128), T.float16)
            lse_max = T.alloc_fragment((128,), T.float32)
            total = T.alloc_fragment((128,), T.float32)
            T.clear(total)
            for k, j in T.Parallel(num_split, 128):
                lse[k, j] = Lse[k, j]
            T.reduce_max(lse, lse_max, dim=0, clear=True)
            for k in T.serial(num_split):
                for j in T.Parallel(128):
                    total[j] += T.exp2(lse[k, j] - lse_max[j])
            T.copy(total, Out)

    return combine


def test_fragment_rows_fixed_by_an_outer_serial_loop():
    lse = rng.standard_normal((16, 128)).astype(np.float16)
    out = tilec.compile(_combine(), target="cpu", out_idx=[-1])(lse)
    l64 = lse.astype(np.float64)
    ref = np.exp2(l64 - l64.max(0)).sum(0)
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    tilec.compile(_combine(), target="sm_90a")


def _var_bounded_loop(from_thread=False):
    @T.prim_func
    def var_loop(Lens: T.Tensor((4,), T.int32), X: T.Tensor((1024, 64), T.float16), O: T.Tensor((4, 64), T.float32)):
        with T.Kernel(4, threads=128) as bz:
            n = T.alloc_var(T.int32)
            tx = T.get_thread_binding()
            s = T.alloc_shared((64, 64), T.float16)
            acc = T.alloc_fragment((64,), T.float32)
            n = Lens[bz]
            if from_thread:
                n = tx // 32
            T.clear(acc)
            for k in T.serial(T.ceildiv(n, 64)):
                T.copy(X[k * 64, 0], s)
                for i, j in T.Parallel(64, 64):
                    acc[j] += s[i, j]
            T.copy(acc, O[bz, :])

    return var_loop


def test_a_var_copied_from_a_uniform_value_gives_a_uniform_loop():
    # n = Lens[bz] is the same in every thread, so the loop over shared memory may hold barriers
    # (upstream's MInference and HISA pool MQA).
    src = tilec.compile(_var_bounded_loop(), target="sm_90a").get_kernel_source()
    loop = src[src.index("for (int k"):]
    assert "__syncthreads();" in loop, src
    lens = np.array([64, 130, 0, 200], np.int32)
    x = rng.standard_normal((1024, 64)).astype(np.float16)
    out = tilec.compile(_var_bounded_loop(), target="cpu", out_idx=[-1])(lens, x)
    for b, n in enumerate(lens):
        rows = -(-int(n) // 64) * 64
        np.testing.assert_allclose(out[b], x[:rows].astype(np.float64).sum(0), rtol=1e-3, atol=1e-3)


def test_a_var_written_from_the_thread_index_stays_divergent():
    with pytest.raises(CompileError, match="trip count depends on the thread index"):
        tilec.compile(_var_bounded_loop(from_thread=True), target="sm_90a")
