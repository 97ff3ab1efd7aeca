"""TileLang's gemm-side surface: clear_accum given as a kernel condition, T.wait_wgmma, and the
register-budget annotations (hints tilec accepts and ignores)."""
import pytest

import tilec
import tilec.language as T
from tilec import CompileError


def _kernel():
    @T.prim_func
    def g(A: T.Tensor((64, 256), T.float16), B: T.Tensor((64, 256), T.float16), C: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((64, 64), T.float16)
            Bs = T.alloc_shared((64, 64), T.float16)
            Cl = T.alloc_fragment((64, 64), T.float32)
            T.annotate_producer_reg_dealloc()
            T.annotate_consumer_reg_alloc(240)
            for k in T.serial(4):
                T.copy(A[0, k * 64], As)
                T.copy(B[0, k * 64], Bs)
                T.wgmma_gemm(As, Bs, Cl, transpose_B=True, clear_accum=(k == 0))
                T.wait_wgmma(0)
            T.copy(Cl, C)

    return g


def test_clear_accum_condition_clears_the_accumulator_when_it_holds():
    text = _kernel().script()
    assert "if k == 0:\n                T.fill(Cl, T.float32(0))\n            T.gemm(As, Bs, Cl, transpose_B=True" in text, text
    assert "clear_accum" not in text


def test_wait_wgmma_waits_on_sm90a():
    src = tilec.compile(_kernel(), target="sm_90a").get_kernel_source()
    assert "tl::wgmma_wait<0>();" in src
    assert "if (k == 0)" in src


def test_wait_wgmma_needs_a_constant_count():
    with pytest.raises(CompileError, match="must be >= 0"):
        @T.prim_func
        def bad(A: T.Tensor((4,), T.float32)):
            with T.Kernel(1, threads=128) as bx:
                T.wait_wgmma(-1)
