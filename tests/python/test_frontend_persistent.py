"""T.Persistent: block `index` of `wave_size` blocks visits every wave_size-th tile of a
row-major tile domain, each tile once."""
import pytest

import tilec
import tilec.language as T
from tilec import CompileError


def _persistent_gemm(sm=3):
    M = N = 256
    K, bm, bn, bk = 128, 128, 128, 32

    @T.prim_func
    def g(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), C: T.Tensor((M, N), T.float16)):
        with T.Kernel(sm, threads=128) as block_id:
            As = T.alloc_shared((bm, bk), T.float16)
            Bs = T.alloc_shared((bk, bn), T.float16)
            Cl = T.alloc_fragment((bm, bn), T.float32)
            for bx, by in T.Persistent([T.ceildiv(M, bm), T.ceildiv(N, bn)], sm, block_id):
                T.clear(Cl)
                for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                    T.copy(A[bx * bm, k * bk], As)
                    T.copy(B[k * bk, by * bn], Bs)
                    T.gemm(As, Bs, Cl)
                T.copy(Cl, C[bx * bm, by * bn])

    return g


def test_persistent_visits_every_tile_once():
    text = _persistent_gemm().script()
    assert "for bx_wave in T.serial(2):" in text  # ceil(4 tiles / 3 blocks)
    assert "bx_tile = bx_wave * 3 + block_id" in text or "bx_tile = bx_wave * 3 + bx" in text, text
    assert "if bx_tile < 2 * 2:" in text or "if bx_tile < 4:" in text
    assert "bx_1 = bx_tile // 2" in text and "by = bx_tile % 2" in text


def test_persistent_gemm_compiles():
    src = tilec.compile(_persistent_gemm(), target="sm_90a").get_kernel_source()
    assert "if (bx_tile < 4)" in src


def test_persistent_needs_one_name_per_dimension():
    with pytest.raises(CompileError, match="binds 1 variable"):
        @T.prim_func
        def bad(A: T.Tensor((4,), T.float32)):
            with T.Kernel(2, threads=128) as b:
                for t in T.Persistent([2, 2], 2, b):
                    pass
